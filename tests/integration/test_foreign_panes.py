"""Foreign panes (issue 39 item 3): a pane split into a view's window never breaks it.

An agent, a plugin or the person splits a pane into a view's window. Reconcile
must not read it as "main shows another pane" (the old ``placement_orphaned``
that reopened every pass), must move it out of the window into the holding
session, still running, tagged as an extra pane of the frame the view showed,
and its exit removes it. Each test drives the real engine against a private
tmux server with fake providers.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from core.context.requests import new_request_id
from core.engine.engine import Engine
from core.model.enums import (
    Actionability,
    Activity,
    ActivityReason,
    RecoveryKind,
)
from core.model.errors import Conflict, NotFound
from core.reconcile import recovery
from core.reconcile.foreign import (
    ExtraPane,
    close_extra_pane,
    extra_panes,
    show_extra_pane,
)
from core.reconcile.reconcile import reconcile
from core.runtime import sagas
from core.state.envelope import decode_checked, encode_canonical
from core.state.state_builder import build_navigator_state
from core.state.state_types import ExtraPaneSummary, NavigatorState
from core.tmux.panes import PaneRole
from storage.connection import write_transaction
from storage.operations import recoveries as recoveries_ops
from storage.operations import sessions as sessions_ops
from tests.integration.journey_env import tmux
from tests.integration.transitions_env import (
    build_world,
    mark_ready,
    pane_of,
    problems,
    session_of,
)
from tests.waiting import retry_until

pytestmark = [pytest.mark.tmux, pytest.mark.usefixtures("no_server_pass")]

FOREIGN_COMMAND = "sleep"


def _split(socket: Path, target: str) -> str:
    """What a team or a plugin does: split a pane into the window of ``target``."""
    pane = tmux(socket, "split-window", "-d", "-h", "-t", target, "-P", "-F", "#{pane_id}",
                "--", FOREIGN_COMMAND, "600").strip()
    assert pane.startswith("%"), pane
    return pane


def _window_panes(socket: Path, window: str) -> list[str]:
    return tmux(socket, "list-panes", "-t", window, "-F", "#{pane_id}").split()


def _open_view_recoveries(engine: Engine, view_id: str) -> list[recovery.RecoveryRecord]:
    return [r for r in recovery.list_recoveries(engine)
            if r.subject_type == "view" and r.subject_id == view_id]


def _extras(engine: Engine) -> list[ExtraPane]:
    return extra_panes(engine.stage.snapshot())


def _records(engine: Engine) -> list[tuple[str, str, str, str]]:
    """The registry's extra-pane rows: (pane, view, frame, command)."""
    return [tuple(r) for r in engine.conn.execute(
        "SELECT pane_id, view_id, frame_id, command FROM extra_panes ORDER BY pane_id")]


def _listed(engine: Engine) -> dict[str, tuple[ExtraPaneSummary, ...]]:
    """Frame id -> its extra panes, as a navigator decodes the state envelope."""
    state = decode_checked(encode_canonical(build_navigator_state(engine)),
                           schema=NavigatorState)
    return {f.frame_id: f.extra_panes for p in state.projects for f in p.frames
            if f.extra_panes}


def _pid(socket: Path, pane: str) -> int:
    return int(tmux(socket, "display-message", "-p", "-t", pane, "#{pane_pid}").strip())


def _view_window(engine: Engine, view_id: str) -> str:
    return engine.conn.execute("SELECT tmux_window_id FROM user_views WHERE view_id = ?",
                               (view_id,)).fetchone()[0]


def test_a_split_is_moved_out_keeps_running_and_opens_no_recovery(
        tmp_path: Path, tmux_socket: Path) -> None:
    engine, world = build_world(tmp_path, tmux_socket, with_child=False)
    main = pane_of(engine, world.workspace_id)
    assert main is not None
    window = _view_window(engine, world.view_id)
    split = _split(tmux_socket, main)
    pid = _pid(tmux_socket, split)
    assert len(_window_panes(tmux_socket, window)) == 3

    # The split is not main: the view still shows its active frame, before any move.
    layout = engine.stage.snapshot().view(world.view_id)
    assert layout is not None and layout.main is not None and layout.main.pane_id == main
    assert [p.pane_id for p in layout.foreign] == [split]

    report = reconcile(engine)
    assert (report.foreign_panes_moved, report.recoveries_opened) == (1, 0)
    navigator = engine.conn.execute("SELECT navigator_pane_id FROM user_views"
                                    " WHERE view_id = ?", (world.view_id,)).fetchone()[0]
    assert sorted(_window_panes(tmux_socket, window)) == sorted([navigator, main])
    moved = engine.stage.snapshot().pane(split)
    assert moved is not None and moved.parked and not moved.dead
    assert moved.pane_pid == pid  # the same process, moved, not restarted
    assert (moved.role, moved.serves_view, moved.frame_id) == (
        PaneRole.EXTRA, world.view_id, world.workspace_id)
    assert _extras(engine) == [ExtraPane(split, world.view_id, world.workspace_id,
                                         FOREIGN_COMMAND, False)]
    assert _records(engine) == [(split, world.view_id, world.workspace_id, FOREIGN_COMMAND)]
    assert _open_view_recoveries(engine, world.view_id) == []
    assert problems(engine, world.view_id) == []

    # NavigatorState lists it under the frame the view showed: an opaque id and the
    # process name, no pane locator; the envelope round-trips through its schema.
    ((extra_id,),) = engine.conn.execute("SELECT extra_pane_id FROM extra_panes").fetchall()
    listed = _listed(engine)
    assert listed == {world.workspace_id: (ExtraPaneSummary(extra_pane_id=extra_id,
                                                            command=FOREIGN_COMMAND),)}
    assert split.encode() not in encode_canonical(build_navigator_state(engine))

    # The next passes leave it where it is and open nothing (no loop).
    for _ in range(2):
        again = reconcile(engine)
        assert (again.foreign_panes_moved, again.recoveries_opened) == (0, 0)
    assert engine.stage.snapshot().pane(split).pane_pid == pid
    assert len(_records(engine)) == 1


def test_the_extra_pane_exiting_removes_its_record(tmp_path: Path, tmux_socket: Path) -> None:
    engine, world = build_world(tmp_path, tmux_socket, with_child=False)
    split = _split(tmux_socket, str(pane_of(engine, world.workspace_id)))
    pid = _pid(tmux_socket, split)
    assert reconcile(engine).foreign_panes_moved == 1
    assert [e.pane_id for e in _extras(engine)] == [split]
    assert [r[0] for r in _records(engine)] == [split]

    os.kill(pid, signal.SIGTERM)  # what runs in it ends
    assert retry_until(lambda: engine.stage.snapshot().pane(split) is None, 5.0)
    assert _extras(engine) == []
    report = reconcile(engine)
    assert (report.foreign_panes_moved, report.recoveries_opened) == (0, 0)
    assert _records(engine) == []  # the record went with the pane
    assert _listed(engine) == {}
    assert problems(engine, world.view_id) == []
    assert _open_view_recoveries(engine, world.view_id) == []


def test_a_second_split_is_listed_beside_the_first(tmp_path: Path, tmux_socket: Path) -> None:
    engine, world = build_world(tmp_path, tmux_socket, with_child=False)
    main = str(pane_of(engine, world.workspace_id))
    first = _split(tmux_socket, main)
    assert reconcile(engine).foreign_panes_moved == 1
    second = _split(tmux_socket, main)
    third = _split(tmux_socket, main)  # two at once are moved by the same pass
    report = reconcile(engine)
    assert (report.foreign_panes_moved, report.recoveries_opened) == (2, 0)
    assert sorted(e.pane_id for e in _extras(engine)) == sorted([first, second, third])
    snap = engine.stage.snapshot()
    windows = {snap.pane(p).window_id for p in (first, second, third)}
    assert len(windows) == 3  # each in its own holding window
    assert sorted(r[0] for r in _records(engine)) == sorted([first, second, third])
    assert len(_window_panes(tmux_socket, _view_window(engine, world.view_id))) == 2
    assert problems(engine, world.view_id) == []


def test_a_split_while_a_push_is_in_flight(tmp_path: Path, tmux_socket: Path) -> None:
    engine, world = build_world(tmp_path, tmux_socket, with_child=False)
    with write_transaction(engine.conn) as conn:  # the push waits for this agent's Stop
        sessions_ops.record_activity(conn, session_of(engine, world.workspace_id),
                                     activity=Activity.WORKING, reason=ActivityReason.UNKNOWN,
                                     runtime_presence="live", turn_id=None,
                                     provider_version=None, now=engine.now())
    pushed = engine.frame_push(new_request_id(), world.workspace_id, "Task", "brief")
    assert pushed.state == "prepared"
    split = _split(tmux_socket, str(pane_of(engine, world.workspace_id)))

    report = reconcile(engine)
    assert (report.foreign_panes_moved, report.recoveries_opened) == (1, 0)
    assert [e.pane_id for e in _extras(engine)] == [split]
    state = engine.conn.execute("SELECT state FROM view_transitions WHERE transition_id = ?",
                                (pushed.transition_id,)).fetchone()[0]
    assert state == "prepared"  # the push still waits, untouched

    mark_ready(engine, world.workspace_id)  # the Stop: the push runs
    sagas.execute(engine, pushed.transition_id)
    assert engine.conn.execute("SELECT state FROM view_transitions WHERE transition_id = ?",
                               (pushed.transition_id,)).fetchone()[0] in (
        "presented", "awaiting_claim", "settling", "completed")
    assert reconcile(engine).recoveries_opened == 0
    assert problems(engine, world.view_id) == []
    extra = engine.stage.snapshot().pane(split)
    assert extra is not None and extra.parked and not extra.dead
    assert _open_view_recoveries(engine, world.view_id) == []


def test_a_placement_orphaned_whose_cause_is_gone_closes_by_itself(
        tmp_path: Path, tmux_socket: Path) -> None:
    """The issue's other half: after the extra pane exited, the recovery stayed open until
    R. One opened for a view that shows its committed placement closes on the next pass."""
    engine, world = build_world(tmp_path, tmux_socket, with_child=False)
    with write_transaction(engine.conn) as conn:
        opened = recoveries_ops.open_recovery(
            conn, recovery_id=engine.ids.new_id(), host_id=engine.host_id,
            kind=RecoveryKind.PLACEMENT_ORPHANED, subject_type="view",
            subject_id=world.view_id, actionability=Actionability.SAFE_AUTO,
            explanation="Main shows another pane than the view's active frame.",
            now=engine.now())
    assert engine.conn.execute("SELECT state FROM user_views WHERE view_id = ?",
                               (world.view_id,)).fetchone()[0] == "degraded"
    reconcile(engine)
    assert recovery.show(engine, opened).state == "resolved"
    assert engine.conn.execute("SELECT state FROM user_views WHERE view_id = ?",
                               (world.view_id,)).fetchone()[0] == "ready"
    assert reconcile(engine).recoveries_opened == 0


def test_a_recovery_r_cannot_fix_stays_open_and_does_not_reopen(
        tmp_path: Path, tmux_socket: Path) -> None:
    """R never says handled while the cause remains: here a Switchboard pane (the parked
    workspace agent) joined into the window by hand, which the recover transition does
    not undo. The old code resolved the recovery and the next pass opened it again."""
    engine, world = build_world(tmp_path, tmux_socket)
    child, workspace = pane_of(engine, world.child_id), pane_of(engine, world.workspace_id)
    assert child is not None and workspace is not None
    tmux(tmux_socket, "join-pane", "-d", "-h", "-s", workspace, "-t", child)
    assert reconcile(engine).recoveries_opened == 1
    (found,) = _open_view_recoveries(engine, world.view_id)
    assert (found.kind, found.actionability) == ("placement_orphaned", "safe_auto")

    with pytest.raises(Conflict) as refused:
        recovery.execute(engine, new_request_id(), found.recovery_id)
    assert refused.value.code == "recover_failed"
    assert "stays open" in refused.value.message
    assert recovery.show(engine, found.recovery_id).state == "open"
    assert reconcile(engine).recoveries_opened == 0  # the same row, not a new one
    assert [r.recovery_id for r in _open_view_recoveries(engine, world.view_id)] == [
        found.recovery_id]


def _extra_id(engine: Engine, pane: str) -> str:
    return engine.conn.execute("SELECT extra_pane_id FROM extra_panes WHERE pane_id = ?",
                               (pane,)).fetchone()[0]


def test_enter_shows_the_extra_pane_in_main_and_back_and_x_closes_it(
        tmp_path: Path, tmux_socket: Path) -> None:
    engine, world = build_world(tmp_path, tmux_socket, with_child=False)
    agent = str(pane_of(engine, world.workspace_id))
    split = _split(tmux_socket, agent)
    reconcile(engine)
    extra_id = _extra_id(engine, split)

    assert show_extra_pane(engine, extra_id) == "extra"  # Enter on its row
    layout = engine.stage.snapshot().view(world.view_id)
    assert layout.main.pane_id == split and not layout.main.input_off
    parked = engine.stage.snapshot().pane(agent)
    assert parked.parked and parked.input_off  # the agent runs on, fenced, in holding
    report = reconcile(engine)  # the person's choice is no orphan
    assert (report.recoveries_opened, report.foreign_panes_moved) == (0, 0)
    assert _open_view_recoveries(engine, world.view_id) == []
    assert [r[0] for r in _records(engine)] == [split]

    assert show_extra_pane(engine, extra_id) == "frame"  # Enter again: the agent back
    assert engine.stage.snapshot().view(world.view_id).main.pane_id == agent
    assert engine.stage.snapshot().pane(split).parked
    assert problems(engine, world.view_id) == []

    show_extra_pane(engine, extra_id)
    assert close_extra_pane(engine, extra_id) is True  # x while shown: agent back, pane gone
    snap = engine.stage.snapshot()
    assert snap.pane(split) is None and snap.view(world.view_id).main.pane_id == agent
    assert _records(engine) == [] and _listed(engine) == {}
    assert reconcile(engine).recoveries_opened == 0
    assert problems(engine, world.view_id) == []
    with pytest.raises(NotFound):
        show_extra_pane(engine, extra_id)


def test_an_extra_pane_of_a_frame_not_shown_is_refused_by_name(
        tmp_path: Path, tmux_socket: Path) -> None:
    engine, world = build_world(tmp_path, tmux_socket)
    split = _split(tmux_socket, str(pane_of(engine, world.child_id)))
    reconcile(engine)
    extra_id = _extra_id(engine, split)
    assert _records(engine)[0][2] == world.child_id  # listed under the frame it came from
    mark_ready(engine, world.child_id)
    engine.view_focus(new_request_id(), world.view_id, world.workspace_id)
    with pytest.raises(Conflict) as refused:
        show_extra_pane(engine, extra_id)
    assert refused.value.code == "frame_not_shown" and "Task" in refused.value.message
    assert engine.stage.snapshot().view(world.view_id).main.pane_id == \
        pane_of(engine, world.workspace_id)  # nothing moved
    assert close_extra_pane(engine, extra_id) is True  # x works from anywhere
    assert engine.stage.snapshot().pane(split) is None


def test_a_server_restart_forgets_the_records_of_its_extra_panes(
        tmp_path: Path, tmux_socket: Path) -> None:
    engine, world = build_world(tmp_path, tmux_socket, with_child=False)
    _split(tmux_socket, str(pane_of(engine, world.workspace_id)))
    reconcile(engine)
    assert len(_records(engine)) == 1
    tmux(tmux_socket, "kill-server")  # this test's own private server
    engine.stage.ensure_server(refresh=True)  # a new server on the same socket
    reconcile(engine)
    assert _records(engine) == [] and _listed(engine) == {}


def _width(socket: Path, pane: str) -> int:
    return int(tmux(socket, "display-message", "-p", "-t", pane, "#{pane_width}").strip())


def test_a_split_that_laid_the_window_out_again_gives_the_navigator_its_width_back(
        tmp_path: Path, tmux_socket: Path) -> None:
    """What Claude Code's tmux teammates do (2.1.332): split, then ``select-layout
    main-vertical`` and ``resize-pane -x 30%`` of the window's first pane."""
    engine, world = build_world(tmp_path, tmux_socket, with_child=False)
    main = pane_of(engine, world.workspace_id)
    assert main is not None
    window = _view_window(engine, world.view_id)
    navigator = engine.conn.execute("SELECT navigator_pane_id FROM user_views"
                                    " WHERE view_id = ?", (world.view_id,)).fetchone()[0]
    width = _width(tmux_socket, navigator)
    split = _split(tmux_socket, main)
    tmux(tmux_socket, "select-layout", "-t", window, "main-vertical")
    tmux(tmux_socket, "resize-pane", "-t", navigator, "-x", "30%")
    assert _width(tmux_socket, navigator) != width

    assert reconcile(engine).foreign_panes_moved == 1
    assert sorted(_window_panes(tmux_socket, window)) == sorted([navigator, main])
    assert _width(tmux_socket, navigator) == width
    moved = engine.stage.snapshot().pane(split)
    assert moved is not None and moved.parked and not moved.dead
    assert problems(engine, world.view_id) == []
