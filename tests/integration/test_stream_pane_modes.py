"""The navigator in a real 80x24 terminal: its keys, the stream pane, the modes (issue 31.2-31.4).

Its 26-column pane shows every key in the footer and the whole new-task label.
The person presses ``l`` in the navigator: the read-only stream opens under the
agent. It is a pane role of its own, so the view stays consistent (no
placement recovery, one main); ``m`` then hides the navigator with the stream
still open; ``prefix + S`` brings the navigator back *with the keyboard*, so the
next key (``l`` again) reaches the navigator and closes the stream, and never
the agent.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from core.broker.inbox_pane import STREAM_TITLE
from core.context.requests import new_request_id
from core.model.enums import Provider, ViewMode
from core.reconcile.reconcile import reconcile
from core.tmux.panes import PaneRole
from tests.integration.journey_env import tmux
from tests.integration.test_terminal_sizes import Terminal, _prefix_key, _shows_navigator
from tests.integration.transitions_env import make_engine, problems, screen
from tests.waiting import retry_until

pytestmark = pytest.mark.tmux


def _panes(socket: Path, window: str) -> dict[str, tuple[str, bool]]:
    """pane id -> (@sb_role, active) of every pane in the view window."""
    out = {}
    for line in tmux(socket, "list-panes", "-t", window, "-F",
                     "#{pane_id} #{@sb_role} #{pane_active}").splitlines():
        pane, role, active = line.split(" ")
        out[pane] = (role, active == "1")
    return out


def _stream(socket: Path, window: str) -> str | None:
    return next((p for p, (role, _) in _panes(socket, window).items()
                 if role == PaneRole.STREAM), None)


def test_stream_pane_then_direct_mode_then_prefix_s(tmp_path: Path, tmux_socket: Path) -> None:
    engine = make_engine(tmp_path, tmux_socket, quiet=False)
    engine.stage.navigator_command = None  # the real `switchboard ui`
    route = engine.project_enter(new_request_id(), "alpha")
    view_id = route.view_id
    engine.frame_start(new_request_id(), route.frame_id, Provider.CLAUDE)
    layout = engine.stage.snapshot().view(view_id)
    assert layout is not None and layout.navigator is not None and layout.main is not None
    nav, agent, window = layout.navigator.pane_id, layout.main.pane_id, layout.window_id
    terminal = Terminal(tmux_socket, engine.config.tmux.view_session, 80, 24)
    try:
        assert retry_until(lambda: _shows_navigator(tmux_socket, nav, 40), 30), \
            screen(tmux_socket, nav)
        assert _panes(tmux_socket, window)[nav][1]  # the keyboard is in the navigator
        # The footer shows every key in the 26-column navigator (31.4, 40.4): with 21
        # keys, their letters, and help and the palette with their words.
        keys = ("n", "s", "b", "m", "p", "t", "l", "v", "u", "y", "?", "Help")
        # (drawn by the app itself, in its alternate screen: a woken navigator's pane
        # first shows the screen it saved, and a key typed before the app reads its
        # terminal is lost)
        assert retry_until(lambda: set(keys) <= set(screen(tmux_socket, nav).split())
                           and tmux(tmux_socket, "display-message", "-p", "-t", nav,
                                    "#{pane_dead} #{alternate_on}").split() == ["0", "1"],
                           30), screen(tmux_socket, nav)
        # the new-task dialog says how the brief is pushed. The key is pressed once, as
        # soon as the footer shows it: often before the app's first registry read is
        # back, and then it waits for that read instead of being refused.
        terminal.type(b"p")
        assert retry_until(lambda: "(ctrl+s pushes)" in screen(tmux_socket, nav), 30), \
            screen(tmux_socket, nav)
        terminal.type(b"\x1b")
        assert retry_until(lambda: "? Help" in screen(tmux_socket, nav), 30)

        terminal.type(b"l")
        assert retry_until(lambda: _stream(tmux_socket, window) is not None, 30), \
            screen(tmux_socket, nav)
        stream = _stream(tmux_socket, window)
        assert stream is not None
        assert _panes(tmux_socket, window)[nav][1]  # still in the navigator
        # It says what it is (40.6): its title and its first line.
        assert tmux(tmux_socket, "display-message", "-p", "-t", stream,
                    "#{pane_title}").strip() == STREAM_TITLE
        assert retry_until(lambda: STREAM_TITLE in screen(tmux_socket, stream), 30), \
            screen(tmux_socket, stream)
        # It never takes the keyboard: prefix + arrow from the agent down into it, or a
        # click on it, leaves the keyboard where it was, and nothing typed reaches it.
        prefix = _prefix_key(tmux_socket)
        terminal.type(prefix + b"\x1b[C")  # prefix + Right: the agent
        assert retry_until(lambda: _panes(tmux_socket, window)[agent][1], 10)
        for keys in (b"\x1b[B", b"\x1b[B"):  # prefix + Down, at human speed and again
            terminal.type(prefix + keys)
            assert not retry_until(lambda: _panes(tmux_socket, window)[stream][1], 1,
                                   interval=0.02)
            assert _panes(tmux_socket, window)[agent][1]
        tmux(tmux_socket, "select-pane", "-t", stream)  # what a click runs
        assert _panes(tmux_socket, window)[agent][1]
        tmux(tmux_socket, "send-keys", "-t", stream, "-l", "/exit")
        tmux(tmux_socket, "send-keys", "-t", stream, "Enter")
        assert tmux(tmux_socket, "display-message", "-p", "-t", stream,
                    "#{pane_input_off} #{pane_dead}").split() == ["1", "0"]
        assert "/exit" not in screen(tmux_socket, stream)
        terminal.type(prefix + b"\x1b[D")  # prefix + Left: back to the navigator
        assert retry_until(lambda: _panes(tmux_socket, window)[nav][1], 10)
        reconcile(engine)
        assert problems(engine, view_id) == []
        assert engine.conn.execute("SELECT kind FROM recoveries WHERE state = 'open'"
                                   ).fetchall() == []

        # A message to the person shows its sender by name in the stream.
        project, title = engine.conn.execute("SELECT project_id, title FROM frames"
                                             " WHERE frame_id = ?", (route.frame_id,)).fetchone()
        sent = subprocess.run(
            [sys.executable, "-m", "navigator.cli", "message", "send", "--fleet",
             f"project:{project}", "--from", title, "--to", "person", "tests pass"],
            env={**_env(tmp_path)}, capture_output=True, text=True, timeout=60)
        assert sent.returncode == 0, sent.stderr
        assert retry_until(lambda: f"from {title}" in screen(tmux_socket, stream), 30), \
            screen(tmux_socket, stream)

        terminal.type(b"m")  # direct mode, the stream still open
        assert retry_until(lambda: engine.stage.snapshot().view(view_id).mode
                           is ViewMode.DIRECT, 30), screen(tmux_socket, nav)
        assert set(_panes(tmux_socket, window)) == {agent, stream}
        # the registry's commit can land just after tmux shows the mode
        assert retry_until(lambda: engine.conn.execute(
            "SELECT mode FROM user_views").fetchone()[0] == "direct", 10)
        reconcile(engine)
        assert problems(engine, view_id) == []

        terminal.type(_prefix_key(tmux_socket) + b"S")  # back to the navigator
        assert retry_until(lambda: nav in _panes(tmux_socket, window), 30)
        assert retry_until(lambda: _panes(tmux_socket, window)[nav][1], 10)
        height = tmux(tmux_socket, "display-message", "-p", "-t", nav,
                      "#{pane_height} #{window_height}").split()
        assert height[0] == height[1]  # the navigator spans the window, beside both
        before = screen(tmux_socket, agent).rstrip()
        terminal.type(b"l")  # reaches the navigator: the stream closes
        assert retry_until(lambda: _stream(tmux_socket, window) is None, 30), \
            screen(tmux_socket, nav)
        assert screen(tmux_socket, agent).rstrip() == before  # no "l" typed into the agent
        reconcile(engine)
        assert problems(engine, view_id) == []
        assert engine.conn.execute("SELECT kind FROM recoveries WHERE state = 'open'"
                                   ).fetchall() == []
    finally:
        terminal.close()


def _env(root: Path) -> dict[str, str]:
    import os

    env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}
    env.update(SWITCHBOARD_HOME=str(root), SWITCHBOARD_CONFIG=str(root / "config.toml"))
    return env
