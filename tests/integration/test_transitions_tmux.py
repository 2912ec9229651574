"""Every transition kind end to end on a real private tmux server.

Each test drives the engine the way the CLI and the navigator do, then reads
tmux itself: which pane is in main, which are parked and fenced, what a pane
received, and how many tmux processes the request cost (the budget is 3).
Provider processes are never restarted or moved to another server, so pane
pids are compared before and after.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

from core.context.requests import new_request_id
from core.engine.engine import Engine
from core.model.enums import ViewMode
from core.reconcile import recovery
from core.reconcile.reconcile import reconcile
from core.runtime.claims import claim_for_frame, settle_after_stop
from core.runtime.stage import CONTROL_TEMPLATE, TmuxStage
from core.server.main import stop_server
from core.tmux import PaneSnapshot, ServerIdentityMismatch
from storage.operations import views as views_ops
from tests.integration.journey_env import tmux
from tests.integration.transitions_env import (
    build_world,
    forge_reused_pane,
    home_of,
    mark_ready,
    open_stage_engine,
    pane_of,
    problems,
    screen,
    session_of,
)
from tests.waiting import retry_until

pytestmark = [pytest.mark.tmux, pytest.mark.usefixtures("no_server_pass")]
R = TypeVar("R")


def counted(engine: Engine, request: Callable[[], R]) -> tuple[R, int]:
    """Run one request; return its result and the tmux processes it spawned."""
    before = engine.stage.invocations
    result = request()
    return result, engine.stage.invocations - before


def pane(engine: Engine, pane_id: str | None) -> PaneSnapshot:
    """Read one pane through a separate stage, so request process counts stay exact."""
    assert pane_id is not None
    found = TmuxStage(engine, engine.stage.socket_path).snapshot().pane(pane_id)
    assert found is not None, f"pane {pane_id} is gone"
    return found


def main_of(engine: Engine, view_id: str) -> str:
    layout = TmuxStage(engine, engine.stage.socket_path).snapshot().view(view_id)
    assert layout is not None and layout.main is not None
    return layout.main.pane_id


def transition(engine: Engine, transition_id: str) -> tuple[str, str, str]:
    row = engine.conn.execute("SELECT kind, state, transport_phase FROM view_transitions"
                              " WHERE transition_id = ?", (transition_id,)).fetchone()
    return tuple(row)  # type: ignore[return-value]


def test_back_and_focus_swap_exact_panes_and_fence_the_parked_one(
        tmp_path: Path, tmux_socket: Path) -> None:
    engine, world = build_world(tmp_path, tmux_socket)
    workspace, child = pane_of(engine, world.workspace_id), pane_of(engine, world.child_id)
    pids = {p: pane(engine, p).pane_pid for p in (workspace, child)}
    assert main_of(engine, world.view_id) == child and problems(engine, world.view_id) == []

    back, spawned = counted(engine, lambda: engine.frame_back(new_request_id(), world.view_id))
    assert (back.kind, back.state, back.transport_phase) == ("back", "completed", "committed")
    assert spawned <= 3
    assert main_of(engine, world.view_id) == workspace
    parked = pane(engine, child)
    assert parked.parked and parked.input_off and not parked.dead  # open, live, fenced
    assert not pane(engine, workspace).input_off
    assert engine.conn.execute("SELECT COUNT(*) FROM control_turns WHERE transition_id = ?",
                               (back.transition_id,)).fetchone()[0] == 0
    assert problems(engine, world.view_id) == []

    focus, spawned = counted(engine, lambda: engine.view_focus(
        new_request_id(), world.view_id, world.child_id))
    assert (focus.kind, focus.state) == ("focus", "completed") and spawned <= 3
    assert main_of(engine, world.view_id) == child
    assert pane(engine, workspace).parked and pane(engine, workspace).input_off
    assert {p: pane(engine, p).pane_pid for p in pids} == pids  # nothing restarted
    lineage = engine.conn.execute("SELECT COUNT(*) FROM frames").fetchone()[0]
    assert lineage == 2  # navigation creates no frame and closes none
    assert problems(engine, world.view_id) == []


def test_push_child_waits_behind_its_gate_until_it_is_in_main(
        tmp_path: Path, tmux_socket: Path) -> None:
    _, world = build_world(tmp_path, tmux_socket, with_child=False)
    engine = open_stage_engine(tmp_path)  # cold, like the hook process that runs a push
    workspace = pane_of(engine, world.workspace_id)
    seen: dict[str, object] = {}

    def spy(point: str) -> None:
        if point != "after_launch":
            return
        child_frame = engine.conn.execute(
            "SELECT frame_id FROM frames WHERE role = 'task'").fetchone()[0]
        staged = pane(engine, pane_of(engine, child_frame))
        time.sleep(0.4)  # ample time for the fake provider to print its banner if it ran
        seen.update(parked=staged.parked, fenced=staged.input_off,
                    screen=screen(tmux_socket, staged.pane_id).strip())

    engine.fault = spy
    pushed, spawned = counted(engine, lambda: engine.frame_push(
        new_request_id(), world.workspace_id, "Fix the bug", "Make test_foo pass"))
    engine.fault = None
    assert spawned <= 3
    assert (pushed.state, pushed.transport_phase) == ("awaiting_claim", "committed")
    assert seen == {"parked": True, "fenced": True, "screen": ""}  # gated: no exec yet
    child = pane_of(engine, pushed.target_frame_id)
    assert main_of(engine, world.view_id) == child
    assert pane(engine, workspace).parked and pane(engine, workspace).input_off
    # the launch's initial prompt is the only text the child receives: exactly once
    assert retry_until(lambda: CONTROL_TEMPLATE in screen(tmux_socket, child), 5.0, interval=0.02)
    assert screen(tmux_socket, child).count(CONTROL_TEMPLATE) == 1
    assert "Make test_foo pass" not in screen(tmux_socket, child)

    claimed = claim_for_frame(engine, pushed.target_frame_id,
                              session_of(engine, pushed.target_frame_id))
    assert claimed.kind == "brief" and claimed.body == "Make test_foo pass"
    assert transition(engine, pushed.transition_id) == ("push", "completed", "committed")
    turn = engine.conn.execute("SELECT transport, state, submission_count FROM control_turns"
                               " WHERE transition_id = ?", (pushed.transition_id,)).fetchone()
    assert tuple(turn) == ("resume_initial", "settled", 1)
    assert problems(engine, world.view_id) == []


def test_complete_return_types_one_fenced_line_then_the_claim_closes_the_child(
        tmp_path: Path, tmux_socket: Path) -> None:
    _, world = build_world(tmp_path, tmux_socket)
    engine = open_stage_engine(tmp_path)  # cold, like the hook process of the child's Stop
    workspace, child = pane_of(engine, world.workspace_id), pane_of(engine, world.child_id)
    mark_ready(engine, world.workspace_id)  # the parent's trusted Stop
    fences: dict[str, tuple[bool, bool]] = {}

    def spy(point: str) -> None:
        if point in ("after_submit_recorded", "after_submit"):
            parent = pane(engine, workspace)
            fences[point] = (parent.parked, parent.input_off)

    engine.fault = spy
    done, spawned = counted(engine, lambda: engine.frame_complete(
        new_request_id(), world.child_id, "Fixed foo", "review and merge"))
    engine.fault = None
    assert spawned <= 3
    assert (done.state, done.transport_phase) == ("awaiting_claim", "committed")
    # typed only into the parked parent, fenced before and again right after the Enter
    assert fences == {"after_submit_recorded": (True, True), "after_submit": (True, True)}
    assert main_of(engine, world.view_id) == workspace
    # Shown, but still fenced: only the line's UserPromptSubmit or the watchdog lifts it
    # (this provider's hooks are no-ops, so the watchdog does, once its timeout passed).
    assert pane(engine, workspace).input_off
    assert pane(engine, child).parked and pane(engine, child).input_off
    assert retry_until(lambda: CONTROL_TEMPLATE in screen(tmux_socket, workspace), 5.0,
                       interval=0.02)
    assert screen(tmux_socket, workspace).count(CONTROL_TEMPLATE) == 1
    assert "Fixed foo" not in screen(tmux_socket, workspace)
    turn = engine.conn.execute("SELECT transport, state, submission_count FROM control_turns"
                               " WHERE transition_id = ?", (done.transition_id,)).fetchone()
    assert tuple(turn) == ("live_input", "submitted", 1)
    assert retry_until(lambda: not pane(engine, workspace).input_off, 30,
                       interval=0.02)  # the watchdog
    assert screen(tmux_socket, workspace).count(CONTROL_TEMPLATE) == 1  # never typed again

    claimed = claim_for_frame(engine, world.workspace_id,
                              session_of(engine, world.workspace_id))
    assert (claimed.kind, claimed.summary) == ("handoff", "Fixed foo")
    assert retry_until(lambda: child not in tmux(tmux_socket, "list-panes", "-a", "-F",
                                                 "#{pane_id}").split(), 5.0, interval=0.02)
    assert settle_after_stop(engine, world.workspace_id) == [done.transition_id]
    frame = engine.conn.execute("SELECT lifecycle_state, close_reason FROM frames"
                                " WHERE frame_id = ?", (world.child_id,)).fetchone()
    assert tuple(frame) == ("closed", "completed")
    assert transition(engine, done.transition_id) == ("complete_return", "completed",
                                                      "committed")
    assert problems(engine, world.view_id) == []


def test_human_close_presents_the_parent_first_then_stops_the_child(
        tmp_path: Path, tmux_socket: Path) -> None:
    engine, world = build_world(tmp_path, tmux_socket)
    workspace, child = pane_of(engine, world.workspace_id), pane_of(engine, world.child_id)
    order: list[tuple[str, str, bool]] = []

    def spy(point: str) -> None:
        if point in ("after_swap", "after_commit"):
            alive = child in tmux(tmux_socket, "list-panes", "-a", "-F", "#{pane_id}").split()
            order.append((point, main_of(engine, world.view_id), alive))

    engine.fault = spy
    closed, spawned = counted(engine, lambda: engine.frame_close(new_request_id(),
                                                                 world.child_id))
    engine.fault = None
    assert (closed.kind, closed.state) == ("human_close", "completed") and spawned <= 3
    assert order == [("after_swap", workspace, True), ("after_commit", workspace, True)]
    assert child not in tmux(tmux_socket, "list-panes", "-a", "-F", "#{pane_id}").split()
    frame = engine.conn.execute("SELECT lifecycle_state, close_reason FROM frames"
                                " WHERE frame_id = ?", (world.child_id,)).fetchone()
    assert tuple(frame) == ("closed", "dismissed")
    assert engine.conn.execute("SELECT COUNT(*) FROM control_turns WHERE transition_id = ?",
                               (closed.transition_id,)).fetchone()[0] == 0
    assert problems(engine, world.view_id) == []


@pytest.mark.parametrize("zoomed", [False, True], ids=["unzoomed", "zoomed"])
def test_mode_toggles_both_ways_without_touching_main_and_keeps_zoom(
        tmp_path: Path, tmux_socket: Path, zoomed: bool) -> None:
    engine, world = build_world(tmp_path, tmux_socket, with_child=False)
    view = views_ops.get_view(engine.conn, world.view_id)
    main, navigator = view["main_pane_id"], view["navigator_pane_id"]
    window, pid = view["tmux_window_id"], pane(engine, main).pane_pid
    if zoomed:
        tmux(tmux_socket, "resize-pane", "-Z", "-t", main)

    direct, spawned = counted(engine, lambda: engine.view_mode(
        new_request_id(), world.view_id, ViewMode.DIRECT))
    assert direct.mode == "direct" and spawned <= 3
    assert tmux(tmux_socket, "list-panes", "-t", window, "-F", "#{pane_id}").split() == [main]
    parked_nav = pane(engine, navigator)
    assert parked_nav.parked and parked_nav.input_off and not parked_nav.dead
    assert (pane(engine, main).pane_pid, pane(engine, main).window_id) == (pid, window)
    assert views_ops.get_view(engine.conn, world.view_id)["zoomed"] == int(zoomed)
    assert problems(engine, world.view_id) == []

    back, spawned = counted(engine, lambda: engine.view_mode(
        new_request_id(), world.view_id, ViewMode.NAVIGATOR))
    assert back.mode == "navigator" and spawned <= 3
    shown = pane(engine, navigator)
    assert (shown.window_id, shown.left, shown.input_off) == (window, 0, False)
    assert shown.width == engine.config.tmux.navigator_width or zoomed
    assert (pane(engine, main).pane_pid, pane(engine, main).window_id) == (pid, window)
    assert pane(engine, main).zoomed is zoomed  # zoom is display state and survives
    assert problems(engine, world.view_id) == []


def test_recover_runs_a_safe_auto_recovery_as_a_recover_transition(
        tmp_path: Path, tmux_socket: Path) -> None:
    engine, world = build_world(tmp_path, tmux_socket)
    workspace, child = pane_of(engine, world.workspace_id), pane_of(engine, world.child_id)
    tmux(tmux_socket, "swap-pane", "-d", "-s", workspace, "-t", child)  # by hand
    assert main_of(engine, world.view_id) == workspace
    report = reconcile(engine)
    assert report.recoveries_opened == 1
    (found,) = recovery.list_recoveries(engine)
    assert (found.kind, found.subject_id, found.actionability) == (
        "placement_orphaned", world.view_id, "safe_auto")
    assert main_of(engine, world.view_id) == workspace  # reconcile moved nothing

    done, spawned = counted(engine, lambda: recovery.execute(engine, new_request_id(),
                                                             found.recovery_id))
    assert done.state == "resolved" and spawned <= 3
    row = engine.conn.execute("SELECT kind, state, transport_phase, target_frame_id FROM"
                              " view_transitions WHERE kind = 'recover'").fetchone()
    assert tuple(row) == ("recover", "completed", "committed", world.child_id)
    assert main_of(engine, world.view_id) == child
    assert pane(engine, workspace).parked and pane(engine, workspace).input_off
    assert problems(engine, world.view_id) == []
    assert reconcile(engine).recoveries_opened == 0


def test_holding_panes_are_unreachable_by_window_navigation(
        tmp_path: Path, tmux_socket: Path) -> None:
    engine, world = build_world(tmp_path, tmux_socket)
    session = f"={engine.config.tmux.view_session}"
    tmux(tmux_socket, "new-window", "-d", "-t", f"{session}:", "sleep 600")  # the person's own
    holding = set(tmux(tmux_socket, "list-panes", "-s", "-t",
                       f"={engine.config.tmux.holding_session}", "-F", "#{pane_id}").split())
    assert pane_of(engine, world.workspace_id) in holding
    in_session = set(tmux(tmux_socket, "list-panes", "-s", "-t", session, "-F",
                          "#{pane_id}").split())
    assert not in_session & holding
    moves = [("next-window", "-t", session), ("next-window", "-t", session),
             ("previous-window", "-t", session), ("last-window", "-t", session),
             ("select-window", "-t", f"{session}:+1"), ("select-pane", "-t", f"{session}:.+"),
             ("select-pane", "-L", "-t", f"{session}:"), ("select-pane", "-R", "-t", f"{session}:")]
    for move in moves * 2:
        tmux(tmux_socket, *move)
        current = tmux(tmux_socket, "display-message", "-p", "-t", f"{session}:",
                       "#{pane_id}").strip()
        assert current and current not in holding, move
    assert problems(engine, world.view_id) == []


def test_a_pane_id_reused_after_a_server_restart_is_rejected(
        tmp_path: Path, tmux_socket: Path) -> None:
    engine, world = build_world(tmp_path, tmux_socket, with_child=False)
    # The launch started the home's server; its pass would reconcile the killed server's
    # surfaces away before the stage is asked about the reused pane id below.
    stop_server(home_of(tmp_path).run_dir)
    view = views_ops.get_view(engine.conn, world.view_id)
    old_pane, old_server = pane_of(engine, world.workspace_id), view["tmux_server_id"]
    surface = engine.conn.execute("SELECT surface_id FROM surfaces WHERE pane_id = ?",
                                  (old_pane,)).fetchone()[0]
    tmux(tmux_socket, "kill-server")
    assert retry_until(lambda: subprocess.run(["tmux", "-S", str(tmux_socket), "has-session"],
                                              capture_output=True).returncode != 0,
                       5.0, interval=0.02)
    # A new server on the same socket reissues the same pane id, dressed up as ours:
    # same holding session name and tag, same @sb_surface, fenced.
    forge_reused_pane(tmux_socket, engine.config.tmux.holding_session, old_pane, surface)
    reused = pane(engine, old_pane)
    text_before = screen(tmux_socket, old_pane)

    def untouched() -> None:
        now = pane(engine, old_pane)
        assert (now.pane_pid, now.window_id, now.session_name) == (
            reused.pane_pid, reused.window_id, reused.session_name)
        assert screen(tmux_socket, old_pane) == text_before
        assert CONTROL_TEMPLATE not in screen(tmux_socket, old_pane)

    assert engine.stage.kill(old_pane) is False
    with pytest.raises(ServerIdentityMismatch):
        engine.stage.paste_control(old_pane)
    with pytest.raises(ServerIdentityMismatch):
        engine.stage.enable_input(old_pane)
    with pytest.raises(ServerIdentityMismatch):
        engine.stage.present(views_ops.get_view(engine.conn, world.view_id), old_pane)
    # An explicit project entry rebuilds the view instead (test_server_restart_open.py).
    untouched()

    report = reconcile(engine)
    assert report.surfaces_lost == 1
    kinds = {(r.kind, r.subject_type, r.actionability) for r in recovery.list_recoveries(engine)}
    assert kinds == {("server_restarted", "view", "safe_auto"),
                     ("server_restarted", "surface", "manual")}
    # The old server is gone (one socket, one server), so its runtime is over: stopped,
    # its surface retired, the session resumable with n; the reused pane is never touched.
    assert engine.conn.execute("SELECT lifecycle_state FROM surfaces WHERE surface_id = ?",
                               (surface,)).fetchone()[0] == "retired"
    untouched()
    assert engine.stage.kill(old_pane) is False
    untouched()

    # The view's recovery rebuilds it on the running server; the workspace resumes with n.
    (rebuild,) = [r for r in recovery.list_recoveries(engine) if r.subject_type == "view"]
    assert recovery.execute(engine, new_request_id(), rebuild.recovery_id).state == "resolved"
    view = views_ops.get_view(engine.conn, world.view_id)
    assert view["tmux_server_id"] != old_server
    assert problems(engine, world.view_id) == []
    engine.frame_start(new_request_id(), world.workspace_id)
    fresh = pane_of(engine, world.workspace_id)
    assert fresh != old_pane and main_of(engine, world.view_id) == fresh
    assert problems(engine, world.view_id) == []
    untouched()


@pytest.mark.parametrize("kind", ["focus", "mode"])
def test_a_transition_while_no_tmux_server_answers_fails_at_once_with_a_recovery(
        tmp_path: Path, tmux_socket: Path, kind: str) -> None:
    """No server on the socket: nothing can move, so the transition fails now (not
    'executing' until its lease runs out) and a server_restarted recovery says why."""
    engine, world = build_world(tmp_path, tmux_socket)
    tmux(tmux_socket, "kill-server")
    assert retry_until(lambda: subprocess.run(["tmux", "-S", str(tmux_socket), "has-session"],
                                              capture_output=True).returncode != 0,
                       5.0, interval=0.02)
    if kind == "focus":
        engine.view_focus(new_request_id(), world.view_id, world.workspace_id)
    else:
        engine.view_mode(new_request_id(), world.view_id, ViewMode.DIRECT)
    row = engine.conn.execute("SELECT state, failure FROM view_transitions WHERE kind = ?"
                              " ORDER BY created_at DESC, rowid DESC LIMIT 1",
                              (kind,)).fetchone()
    assert row["state"] == "failed" and "No tmux server answers" in row["failure"], dict(row)
    kinds = {(r.kind, r.subject_type) for r in recovery.list_recoveries(engine)}
    assert ("server_restarted", "view") in kinds
    assert engine.conn.execute("SELECT COUNT(*) FROM view_transitions WHERE state ="
                               " 'executing'").fetchone()[0] == 0
