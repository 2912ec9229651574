"""The view window as the stage builds it, on a private tmux server.

The navigator pane is started for its own view (``ui --view``, and
``SWITCHBOARD_VIEW_ID`` in its environment); the view session is large before
any client attaches; and ``prefix + S`` brings a parked navigator back, since
in direct mode the navigator itself is fenced and cannot take keys.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from core.context.requests import new_request_id
from core.model.enums import ViewMode
from core.runtime.stage import ENV_VIEW_ID, NAVIGATOR_KEY
from core.tmux.topology import VIEW_SIZE, bound_keys
from storage.operations import views as views_ops
from tests.integration.journey_env import tmux
from tests.integration.transitions_env import make_engine, screen
from tests.waiting import retry_until

pytestmark = pytest.mark.tmux


def _proc(pid: str, name: str) -> list[str]:
    return Path(f"/proc/{pid}/{name}").read_bytes().decode().split("\0")


def _layout(engine, view_id: str):  # noqa: ANN001, ANN202
    layout = engine.stage.snapshot().view(view_id)
    assert layout is not None
    return layout


def _mode(engine, view_id: str) -> tuple[str, str]:  # noqa: ANN001
    """(registry mode, mode tmux shows)."""
    return views_ops.get_view(engine.conn, view_id)["mode"], _layout(engine, view_id).mode.value


def test_navigator_pane_runs_ui_for_its_view_in_a_large_detached_session(
        tmp_path: Path, tmux_socket: Path) -> None:
    engine = make_engine(tmp_path, tmux_socket)
    engine.stage.navigator_command = None  # the real `switchboard ui`
    route = engine.project_enter(new_request_id(), "alpha")
    view = views_ops.get_view(engine.conn, route.view_id)
    nav = view["navigator_pane_id"]
    pid = tmux(tmux_socket, "display-message", "-p", "-t", nav, "#{pane_pid}").strip()

    # tmux forks, then execs: until the exec the child still shows tmux's own argv.
    assert retry_until(lambda: "navigator.cli" in _proc(pid, "cmdline"), 5.0,
                       interval=0.02), _proc(pid, "cmdline")
    argv = _proc(pid, "cmdline")
    assert argv[argv.index("ui"):argv.index("ui") + 3] == ["ui", "--view", route.view_id]
    environ = _proc(pid, "environ")
    assert f"{ENV_VIEW_ID}={route.view_id}" in environ
    assert f"SWITCHBOARD_HOME={engine.home.root}" in environ
    # The app opens this home's registry and paints its panels.
    assert retry_until(lambda: "alpha" in screen(tmux_socket, nav), 30,
                       interval=0.02), screen(tmux_socket, nav)

    size = tmux(tmux_socket, "display-message", "-p", "-t", view["tmux_window_id"],
                "#{window_width}x#{window_height}").strip()
    assert size == f"{VIEW_SIZE[0]}x{VIEW_SIZE[1]}"  # not tmux's detached 80x24
    layout = _layout(engine, route.view_id)
    assert layout.navigator is not None and layout.navigator.width == \
        engine.config.tmux.navigator_width


def _attach_client(socket: Path, outer: Path, session: str) -> None:
    """A real client of the Switchboard server, in a pane of a second private server."""
    env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}
    subprocess.run(["tmux", "-f", "/dev/null", "-S", str(outer), "new-session", "-d",
                    "-x", "160", "-y", "45", "-s", "terminal",
                    # Without TMUX, as `switchboard open` attaches: tmux refuses a client
                    # whose tty was a (now dead, kept) pane's of this server as "nested".
                    f"env -u TMUX tmux -S {socket} attach-session -t ={session}"],
                   check=True, env=env)
    assert retry_until(lambda: "attached" in tmux(socket, "list-clients"), 5.0, interval=0.02)


def test_prefix_s_brings_the_navigator_back_from_direct_mode(
        tmp_path: Path, tmux_socket: Path) -> None:
    engine = make_engine(tmp_path, tmux_socket)
    route = engine.project_enter(new_request_id(), "alpha")
    view_id = route.view_id
    keys = bound_keys(tmux(tmux_socket, "list-keys", "-T", "prefix").splitlines(), "prefix")
    assert "navigator.cli view mode" in keys[NAVIGATOR_KEY]

    # 1. A person presses prefix + S in the direct-mode view window.
    engine.view_mode(new_request_id(), view_id, ViewMode.DIRECT)
    assert _mode(engine, view_id) == ("direct", "direct")
    outer = tmux_socket.parent / "outer.sock"
    try:
        _attach_client(tmux_socket, outer, engine.config.tmux.view_session)
        prefix = tmux(tmux_socket, "show-options", "-gv", "prefix").strip()
        tmux(outer, "send-keys", "-t", "terminal", prefix, NAVIGATOR_KEY)
        assert retry_until(lambda: _mode(engine, view_id) == ("navigator", "navigator"), 20,
                           interval=0.02), \
            _mode(engine, view_id)
    finally:
        subprocess.run(["tmux", "-S", str(outer), "kill-server"], capture_output=True)
    layout = _layout(engine, view_id)
    assert layout.navigator is not None and not layout.navigator.input_off

    # 2. The exact bound command, run by the server in the view's main pane.
    engine.view_mode(new_request_id(), view_id, ViewMode.DIRECT)
    assert _mode(engine, view_id) == ("direct", "direct")
    main = _layout(engine, view_id).main
    assert main is not None
    done = subprocess.run(["tmux", "-S", str(tmux_socket), "run-shell", "-t", main.pane_id,
                           engine.stage.navigator_key().shell_command],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr + done.stdout
    assert _mode(engine, view_id) == ("navigator", "navigator")
    row = engine.conn.execute("SELECT kind, state FROM view_transitions WHERE view_id = ?"
                              " ORDER BY created_at DESC, rowid DESC LIMIT 1",
                              (view_id,)).fetchone()
    assert tuple(row) == ("mode", "completed")

    # Outside a view window the key does nothing (and reports nothing).
    scratch = tmux(tmux_socket, "new-window", "-d", "-P", "-F", "#{pane_id}").strip()
    done = subprocess.run(["tmux", "-S", str(tmux_socket), "run-shell", "-t", scratch,
                           engine.stage.navigator_key().shell_command],
                          capture_output=True, text=True)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_a_persons_own_prefix_s_binding_is_kept(tmp_path: Path, tmux_socket: Path) -> None:
    engine = make_engine(tmp_path, tmux_socket)
    engine.stage.ensure_server()
    tmux(tmux_socket, "bind-key", "-T", "prefix", NAVIGATOR_KEY, "display-message", "mine")
    engine.project_enter(new_request_id(), "alpha")
    keys = bound_keys(tmux(tmux_socket, "list-keys", "-T", "prefix").splitlines(), "prefix")
    assert "display-message mine" in keys[NAVIGATOR_KEY]
    assert "navigator.cli" not in keys[NAVIGATOR_KEY]
