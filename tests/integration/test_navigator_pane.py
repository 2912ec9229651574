"""The navigator as it really runs: inside the view's left pane on a private tmux server.

The stage starts ``switchboard ui`` in the navigator pane when a project is
entered; this test types keys into that pane with ``send-keys`` and checks
both the registry (the request landed) and the window layout (the stage moved
the navigator pane out of and back into the view).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from core.context.requests import new_request_id
from tests.integration.journey_env import make_live_engine, tmux
from tests.waiting import retry_until


def _view(engine) -> dict:  # noqa: ANN001 - core.engine.engine.Engine
    return dict(engine.conn.execute("SELECT * FROM user_views").fetchone())


def _window_panes(socket: Path, window_id: str) -> list[tuple[str, int]]:
    out = tmux(socket, "list-panes", "-t", window_id, "-F", "#{pane_id} #{pane_width}")
    return [(pane, int(width)) for pane, width in (line.split() for line in out.splitlines())]


def _screen(socket: Path, pane: str) -> str:
    return tmux(socket, "capture-pane", "-p", "-t", pane)


@pytest.mark.tmux
def test_keys_typed_into_the_navigator_pane(tmp_path: Path, tmux_socket: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SWITCHBOARD_HOME", str(tmp_path))
    monkeypatch.setenv("SWITCHBOARD_CONFIG", str(tmp_path / "config.toml"))
    engine = make_live_engine(tmp_path, tmux_socket)
    engine.project_enter(new_request_id(), "alpha")
    view = _view(engine)
    nav, window = view["navigator_pane_id"], view["tmux_window_id"]
    assert nav and window
    width = engine.config.tmux.navigator_width

    # the app painted its panels in the 40-column sidebar
    assert retry_until(lambda: "Projects" in _screen(tmux_socket, nav)
                       and "alpha" in _screen(tmux_socket, nav), 20), _screen(tmux_socket, nav)
    assert (nav, width) in _window_panes(tmux_socket, window)

    # ? opens the help, escape closes it: keys reach the app
    tmux(tmux_socket, "send-keys", "-t", nav, "?")
    assert retry_until(lambda: "Badges" in _screen(tmux_socket, nav) or
                       "Keys" in _screen(tmux_socket, nav), 15.0), _screen(tmux_socket, nav)
    tmux(tmux_socket, "send-keys", "-t", nav, "Escape")
    assert retry_until(lambda: "Keys" not in _screen(tmux_socket, nav), 15.0)

    # m: direct mode; the stage parks the navigator pane, main fills the window
    tmux(tmux_socket, "send-keys", "-t", nav, "m")
    assert retry_until(lambda: _view(engine)["mode"] == "direct", 15.0), _screen(tmux_socket, nav)
    assert retry_until(lambda: nav not in dict(_window_panes(tmux_socket, window)), 15.0), \
        tmux(tmux_socket, "list-panes", "-a", "-F", "#{session_name} #{window_id} #{pane_id}")
    assert len(_window_panes(tmux_socket, window)) == 1
    # parked, not killed: the navigator process lives on outside the view
    assert nav in tmux(tmux_socket, "list-panes", "-a", "-F", "#{pane_id}").split()

    # the parked navigator still runs but is fenced (select-pane -d) like every pane in
    # the holding session, so keys cannot reach it; the same mode request brings it back
    assert tmux(tmux_socket, "display-message", "-p", "-t", nav,
                "#{pane_input_off}").strip() == "1"
    engine.view_mode(new_request_id(), view["view_id"])
    assert retry_until(lambda: _view(engine)["mode"] == "navigator",
                       15.0), _screen(tmux_socket, nav)
    assert retry_until(lambda: nav in dict(_window_panes(tmux_socket, window)), 15.0), \
        tmux(tmux_socket, "list-panes", "-a", "-F", "#{session_name} #{window_id} #{pane_id}")
    panes = _window_panes(tmux_socket, window)
    assert len(panes) == 2 and (nav, width) in panes
    left = tmux(tmux_socket, "display-message", "-p", "-t", nav, "#{pane_left}").strip()
    assert left == "0"

    # after a start and two moves through the stage, the navigator process has still
    # not mapped OpenSSL (it never speaks TLS; the libraries were ~4.5 MB of its RSS)
    pid = int(tmux(tmux_socket, "display-message", "-p", "-t", nav, "#{pane_pid}").strip())
    argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    assert b"navigator.cli" in argv and b"-OO" in argv  # no docstrings: ~1.7 MB
    maps = Path(f"/proc/{pid}/maps").read_text()
    libraries = {line.split()[-1] for line in maps.splitlines() if ".so" in line}
    assert not {lib for lib in libraries if "libcrypto" in lib or "libssl" in lib}, libraries
    # one malloc arena for all its threads (core.tmux.navigator_pane.MALLOC_ARENAS)
    assert b"MALLOC_ARENA_MAX=1" in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
