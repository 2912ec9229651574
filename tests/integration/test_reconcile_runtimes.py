"""Reconcile on a private tmux server: interrupted launches, unbound providers, exited ones.

- A start interrupted between 'authorized' and 'started' is adopted when its
  tagged pane exists, else failed with a ``launch_uncertain`` recovery.
- A started provider that no hook binds opens ``bind_timeout`` and is left running.
- A provider that exited (``pane_dead``) stops its frame's runtime; main shows
  the placeholder if it was there, and the dead pane is killed.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from core.context.requests import new_request_id
from core.model.enums import Provider, ViewMode
from core.providers.traits import UNBOUND_HINT
from core.reconcile import recovery
from core.reconcile.launches import BIND_TIMEOUT_MS, LAUNCH_REPORT_MS, bind_timeout_explanation
from core.reconcile.reconcile import reconcile
from storage.connection import write_transaction
from storage.operations import sessions as sessions_ops
from storage.operations import views as views_ops
from tests.integration.journey_env import tmux
from tests.integration.transitions_env import (
    OffsetClock,
    build_world,
    make_engine,
    open_stage_engine,
    pane_of,
    problems,
    session_of,
    wait_prompt,
)
from tests.waiting import retry_until

pytestmark = [pytest.mark.tmux, pytest.mark.usefixtures("no_server_pass")]


class Crash(Exception):
    """Not a SwitchboardError, so the launcher records nothing: the process just died."""


def _launch(engine, frame_id: str):  # noqa: ANN001, ANN202
    return engine.conn.execute(
        "SELECT l.launch_id, l.state, s.surface_id, s.lifecycle_state, s.pane_id"
        " FROM launch_intents l JOIN surfaces s ON s.launch_id = l.launch_id"
        " WHERE l.frame_id = ? ORDER BY l.created_at DESC LIMIT 1", (frame_id,)).fetchone()


def _tagged(socket: Path, surface_id: str) -> str | None:
    for line in tmux(socket, "list-panes", "-a", "-F", "#{pane_id} #{@sb_surface}").splitlines():
        pane, _, tag = line.partition(" ")
        if tag == surface_id:
            return pane
    return None


def _main(engine, view_id: str):  # noqa: ANN001, ANN202
    layout = engine.stage.snapshot().view(view_id)
    assert layout is not None and layout.main is not None
    return layout.main


def _recoveries(engine) -> list[tuple[str, str, str]]:  # noqa: ANN001
    return [(r.kind, r.subject_type, r.actionability) for r in recovery.list_recoveries(engine)]


def _interrupted_start(tmp_path: Path, socket: Path, *, pane_made: bool):  # noqa: ANN202
    """frame_start of the workspace, killed inside launch_pane (before 'started')."""
    engine = make_engine(tmp_path, socket)
    route = engine.project_enter(new_request_id(), "alpha")
    real = engine.stage.launch_pane

    def crashing(**kwargs):  # noqa: ANN003, ANN202
        if pane_made:
            real(**kwargs)
        raise Crash("the process died around its tmux call")

    engine.stage.launch_pane = crashing
    with pytest.raises(Crash):
        engine.frame_start(new_request_id(), route.frame_id)
    engine.conn.close()
    return route


def test_a_start_interrupted_after_its_pane_was_made_is_adopted_and_shown(
        tmp_path: Path, tmux_socket: Path) -> None:
    route = _interrupted_start(tmp_path, tmux_socket, pane_made=True)
    engine = open_stage_engine(tmp_path)
    launch = _launch(engine, route.frame_id)
    assert (launch["state"], launch["lifecycle_state"]) == ("authorized", "planned")
    pane = _tagged(tmux_socket, launch["surface_id"])
    assert pane is not None

    # Within the bound the launch may still be in flight elsewhere: left alone.
    assert reconcile(engine).launches_adopted == 0
    assert _launch(engine, route.frame_id)["state"] == "authorized"

    later = open_stage_engine(tmp_path, clock=OffsetClock(LAUNCH_REPORT_MS + 5_000))
    report = reconcile(later)
    assert (report.launches_adopted, report.launches_failed) == (1, 0)
    launch = _launch(later, route.frame_id)
    assert (launch["state"], launch["lifecycle_state"], launch["pane_id"]) == (
        "started", "live", pane)
    # Finished like the start would have: in main, gate opened, the provider runs.
    assert _main(later, route.view_id).pane_id == pane
    wait_prompt(tmux_socket, pane)
    assert views_ops.active_placement(later.conn, route.view_id)["frame_id"] == route.frame_id
    assert later.conn.execute("SELECT runtime_presence FROM provider_sessions WHERE"
                              " session_key = ?", (session_of(later, route.frame_id),)
                              ).fetchone()[0] == "live"
    assert _recoveries(later) == [] and problems(later, route.view_id) == []
    again = reconcile(later)
    assert (again.launches_adopted, again.launches_failed, again.recoveries_opened) == (0, 0, 0)


@pytest.mark.parametrize("pane_made", [False, True], ids=["no-pane", "dead-pane"])
def test_a_start_interrupted_without_a_live_pane_fails_with_a_recovery(
        tmp_path: Path, tmux_socket: Path, pane_made: bool) -> None:
    route = _interrupted_start(tmp_path, tmux_socket, pane_made=pane_made)
    engine = open_stage_engine(tmp_path)
    surface_id = _launch(engine, route.frame_id)["surface_id"]
    dead = _tagged(tmux_socket, surface_id)
    if pane_made:  # the gated pane exists, but its process died
        assert dead is not None
        pid = tmux(tmux_socket, "display-message", "-p", "-t", dead, "#{pane_pid}").strip()
        os.kill(int(pid), signal.SIGKILL)
        assert retry_until(lambda: tmux(tmux_socket, "display-message", "-p", "-t", dead,
                                        "#{pane_dead}").strip() == "1", 5.0, interval=0.02)
    else:
        assert dead is None

    later = open_stage_engine(tmp_path, clock=OffsetClock(LAUNCH_REPORT_MS + 5_000))
    report = reconcile(later)
    assert (report.launches_adopted, report.launches_failed) == (0, 1)
    launch = _launch(later, route.frame_id)
    assert (launch["state"], launch["lifecycle_state"]) == ("failed", "retired")
    assert _recoveries(later) == [("launch_uncertain", "launch", "manual")]
    assert _tagged(tmux_socket, surface_id) is None  # a dead tagged pane was killed
    placement = views_ops.placement_of_frame(later.conn, route.frame_id)
    assert placement["state"] == "stopped_affinity"  # empty: n starts it again
    assert _main(later, route.view_id).role.value == "placeholder"
    assert problems(later, route.view_id) == []
    assert reconcile(later).recoveries_opened == 0

    later.frame_start(new_request_id(), route.frame_id)  # n
    wait_prompt(tmux_socket, pane_of(later, route.frame_id))
    assert _main(later, route.view_id).pane_id == pane_of(later, route.frame_id)
    assert problems(later, route.view_id) == []


def test_a_provider_no_hook_binds_opens_bind_timeout_and_keeps_running(
        tmp_path: Path, tmux_socket: Path) -> None:
    engine, world = build_world(tmp_path, tmux_socket, with_child=False)  # hooks are no-ops
    pane = pane_of(engine, world.workspace_id)
    pid = tmux(tmux_socket, "display-message", "-p", "-t", pane, "#{pane_pid}").strip()
    assert reconcile(engine).binds_overdue == 0  # seconds old

    later = open_stage_engine(tmp_path, clock=OffsetClock(BIND_TIMEOUT_MS + 5_000))
    report = reconcile(later)
    assert report.binds_overdue == 1
    assert _recoveries(later) == [("bind_timeout", "launch", "manual")]
    (record,) = recovery.list_recoveries(later)
    assert record.explanation == bind_timeout_explanation("claude")
    launch = _launch(later, world.workspace_id)
    assert (launch["state"], launch["lifecycle_state"], launch["pane_id"]) == (
        "started", "live", pane)
    assert tmux(tmux_socket, "display-message", "-p", "-t", pane,
                "#{pane_pid} #{pane_dead}").split() == [pid, "0"]  # nothing killed
    assert _main(later, world.view_id).pane_id == pane
    assert problems(later, world.view_id) == []
    assert reconcile(later).recoveries_opened == 0  # one stable recovery

    with write_transaction(later.conn) as tx:  # the first hook binds it at last
        sessions_ops.move_launch(tx, launch["launch_id"], "started", "bound", later.now())
    reconcile(later)
    assert _recoveries(later) == []


def test_an_unbound_gemini_launch_says_how_to_get_past_its_trust_race(
        tmp_path: Path, tmux_socket: Path) -> None:
    """Gemini CLI can miss its own restart after the folder-trust answer and run on
    untrusted, with no hook at all: the timeout's recovery says what to do about it
    (the answer is saved, so a stop and start brings it up trusted). Other providers'
    recoveries do not carry that sentence."""
    engine = make_engine(tmp_path, tmux_socket)  # quiet: the hooks are no-ops
    route = engine.project_enter(new_request_id(), "alpha")
    engine.frame_start(new_request_id(), route.frame_id, Provider.GEMINI)
    later = open_stage_engine(tmp_path, clock=OffsetClock(BIND_TIMEOUT_MS + 5_000))
    assert reconcile(later).binds_overdue == 1
    (record,) = recovery.list_recoveries(later)
    assert record.kind == "bind_timeout"
    assert record.explanation == bind_timeout_explanation("gemini")
    assert "stop the agent and start it again (s, then n)" in record.explanation
    assert UNBOUND_HINT[Provider.GEMINI] not in bind_timeout_explanation("claude")


@pytest.mark.parametrize("mode", [ViewMode.NAVIGATOR, ViewMode.DIRECT])
def test_a_provider_that_exited_in_main_leaves_the_placeholder(
        tmp_path: Path, tmux_socket: Path, mode: ViewMode) -> None:
    engine, world = build_world(tmp_path, tmux_socket)
    if mode is ViewMode.DIRECT:
        engine.view_mode(new_request_id(), world.view_id, ViewMode.DIRECT)
    child = pane_of(engine, world.child_id)
    window = _main(engine, world.view_id).window_id
    pid = tmux(tmux_socket, "display-message", "-p", "-t", child, "#{pane_pid}").strip()
    os.kill(int(pid), signal.SIGKILL)  # the provider exits; remain-on-exit keeps the pane
    assert retry_until(lambda: tmux(tmux_socket, "display-message", "-p", "-t", child,
                                    "#{pane_dead}").strip() == "1", 5.0, interval=0.02)
    surface_id = _launch(engine, world.child_id)["surface_id"]

    report = reconcile(engine)
    assert report.providers_exited == 1 and report.recoveries_opened == 0
    launch = _launch(engine, world.child_id)
    assert launch["lifecycle_state"] == "dead"
    assert engine.conn.execute("SELECT runtime_presence FROM provider_sessions WHERE"
                               " session_key = ?", (session_of(engine, world.child_id),)
                               ).fetchone()[0] == "stopped"
    assert views_ops.placement_of_frame(engine.conn, world.child_id)["state"] == \
        "stopped_affinity"
    view = views_ops.get_view(engine.conn, world.view_id)
    assert (view["active_frame_id"], view["mode"]) == (world.child_id, mode.value)
    main = _main(engine, world.view_id)
    assert main.role.value == "placeholder" and main.window_id == window  # window kept
    assert _tagged(tmux_socket, surface_id) is None  # the dead pane was killed
    assert pane_of(engine, world.workspace_id) is not None  # the parent runs on
    assert problems(engine, world.view_id) == []
    again = reconcile(engine)
    assert (again.providers_exited, again.recoveries_opened) == (0, 0)


def test_a_parked_provider_that_exited_is_stopped_and_its_pane_killed(
        tmp_path: Path, tmux_socket: Path) -> None:
    engine, world = build_world(tmp_path, tmux_socket)
    parked = pane_of(engine, world.workspace_id)
    child = pane_of(engine, world.child_id)
    surface_id = _launch(engine, world.workspace_id)["surface_id"]
    pid = tmux(tmux_socket, "display-message", "-p", "-t", parked, "#{pane_pid}").strip()
    os.kill(int(pid), signal.SIGKILL)
    assert retry_until(lambda: tmux(tmux_socket, "display-message", "-p", "-t", parked,
                                    "#{pane_dead}").strip() == "1", 5.0, interval=0.02)

    report = reconcile(engine)
    assert report.providers_exited == 1 and report.recoveries_opened == 0
    assert _launch(engine, world.workspace_id)["lifecycle_state"] == "dead"
    assert views_ops.placement_of_frame(engine.conn, world.workspace_id)["state"] == \
        "stopped_affinity"
    assert _tagged(tmux_socket, surface_id) is None
    assert _main(engine, world.view_id).pane_id == child  # main untouched
    assert problems(engine, world.view_id) == []

    # back to the stopped parent shows its placeholder ("n to start")
    engine.frame_back(new_request_id(), world.view_id)
    assert _main(engine, world.view_id).role.value == "placeholder"
    assert problems(engine, world.view_id) == []


def test_a_reading_older_than_a_launch_does_not_orphan_its_pane(
        tmp_path: Path, tmux_socket: Path) -> None:
    """A navigator's reconcile that read tmux just before a task launched, and writes
    just after the launch recorded its pane, must not call that pane vanished."""
    engine, world = build_world(tmp_path, tmux_socket, with_child=False)
    observer = open_stage_engine(tmp_path)  # another process: the navigator
    real = observer.stage.snapshot
    launched: list[tuple] = []

    def first_reading_then_launch():  # noqa: ANN202
        """Reconcile's first tmux read, then the push launches before its write lock."""
        if launched:
            return real()
        older = real()
        pushed = engine.frame_push(new_request_id(), world.workspace_id, "Task", "The brief")
        launched.append((older, pushed, _launch(engine, pushed.target_frame_id)))
        return older

    observer.stage.snapshot = first_reading_then_launch
    report = reconcile(observer)
    older, pushed, child = launched[0]
    assert child["lifecycle_state"] == "live"
    assert older.pane(child["pane_id"]) is None

    assert (report.surfaces_lost, report.recoveries_opened) == (0, 0)
    assert _launch(engine, pushed.target_frame_id)["lifecycle_state"] == "live"
    assert _recoveries(observer) == []
    assert problems(engine, world.view_id) == []


def _orphan_as_an_older_reading_did(engine, surface_id: str) -> None:  # noqa: ANN001
    """The state a reconcile with a stale tmux reading left behind (before the fix)."""
    from core.model.enums import Actionability, RecoveryKind
    from storage.operations import recoveries as recoveries_ops

    with write_transaction(engine.conn) as tx:
        sessions_ops.move_surface(tx, surface_id, "orphaned", engine.now())
        recoveries_ops.open_recovery(
            tx, recovery_id=engine.ids.new_id(), host_id=engine.host_id,
            kind=RecoveryKind.PANE_VANISHED, subject_type="surface", subject_id=surface_id,
            actionability=Actionability.MANUAL, explanation="The agent pane is gone",
            now=engine.now())


def test_an_orphaned_surface_whose_pane_runs_is_found_again(
        tmp_path: Path, tmux_socket: Path) -> None:
    engine, world = build_world(tmp_path, tmux_socket)
    child = _launch(engine, world.child_id)
    _orphan_as_an_older_reading_did(engine, child["surface_id"])
    assert _recoveries(engine) == [("pane_vanished", "surface", "manual")]

    report = reconcile(engine)
    assert (report.surfaces_found, report.surfaces_lost) == (1, 0)
    assert _launch(engine, world.child_id)["lifecycle_state"] == "live"
    assert _recoveries(engine) == []
    assert problems(engine, world.view_id) == []
    assert reconcile(engine).surfaces_found == 0


def test_closing_a_frame_kills_the_pane_of_its_orphaned_surface(
        tmp_path: Path, tmux_socket: Path) -> None:
    engine, world = build_world(tmp_path, tmux_socket)
    child = _launch(engine, world.child_id)
    _orphan_as_an_older_reading_did(engine, child["surface_id"])

    engine.frame_close(new_request_id(), world.child_id)  # x: the parent comes back first
    assert retry_until(lambda: _tagged(tmux_socket, child["surface_id"]) is None, 10, interval=0.02)
    assert _launch(engine, world.child_id)["lifecycle_state"] == "retired"
    assert _main(engine, world.view_id).pane_id == pane_of(engine, world.workspace_id)
    assert problems(engine, world.view_id) == []


def test_a_reconcile_while_a_start_presents_its_pane_opens_no_recovery(
        tmp_path: Path, tmux_socket: Path) -> None:
    """Main shows a starting agent a moment before its placement is recorded active;
    a navigator reconciling in that moment must leave the view to the start."""
    engine = make_engine(tmp_path, tmux_socket)
    route = engine.project_enter(new_request_id(), "alpha")
    observer = open_stage_engine(tmp_path)  # another process: the navigator
    real = engine.stage.present
    reports = []

    def present_then_reconcile(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        shown = real(*args, **kwargs)
        reports.append(reconcile(observer))  # main shows the pane; still staged
        return shown

    engine.stage.present = present_then_reconcile
    engine.frame_start(new_request_id(), route.frame_id)
    assert len(reports) == 1 and reports[0].recoveries_opened == 0, reports
    assert _recoveries(observer) == []
    engine.stage.present = real
    assert _main(engine, route.view_id).pane_id == pane_of(engine, route.frame_id)
    assert problems(engine, route.view_id) == []


def test_a_view_is_degraded_while_a_recovery_about_it_is_open(
        tmp_path: Path, tmux_socket: Path) -> None:
    """The view's window is gone: reconcile opens its recovery and the view shows
    degraded (state and attention); running the recovery rebuilds it and it is ready."""
    from core.state.state_builder import build_navigator_state

    engine, world = build_world(tmp_path, tmux_socket, with_child=False)
    view = views_ops.get_view(engine.conn, world.view_id)
    assert view["state"] == "ready"
    tmux(tmux_socket, "kill-window", "-t", view["tmux_window_id"])

    report = reconcile(engine)  # the window took the agent's pane with it: two recoveries
    assert (report.recoveries_opened, report.surfaces_lost) == (2, 1)
    (opened,) = [r for r in recovery.list_recoveries(engine) if r.subject_type == "view"]
    assert (opened.kind, opened.actionability) == ("placement_orphaned", "safe_auto")
    assert views_ops.get_view(engine.conn, world.view_id)["state"] == "degraded"
    (row,) = [v for v in build_navigator_state(engine).views if v.view_id == world.view_id]
    assert row.state == "degraded" and row.attention

    assert recovery.execute(engine, new_request_id(), opened.recovery_id).state == "resolved"
    assert views_ops.get_view(engine.conn, world.view_id)["state"] == "ready"
    assert problems(engine, world.view_id) == []


def test_an_idle_reconcile_reads_tmux_once(tmp_path: Path, tmux_socket: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing committed and nothing to repair: one tmux process per reconcile, so one
    reconciler per host costs one `list-panes -a` per interval; a commit by another
    process between the first read and the write lock still gets a fresh read. (The
    just-made launches' own start-up dialog reads, 2 s and 10 s after each launch, are
    tested in tests/integration/test_provider_dialogs.py.)"""
    monkeypatch.setattr("core.runtime.dialogs.CHECKPOINTS_MS", ())
    engine, world = build_world(tmp_path, tmux_socket)
    observer = open_stage_engine(tmp_path)  # another process: the navigator
    reconcile(observer)  # settles whatever the launch left
    runner = observer.stage.runner
    before = runner.invocations
    report = reconcile(observer)
    assert runner.invocations - before == 1
    assert report.recoveries_opened == 0

    real = observer.stage.snapshot
    readings: list[int] = []

    def reading_then_commit():  # noqa: ANN202
        readings.append(1)
        snap = real()
        if len(readings) == 1:
            engine.view_focus(new_request_id(), world.view_id, world.workspace_id)
        return snap

    observer.stage.snapshot = reading_then_commit
    reconcile(observer)
    assert len(readings) >= 2
