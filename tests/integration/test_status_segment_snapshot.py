"""The attention segment as a person's tmux draws it, at 80x24 and 40x40.

A tmux client cannot be screenshotted by Textual's snapshot tool (the status line is
tmux's own), so the client is attached inside a pane of a second, private tmux
server of exactly that size; that outer pane's text is what the person's terminal
shows, status line included. Its last line is compared with a stored snapshot, the
clock masked. ``SB_UPDATE_SNAPSHOTS=1`` rewrites the stored files after a deliberate
change (look at the diff).
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.integration.journey_env import tmux
from tests.integration.test_attention import live  # noqa: F401 - the real agent, ready
from tests.waiting import retry_until

pytestmark = pytest.mark.tmux

SNAPSHOTS = Path(__file__).parent / "snapshots"
CLOCK = re.compile(r"\d\d:\d\d \d\d-[A-Z][a-z]{2}-\d\d")
TITLE = re.compile(r'"[^"]*"')
"""tmux's default status-right: the pane title (the host name by default) and clock."""


def _drawn(outer: Path, pane: str) -> list[str]:
    return tmux(outer, "capture-pane", "-p", "-t", pane).splitlines()


def _status_as_drawn(inner: Path, window: str, tmp_path: Path, cols: int, rows: int) -> str:
    outer = tmp_path / f"outer-{cols}x{rows}.sock"
    env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}
    env["TERM"] = "xterm-256color"
    # Without TMUX, as `switchboard open` attaches (tmux calls a client nested when its
    # tty was one of the inner server's dead, kept panes).
    attach = f"env -u TMUX TERM=xterm-256color tmux -S {inner} attach -t {window}"
    subprocess.run(["tmux", "-S", str(outer), "-f", "/dev/null", "new-session", "-d",
                    "-x", str(cols), "-y", str(rows), attach], env=env, check=True)
    try:
        tmux(outer, "set-option", "-g", "status", "off")  # only the inner client shows
        pane = tmux(outer, "list-panes", "-F", "#{pane_id}").split()[0]
        # The window takes the new client's size a moment after the attach; drawn
        # before that, the status line also shows the client's offset ("[0,0]").
        fitted = f"{cols} {rows - 1}"  # the inner client's own status line takes a row
        assert retry_until(lambda: "ready" in "\n".join(_drawn(outer, pane)) and tmux(
            inner, "display-message", "-p", "-t", window,
            "#{window_width} #{window_height}").strip() == fitted, 30), \
            "\n".join(_drawn(outer, pane))
        lines = _drawn(outer, pane)
        while lines and not lines[-1].strip():
            lines.pop()
        return TITLE.sub('"<title>"', CLOCK.sub("HH:MM DD-Mon-YY", lines[-1].rstrip()))
    finally:
        subprocess.run(["tmux", "-S", str(outer), "kill-server"], capture_output=True)


@pytest.mark.parametrize("size", [(80, 24), (40, 40)], ids=["80x24", "40x40"])
def test_the_status_segment_as_a_person_sees_it(live, tmp_path: Path,  # noqa: F811
                                                tmux_socket: Path, size: tuple[int, int]) -> None:
    engine, _route, _client = live  # the newest client sets the window's size
    assert retry_until(lambda: tmux(tmux_socket, "show-options", "-gv", "status-right")
                       .startswith("#{@sb_attention}"), 20)
    window = engine.conn.execute("SELECT tmux_window_id FROM user_views").fetchone()[0]
    drawn = _status_as_drawn(tmux_socket, window, tmp_path, *size)
    assert "✓ 1 ready" in drawn or size[0] < 60, drawn  # a narrow line may cut it
    stored = SNAPSHOTS / f"status_segment_{size[0]}x{size[1]}.txt"
    if os.environ.get("SB_UPDATE_SNAPSHOTS") == "1":
        stored.parent.mkdir(exist_ok=True)
        stored.write_text(drawn + "\n", encoding="utf-8")
    assert stored.exists(), f"no stored snapshot {stored}: run with SB_UPDATE_SNAPSHOTS=1"
    assert drawn + "\n" == stored.read_text(encoding="utf-8")
