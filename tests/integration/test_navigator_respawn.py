"""A navigator pane that crashed or was quit comes back, in place.

Navigator panes keep remain-on-exit, so a crash or ctrl+q leaves a dead pane.
`switchboard open`, `reconcile` and the way back to navigator mode (`prefix +
S`, `view mode VIEW navigator`) respawn exactly that pane (identity-guarded,
gated on its tags and on it being dead) with the navigator's argv; a live
navigator is never restarted. A navigator pane that is gone altogether is
split anew on the way back to navigator mode.
"""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest

from core.context.requests import new_request_id
from core.engine.engine import Engine
from core.model.enums import ViewMode
from core.reconcile.reconcile import reconcile
from core.tmux import PaneSnapshot
from storage.operations import views as views_ops
from tests.integration.journey_env import tmux
from tests.integration.transitions_env import (
    NAVIGATOR_STAND_IN,
    make_engine,
    problems,
    run_cli,
    screen,
)
from tests.waiting import retry_until

pytestmark = [pytest.mark.tmux, pytest.mark.usefixtures("no_server_pass")]


def _navigator(engine: Engine, view_id: str) -> PaneSnapshot:
    snap = engine.stage.snapshot()
    assert snap is not None
    layout = snap.view(view_id)
    assert layout is not None and layout.navigator is not None
    return layout.navigator


def _crash(engine: Engine, view_id: str) -> PaneSnapshot:
    """Kill the navigator's program; the pane stays, dead. Returns the dead pane."""
    nav = _navigator(engine, view_id)
    assert nav.pane_pid is not None and not nav.dead
    os.kill(nav.pane_pid, signal.SIGKILL)
    assert retry_until(lambda: _navigator(engine, view_id).dead, 10, interval=0.02)
    return _navigator(engine, view_id)


def _argv(pid: int | None) -> list[str]:
    return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")




def test_switchboard_open_brings_back_a_quit_navigator(tmp_path: Path,
                                                       tmux_socket: Path) -> None:
    engine = make_engine(tmp_path, tmux_socket)
    engine.stage.navigator_command = None  # the real `switchboard ui`
    route = engine.project_enter(new_request_id(), "alpha")
    nav = views_ops.get_view(engine.conn, route.view_id)["navigator_pane_id"]
    assert retry_until(lambda: "alpha" in screen(tmux_socket, nav), 30,
                       interval=0.02), screen(tmux_socket, nav)
    first = _navigator(engine, route.view_id)
    tmux(tmux_socket, "send-keys", "-t", nav, "C-q")  # the person quits the navigator
    assert retry_until(lambda: _navigator(engine, route.view_id).dead, 20, interval=0.02)

    done = run_cli(tmp_path, "open", "alpha", "--no-attach")
    assert done.returncode == 0, done.stderr
    again = _navigator(engine, route.view_id)
    assert again.pane_id == nav and not again.dead and again.pane_pid != first.pane_pid
    assert (again.window_id, again.left, again.input_off) == (first.window_id, 0, False)
    assert retry_until(lambda: "navigator.cli" in _argv(again.pane_pid), 10, interval=0.02)
    argv = _argv(again.pane_pid)
    assert argv[argv.index("ui"):argv.index("ui") + 3] == ["ui", "--view", route.view_id]
    environ = Path(f"/proc/{again.pane_pid}/environ").read_bytes().split(b"\0")
    assert f"SWITCHBOARD_VIEW_ID={route.view_id}".encode() in environ
    assert retry_until(lambda: "alpha" in screen(tmux_socket, nav), 30,
                       interval=0.02), screen(tmux_socket, nav)
    assert problems(engine, route.view_id) == []


def test_reconcile_respawns_dead_navigators_in_place(tmp_path: Path, tmux_socket: Path) -> None:
    engine = make_engine(tmp_path, tmux_socket)
    alpha = engine.project_enter(new_request_id(), "alpha")
    beta = engine.project_enter(new_request_id(), "beta")
    engine.view_mode(new_request_id(), beta.view_id, ViewMode.DIRECT)  # beta's is parked
    live = _navigator(engine, alpha.view_id)
    assert reconcile(engine).navigators_respawned == 0
    assert _navigator(engine, alpha.view_id).pane_pid == live.pane_pid  # never restarted

    dead = {view: _crash(engine, view) for view in (alpha.view_id, beta.view_id)}
    report = reconcile(engine)
    assert report.navigators_respawned == 2 and report.recoveries_opened == 0
    for view_id, pane in dead.items():
        again = _navigator(engine, view_id)
        assert again.pane_id == pane.pane_id and not again.dead
        assert again.window_id == pane.window_id and again.parked is pane.parked
        # tmux forks, then execs: until the exec the child still shows tmux's argv.
        assert retry_until(lambda pid=again.pane_pid: _argv(pid)[:len(NAVIGATOR_STAND_IN)] ==
                           NAVIGATOR_STAND_IN, 10, interval=0.02)
    parked = _navigator(engine, beta.view_id)
    assert parked.parked and parked.input_off  # respawned where it was: parked, fenced
    assert reconcile(engine).navigators_respawned == 0
    for view_id in (alpha.view_id, beta.view_id):
        assert problems(engine, view_id) == []
    assert views_ops.get_view(engine.conn, beta.view_id)["mode"] == "direct"


def test_back_to_navigator_mode_respawns_a_dead_parked_navigator(
        tmp_path: Path, tmux_socket: Path) -> None:
    engine = make_engine(tmp_path, tmux_socket)
    route = engine.project_enter(new_request_id(), "alpha")
    engine.view_mode(new_request_id(), route.view_id, ViewMode.DIRECT)
    dead = _crash(engine, route.view_id)
    assert dead.parked

    before = engine.stage.invocations
    result = engine.view_mode(new_request_id(), route.view_id, ViewMode.NAVIGATOR)
    assert engine.stage.invocations - before <= 3
    assert result.mode == "navigator"
    back = _navigator(engine, route.view_id)
    assert back.pane_id == dead.pane_id and not back.dead and not back.parked
    assert not back.input_off and back.width == engine.config.tmux.navigator_width
    row = engine.conn.execute("SELECT kind, state FROM view_transitions ORDER BY created_at"
                              " DESC, rowid DESC LIMIT 1").fetchone()
    assert tuple(row) == ("mode", "completed")
    assert problems(engine, route.view_id) == []


def test_prefix_s_brings_back_a_dead_parked_navigator(tmp_path: Path,
                                                      tmux_socket: Path) -> None:
    engine = make_engine(tmp_path, tmux_socket)
    route = engine.project_enter(new_request_id(), "alpha")
    engine.view_mode(new_request_id(), route.view_id, ViewMode.DIRECT)
    dead = _crash(engine, route.view_id)
    snap = engine.stage.snapshot()
    assert snap is not None
    layout = snap.view(route.view_id)
    assert layout is not None and layout.main is not None

    # The exact command prefix + S runs, in the context of the view's main pane.
    done = subprocess.run(["tmux", "-S", str(tmux_socket), "run-shell", "-t",
                           layout.main.pane_id, engine.stage.navigator_key().shell_command],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr + done.stdout
    back = _navigator(engine, route.view_id)
    assert back.pane_id == dead.pane_id and not back.dead and not back.parked
    # That process opened its own engine: the navigator it respawned is `switchboard ui`.
    assert retry_until(lambda: "navigator.cli" in _argv(back.pane_pid), 10, interval=0.02)
    assert views_ops.get_view(engine.conn, route.view_id)["mode"] == "navigator"


def test_entering_a_view_whose_navigator_pane_is_gone_splits_a_new_one(
        tmp_path: Path, tmux_socket: Path) -> None:
    engine = make_engine(tmp_path, tmux_socket)
    route = engine.project_enter(new_request_id(), "alpha")
    view = views_ops.get_view(engine.conn, route.view_id)
    old_nav, main = view["navigator_pane_id"], view["main_pane_id"]
    main_pid = tmux(tmux_socket, "display-message", "-p", "-t", main, "#{pane_pid}").strip()
    tmux(tmux_socket, "kill-pane", "-t", old_nav)

    engine.project_enter(new_request_id(), "alpha")
    nav = _navigator(engine, route.view_id)
    assert nav.pane_id != old_nav and not nav.dead and nav.left == 0
    assert nav.serves_view == route.view_id
    view = views_ops.get_view(engine.conn, route.view_id)
    assert view["navigator_pane_id"] == nav.pane_id and view["main_pane_id"] == main
    assert tmux(tmux_socket, "display-message", "-p", "-t", main,
                "#{pane_pid}").strip() == main_pid
    assert problems(engine, route.view_id) == []


def test_navigator_mode_again_brings_back_a_dead_navigator_in_the_view(
        tmp_path: Path, tmux_socket: Path) -> None:
    """Already in navigator mode, the navigator crashed: prefix+S / `view mode VIEW
    navigator` respawns it in place (no transition: the mode did not change)."""
    engine = make_engine(tmp_path, tmux_socket)
    route = engine.project_enter(new_request_id(), "alpha")
    dead = _crash(engine, route.view_id)
    assert not dead.parked
    transitions = engine.conn.execute("SELECT COUNT(*) FROM view_transitions").fetchone()[0]

    result = engine.view_mode(new_request_id(), route.view_id, ViewMode.NAVIGATOR)
    assert result.mode == "navigator"
    back = _navigator(engine, route.view_id)
    assert back.pane_id == dead.pane_id and not back.dead and not back.parked
    assert engine.conn.execute("SELECT COUNT(*) FROM view_transitions").fetchone()[0] \
        == transitions
    live_pid = back.pane_pid
    engine.view_mode(new_request_id(), route.view_id, ViewMode.NAVIGATOR)  # a live one
    assert _navigator(engine, route.view_id).pane_pid == live_pid  # is left alone
    assert problems(engine, route.view_id) == []
