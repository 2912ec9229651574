"""Issue 40.3 and 40.5 with a real tmux client at the sizes people use.

A real ``tmux attach`` in a pseudo-terminal of each size (``Terminal``), the
real ``switchboard ui`` in the view's navigator pane, keys typed into that
terminal at human speed (one at a time, waiting for the screen) and fast (a
whole string in one write, as a paste or a fast typist's terminal sends it).
The pane-level layout rules are tested in tests/navigator/test_screen_fit.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from core.engine.engine import Engine
from tests.integration.journey_env import tmux
from tests.integration.test_terminal_sizes import Terminal, _check_size, _navigator, _start
from tests.integration.transitions_env import screen
from tests.waiting import retry_until

pytestmark = pytest.mark.tmux


def _attached(tmp_path: Path, socket: Path, columns: int, rows: int
              ) -> tuple[Engine, str, str, Terminal]:
    engine, view_id = _start(tmp_path, socket)
    pid = _navigator(engine, view_id).pane_pid
    terminal = Terminal(socket, engine.config.tmux.view_session, columns, rows)
    _check_size(engine, view_id, socket, columns, rows, pid)
    return engine, view_id, _navigator(engine, view_id).pane_id, terminal


def _lines(socket: Path, pane: str) -> list[str]:
    return tmux(socket, "capture-pane", "-p", "-t", pane).splitlines()


def _ready(socket: Path, pane: str) -> bool:
    """The app drew its footer (it reads keys from then on)."""
    return any("? Help" in line for line in _lines(socket, pane))


def _tree_first(lines: list[str]) -> bool:
    """The Projects box holds the project's rows, closed right below them, and the
    Recoveries and Inbox panels come after it, whole."""
    try:
        top = next(i for i, line in enumerate(lines) if "─ Projects" in line)
        bottom = next(i for i in range(top + 1, len(lines)) if lines[i].startswith("╰"))
        recoveries = next(i for i, line in enumerate(lines) if "─ Recoveries" in line)
    except StopIteration:
        return False
    inside = lines[top + 1:bottom]
    return (lines[0].strip().startswith("alpha") and any("alpha" in line for line in inside)
            and recoveries == bottom + 1 and "no recoveries" in lines[recoveries + 1])


@pytest.mark.parametrize("columns,rows", [(90, 30), (100, 30), (100, 34)])
def test_the_tree_has_its_rows_in_common_terminals(tmp_path: Path, tmux_socket: Path,
                                                   columns: int, rows: int) -> None:
    """The navigator starts in the 40x50 holding pane; the attaching client squeezes
    it to one column and widens it again (tmux's resize hooks), and the stacked
    sidebar is shared out after the layout at the real size, not with the heights
    the footer had in one column (it hid Recoveries and Inbox)."""
    engine, view_id, nav, terminal = _attached(tmp_path, tmux_socket, columns, rows)
    try:
        assert retry_until(lambda: _tree_first(_lines(tmux_socket, nav)), 30), \
            screen(tmux_socket, nav)
    finally:
        terminal.close()


@pytest.mark.parametrize("speed", ["human", "fast"])
def test_new_task_dialog_fits_a_60x20_terminal(tmp_path: Path, tmux_socket: Path,
                                               speed: str) -> None:
    """The 19x19 navigator of a 60x20 terminal: p's buttons on screen, and Tab typed
    right after the title moves to the brief (issue 40.5) at either speed."""
    engine, view_id, nav, terminal = _attached(tmp_path, tmux_socket, 60, 20)
    try:
        assert retry_until(lambda: _ready(tmux_socket, nav), 30), screen(tmux_socket, nav)
        assert any("^p" in line for line in _lines(tmux_socket, nav))
        terminal.type(b"p")
        assert retry_until(lambda: any("Push" in line for line in _lines(tmux_socket, nav))
                           and any("Cancel" in line for line in _lines(tmux_socket, nav)),
                           30), screen(tmux_socket, nav)
        if speed == "fast":
            terminal.type(b"Fast title\tfast brief")
        else:
            for chunk in (b"Fast", b" ", b"title", b"\t", b"fast", b" brief"):
                terminal.type(chunk)
                retry_until(lambda: False, 0.1)  # a person's pace
        assert retry_until(lambda: any("fast brief" in line
                                       for line in _lines(tmux_socket, nav)), 30), \
            screen(tmux_socket, nav)
        lines = _lines(tmux_socket, nav)
        title_row = next(line for line in lines if "Fast title" in line)
        assert "brief" not in title_row, lines  # the brief went to its own field
        terminal.type(b"\x1b")
    finally:
        terminal.close()


def test_help_reads_in_a_40x12_terminal(tmp_path: Path, tmux_socket: Path) -> None:
    engine, view_id, nav, terminal = _attached(tmp_path, tmux_socket, 40, 12)
    try:
        assert retry_until(lambda: _ready(tmux_socket, nav), 30), screen(tmux_socket, nav)
        assert any("^p" in line for line in _lines(tmux_socket, nav)), \
            screen(tmux_socket, nav)
        terminal.type(b"?")
        assert retry_until(lambda: any(line.strip() == "enter"
                                       for line in _lines(tmux_socket, nav)), 30), \
            screen(tmux_socket, nav)
        lines = _lines(tmux_socket, nav)
        after = lines[[line.strip() for line in lines].index("enter") + 1]
        assert after.strip().startswith("focus the"), lines
        terminal.type(b"\x1b")
    finally:
        terminal.close()
