"""Opening a project after its tmux server restarted (reboot, `tmux kill-server`).

The explicit entry (`switchboard open`, the navigator's project enter) starts or
uses the live server, records the restart as recoveries, runs the view's
safe_auto rebuild and shows the view. Agents are not restarted: their frames
show stopped and `n` resumes each session by its exact id. No locator of the
old server is ever acted on, even when a new server reissues the same pane id.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from core.apps.client import EngineClient
from core.context.requests import new_request_id
from core.engine.engine import Engine
from core.engine.presentation import open_view
from core.model.enums import DirectiveKind
from core.runtime.stage import CONTROL_TEMPLATE
from core.tmux import PaneRole, ServerIdentity, TmuxRunner, TmuxUnavailable
from storage.operations import views as views_ops
from tests.integration.journey_env import tmux
from tests.integration.transitions_env import (
    build_world,
    forge_reused_pane,
    home_of,
    make_engine,
    open_stage_engine,
    pane_of,
    problems,
    run_cli,
    screen,
    session_of,
    wait_prompt,
)
from tests.waiting import retry_until

pytestmark = [pytest.mark.tmux, pytest.mark.usefixtures("no_server_pass")]


def _kill_server(socket: Path) -> None:
    """`tmux kill-server`, then wait until the old server process is really gone."""
    pid = int(tmux(socket, "display-message", "-p", "#{pid}").strip())
    tmux(socket, "kill-server")

    def gone() -> bool:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        return False

    assert retry_until(gone, 10, interval=0.02)




def _server_of(engine: Engine, view_id: str) -> ServerIdentity:
    row = engine.conn.execute(
        "SELECT t.socket_path, t.server_pid, t.server_start_time FROM user_views v"
        " JOIN tmux_servers t ON t.tmux_server_id = v.tmux_server_id WHERE v.view_id = ?",
        (view_id,)).fetchone()
    return ServerIdentity(row[0], int(row[1]), int(row[2]))


def _recoveries(engine: Engine) -> set[tuple[str, str, str, str]]:
    return {tuple(r) for r in engine.conn.execute(  # type: ignore[misc]
        "SELECT kind, subject_type, actionability, state FROM recoveries")}


def _runtime(engine: Engine, frame_id: str) -> tuple[str, str]:
    """(placement state, session runtime) of a frame."""
    row = engine.conn.execute(
        "SELECT p.state, s.runtime_presence FROM frame_placements p JOIN frames f"
        " ON f.frame_id = p.frame_id JOIN provider_sessions s"
        " ON s.session_key = f.current_session_key WHERE p.frame_id = ?"
        " AND p.state <> 'orphaned'", (frame_id,)).fetchone()
    return row[0], row[1]


def test_switchboard_open_after_kill_server_rebuilds_the_view(
        tmp_path: Path, tmux_socket: Path) -> None:
    engine, world = build_world(tmp_path, tmux_socket)
    old_server = _server_of(engine, world.view_id)
    sessions = {frame: session_of(engine, frame) for frame in (world.workspace_id,
                                                              world.child_id)}
    engine.conn.close()
    _kill_server(tmux_socket)

    done = run_cli(tmp_path, "open", "alpha", "--no-attach")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(
        f"attach: env -u TMUX -u TMUX_PANE tmux -S {tmux_socket} attach -t @"), done.stdout
    window = done.stdout.split()[-1]

    fresh = open_stage_engine(tmp_path)
    view = views_ops.get_view(fresh.conn, world.view_id)
    live = fresh.stage.snapshot()
    assert live is not None and live.identity != old_server
    assert _server_of(fresh, world.view_id) == live.identity
    assert view["tmux_window_id"] == window
    layout = live.view(world.view_id)
    assert layout is not None and layout.window_id == window
    assert layout.main is not None and layout.main.role is PaneRole.PLACEHOLDER
    assert layout.navigator is not None and not layout.navigator.dead
    # Agents are not restarted: no provider pane runs; both frames show stopped.
    assert not [pane for pane in live if pane.role is PaneRole.PROVIDER]
    for frame in sessions:
        assert _runtime(fresh, frame) == ("stopped_affinity", "stopped")
    assert _recoveries(fresh) == {
        ("server_restarted", "view", "safe_auto", "resolved"),
        ("server_restarted", "surface", "manual", "open"),
    }
    assert problems(fresh, world.view_id) == []

    # n resumes the exact session; the same view, no second window, on a second open.
    started = fresh.frame_start(new_request_id(), world.child_id)
    assert started.session_key == sessions[world.child_id]
    action = fresh.conn.execute("SELECT action FROM launch_intents WHERE launch_id = ?",
                                (started.launch_id,)).fetchone()[0]
    assert action == "resume"
    wait_prompt(tmux_socket, pane_of(fresh, world.child_id))
    again = run_cli(tmp_path, "open", "alpha", "--no-attach")
    assert again.returncode == 0, again.stderr
    assert again.stdout.split()[-1] == window
    assert problems(fresh, world.view_id) == []


def test_the_navigators_enter_rebuilds_on_a_server_that_reissued_old_pane_ids(
        tmp_path: Path, tmux_socket: Path) -> None:
    engine, world = build_world(tmp_path, tmux_socket, with_child=False)
    old_pane = pane_of(engine, world.workspace_id)
    assert old_pane is not None
    old_window = views_ops.get_view(engine.conn, world.view_id)["tmux_window_id"]
    surface = engine.conn.execute("SELECT surface_id FROM surfaces WHERE pane_id = ?",
                                  (old_pane,)).fetchone()[0]
    session = session_of(engine, world.workspace_id)
    _kill_server(tmux_socket)
    # A server started by someone else reissues the old pane id, dressed up as ours.
    forge_reused_pane(tmux_socket, engine.config.tmux.holding_session, old_pane, surface)

    def state_of_old_pane() -> tuple[str, str]:
        line = tmux(tmux_socket, "display-message", "-p", "-t", old_pane,
                    "#{pane_pid} #{window_id} #{session_name} #{pane_dead}").strip()
        return line, screen(tmux_socket, old_pane)

    before = state_of_old_pane()

    # The same engine object as before the restart: its stage still caches the old server.
    client = EngineClient(engine=engine, home=home_of(tmp_path))
    route = client.enter_project("alpha")
    assert route.view_id == world.view_id
    assert state_of_old_pane() == before
    assert CONTROL_TEMPLATE not in screen(tmux_socket, old_pane)
    live = engine.stage.snapshot()
    assert live is not None and _server_of(engine, world.view_id) == live.identity
    layout = live.view(world.view_id)
    assert layout is not None and layout.main is not None and layout.navigator is not None
    assert layout.main.role is PaneRole.PLACEHOLDER and not layout.navigator.dead
    assert layout.main.pane_id != old_pane and layout.window_id != old_window
    assert _runtime(engine, world.workspace_id) == ("stopped_affinity", "stopped")
    assert _recoveries(engine) == {
        ("server_restarted", "view", "safe_auto", "resolved"),
        ("server_restarted", "surface", "manual", "open"),
    }
    assert problems(engine, world.view_id) == []

    started = engine.frame_start(new_request_id(), world.workspace_id)
    assert started.session_key == session
    fresh_pane = pane_of(engine, world.workspace_id)
    assert fresh_pane not in (None, old_pane)
    wait_prompt(tmux_socket, fresh_pane)
    assert state_of_old_pane() == before
    assert engine.stage.kill(old_pane) is False  # an old locator stays refused
    assert state_of_old_pane() == before
    assert problems(engine, world.view_id) == []


def test_each_project_is_rebuilt_when_it_is_entered(tmp_path: Path, tmux_socket: Path) -> None:
    engine = make_engine(tmp_path, tmux_socket)
    alpha = engine.project_enter(new_request_id(), "alpha")
    engine.frame_start(new_request_id(), alpha.frame_id)
    wait_prompt(tmux_socket, pane_of(engine, alpha.frame_id))
    beta = engine.project_enter(new_request_id(), "beta")
    engine.conn.close()
    _kill_server(tmux_socket)

    # `switchboard open alpha` (its core; the CLI then attaches to the window).
    opener = open_stage_engine(tmp_path)
    directive = open_view(opener, new_request_id(), "alpha", desktop_focus_available=False)
    assert directive.error is None, directive.error
    assert directive.kind is DirectiveKind.ATTACH and directive.view_id == alpha.view_id
    live = opener.stage.snapshot()
    assert live is not None and _server_of(opener, alpha.view_id) == live.identity
    assert _server_of(opener, beta.view_id) != live.identity  # not entered yet
    open_for = {(r[0], r[1]) for r in opener.conn.execute(
        "SELECT subject_id, actionability FROM recoveries WHERE kind = 'server_restarted'"
        " AND subject_type = 'view' AND state = 'open'")}
    assert open_for == {(beta.view_id, "safe_auto")}  # recorded, one key fixes it

    # The navigator (now running in the rebuilt alpha view) enters beta.
    navigator = EngineClient(engine=open_stage_engine(tmp_path), home=home_of(tmp_path))
    route = navigator.enter_project("beta")
    assert route.view_id == beta.view_id
    nav_engine = navigator.engine
    live = nav_engine.stage.snapshot()
    assert live is not None
    for view_id in (alpha.view_id, beta.view_id):
        assert _server_of(nav_engine, view_id) == live.identity
        layout = live.view(view_id)
        assert layout is not None and layout.navigator is not None
        assert not layout.navigator.dead
        assert problems(nav_engine, view_id) == []
    assert not nav_engine.conn.execute(
        "SELECT 1 FROM recoveries WHERE subject_type = 'view' AND state = 'open'").fetchall()
    assert _runtime(nav_engine, alpha.frame_id) == ("stopped_affinity", "stopped")

    # Nothing is left to record, and entering again changes nothing.
    from core.reconcile.reconcile import reconcile
    assert reconcile(nav_engine).recoveries_opened == 0
    window = views_ops.get_view(nav_engine.conn, alpha.view_id)["tmux_window_id"]
    navigator.enter_project("alpha")
    assert views_ops.get_view(nav_engine.conn, alpha.view_id)["tmux_window_id"] == window
    assert reconcile(nav_engine).recoveries_opened == 0


def test_no_server_error_names_a_command_that_exists(tmp_path: Path) -> None:
    runner = TmuxRunner(tmp_path / "nothing.sock")
    with pytest.raises(TmuxUnavailable) as raised:
        runner.run([("list-sessions",)])
    assert "`switchboard open PROJECT`" in raised.value.message
    assert "Start the view" not in raised.value.message
    assert raised.value.detail  # what tmux itself said, without the advice
