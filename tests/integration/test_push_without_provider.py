"""``p`` in a real 80x24 terminal when the provider is not installed (issue 31.6).

The dialog's push used to commit the child frame, its placement and the
transition, then fail the child's launch: the person read a refusal while a
stopped frame and a placement recovery stayed behind. The push is now refused
before anything is written, with the launcher's own provider check.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from core.context.requests import new_request_id
from tests.integration.test_terminal_sizes import Terminal, _shows_navigator
from tests.integration.transitions_env import make_engine, problems, screen
from tests.waiting import retry_until

pytestmark = pytest.mark.tmux

MISSING = "/nonexistent/switchboard-test-cli"


def test_p_without_an_installed_provider_creates_nothing(tmp_path: Path,
                                                         tmux_socket: Path) -> None:
    engine = make_engine(tmp_path, tmux_socket, provider_command=lambda _p: (MISSING,))
    engine.stage.navigator_command = None  # the real `switchboard ui`
    route = engine.project_enter(new_request_id(), "alpha")
    layout = engine.stage.snapshot().view(route.view_id)
    assert layout is not None and layout.navigator is not None
    nav = layout.navigator.pane_id
    terminal = Terminal(tmux_socket, engine.config.tmux.view_session, 80, 24)
    try:
        assert retry_until(lambda: _shows_navigator(tmux_socket, nav, 40), 30), \
            screen(tmux_socket, nav)
        # state read: the project's frame is in the tree (the 26-column footer shows
        # the keys' letters, `? Help` keeps its words)
        assert retry_until(lambda: "? Help" in screen(tmux_socket, nav)
                           and "alpha" in screen(tmux_socket, nav), 30), screen(tmux_socket, nav)
        # Under a loaded machine the tree's cursor may reach the active frame only after
        # the first key (p on no frame is refused with a toast): press again then.
        for _ in range(3):
            terminal.type(b"p")
            if retry_until(lambda: "(ctrl+s pushes)" in screen(tmux_socket, nav), 10):
                break
        assert "(ctrl+s pushes)" in screen(tmux_socket, nav), screen(tmux_socket, nav)
        shown = lambda: " ".join(screen(tmux_socket, nav).split())  # noqa: E731
        # a field at a time, as a person types: a burst would reach the app as a paste
        terminal.type(b"Add docs")
        assert retry_until(lambda: "Add docs" in shown(), 30), shown()
        terminal.type(b"\r")  # to the brief
        time.sleep(0.3)
        terminal.type(b"Write it.")
        assert retry_until(lambda: "Write it." in shown(), 30), shown()
        terminal.type(b"\x13")  # ctrl+s
        assert retry_until(lambda: "no task was created" in shown(), 30), shown()
        assert "(ctrl+s pushes)" not in shown()  # the dialog closed
    finally:
        terminal.close()
    conn = engine.conn
    assert conn.execute("SELECT COUNT(*) FROM frames WHERE role = 'task'").fetchone()[0] == 0
    assert conn.execute("SELECT COUNT(*) FROM view_transitions").fetchone()[0] == 0
    assert conn.execute("SELECT kind FROM recoveries").fetchall() == []
    assert problems(engine, route.view_id) == []
