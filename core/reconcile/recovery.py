"""Recoveries and reconciliation: uncertainty becomes a durable, stable row.

``reconcile`` reads the tmux server once (one snapshot: identity and every
pane) and compares it with the registry: live surfaces whose pane vanished,
views recorded on a restarted server, a view whose main shows another pane
than its committed placement, executing transitions whose lease expired,
submitted control turns past their watchdog. It finishes what the pane
metadata proves and records a recovery for everything else. It never repeats
a swap it cannot prove did not happen, and never types a control line.

Safe-auto recoveries of a view run as a ``recover`` ViewTransition through the
same saga as every other transition. An explicit project entry (``enter_view``)
runs the ``server_restarted`` one itself, so opening a project after a tmux
server restart is not a dead end. Reconcile also respawns, in place, navigator
panes that crashed or were quit.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import TYPE_CHECKING

from core.model.enums import (
    Actionability,
    PlacementState,
    RecoveryKind,
    RecoveryState,
    RuntimePresence,
    TransitionKind,
    TransitionState,
)
from core.model.errors import Conflict, InvariantViolation, SwitchboardError, TmuxError
from core.reconcile import settlement
from core.tmux.errors import ServerIdentityMismatch, TmuxUnavailable
from core.tmux.panes import PaneRole, PaneSnapshot, ServerSnapshot, ViewLayout
from storage.connection import write_transaction
from storage.operations import frames as frames_ops
from storage.operations import recoveries as recoveries_ops
from storage.operations import sessions as sessions_ops
from storage.operations import transitions as transitions_ops
from storage.operations import views as views_ops

if TYPE_CHECKING:
    from core.engine.engine import Engine
    from core.engine.stage_port import StagePort


@dataclass(frozen=True)
class RecoveryRecord:
    recovery_id: str
    kind: str
    subject_type: str
    subject_id: str
    actionability: str
    state: str
    explanation: str


def list_recoveries(engine: Engine, *, include_closed: bool = False) -> list[RecoveryRecord]:
    where = "" if include_closed else " WHERE state = 'open'"
    return [RecoveryRecord(r["recovery_id"], r["kind"], r["subject_type"], r["subject_id"],
                           r["actionability"], r["state"], r["bounded_explanation"])
            for r in engine.conn.execute(
                f"SELECT * FROM recoveries{where} ORDER BY created_at, recovery_id")]


def show(engine: Engine, recovery_id: str) -> RecoveryRecord:
    r = recoveries_ops.get_recovery(engine.conn, recovery_id)
    return RecoveryRecord(r["recovery_id"], r["kind"], r["subject_type"], r["subject_id"],
                          r["actionability"], r["state"], r["bounded_explanation"])


def dismiss(engine: Engine, request_id: str, recovery_id: str) -> RecoveryRecord:
    return _close(engine, recovery_id, RecoveryState.DISMISSED)


def resolve(engine: Engine, request_id: str, recovery_id: str) -> RecoveryRecord:
    """A person says the uncertain outcome is settled (after looking)."""
    return _close(engine, recovery_id, RecoveryState.RESOLVED)


def _close(engine: Engine, recovery_id: str, to_state: RecoveryState) -> RecoveryRecord:
    """open -> to_state; a retry that finds it already there changes nothing, and
    one closed the other way is refused by name."""
    with write_transaction(engine.conn) as conn:
        state = recoveries_ops.get_recovery(conn, recovery_id)["state"]
        if state not in ("open", to_state.value):
            raise Conflict(f"recovery {recovery_id} is already {state}; nothing changed",
                           code="recovery_closed")
        if state == "open":
            recoveries_ops.close_recovery(conn, recovery_id, to_state, engine.now())
    return show(engine, recovery_id)


def execute(engine: Engine, request_id: str, recovery_id: str) -> RecoveryRecord:
    """Run a safe_auto recovery through the engine; others explain what to do.

    A view's recovery becomes a ``recover`` transition that presents the
    view's committed active frame (after rebuilding the window on the live
    server when the old one is gone); it resolves only if that transition
    completed.
    """
    record = show(engine, recovery_id)
    if record.state != "open":
        return record
    if record.actionability != Actionability.SAFE_AUTO:
        raise Conflict(f"recovery {recovery_id} is {record.actionability}: "
                       f"{record.explanation}", code="not_safe_auto")
    if record.subject_type == "view" and engine.stage is not None:
        _recover_view(engine, request_id, record)
    else:
        reconcile(engine)
    with write_transaction(engine.conn) as conn:
        row = recoveries_ops.get_recovery(conn, recovery_id)
        if row["state"] == "open":
            recoveries_ops.close_recovery(conn, recovery_id, RecoveryState.RESOLVED,
                                          engine.now())
        if record.subject_type == "view" and engine.stage is not None:
            # The view is presented as committed and nothing is in flight: every other
            # safe_auto recovery about it asked for exactly that.
            for other in conn.execute(
                    "SELECT recovery_id FROM recoveries WHERE subject_type = 'view'"
                    " AND subject_id = ? AND state = 'open' AND actionability = 'safe_auto'",
                    (record.subject_id,)).fetchall():
                recoveries_ops.close_recovery(conn, other["recovery_id"],
                                              RecoveryState.RESOLVED, engine.now())
    return show(engine, recovery_id)


def resolve_settled_controls(engine: Engine, now: int) -> int:
    """Older control_submit_uncertain records whose control turn and transition have
    both settled since (the claim came through another path): resolved."""
    with write_transaction(engine.conn) as conn:
        rows = conn.execute(
            "SELECT r.recovery_id FROM recoveries r JOIN control_turns c"
            " ON c.control_turn_id = r.subject_id JOIN view_transitions t"
            " ON t.transition_id = c.transition_id WHERE r.kind = ? AND r.state = 'open'"
            " AND c.state IN ('claimed', 'settled') AND t.state = 'completed'",
            (RecoveryKind.CONTROL_SUBMIT_UNCERTAIN.value,)).fetchall()
        for row in rows:
            recoveries_ops.close_recovery(conn, row["recovery_id"], RecoveryState.RESOLVED, now)
    return len(rows)


def enter_view(engine: Engine, request_id: str, view_id: str) -> None:
    """The view's window for an explicit entry (`switchboard open`, the navigator's enter).

    When the view's tmux server is gone (nothing answers on the socket, or a
    server with another identity does), the entry does what the person would
    otherwise do by hand: start or use the live server, record the restart
    (``reconcile`` opens ``server_restarted`` for every view and surface of the
    old server) and run this view's safe_auto recovery, which rebuilds the
    window on the live server. Agents are not restarted: their frames show
    stopped and `n` resumes each session by its exact id. Nothing is done
    through a locator of the old server; the stage's identity guards refuse it.
    """
    from core.engine.launcher import ensure_view_window

    try:
        ensure_view_window(engine, view_id)
        return
    except (TmuxUnavailable, ServerIdentityMismatch):
        pass  # refused before anything was changed: the view's server is not the live one
    stage = engine.require_stage()
    try:
        stage.ensure_server(refresh=True)
    except TmuxError as exc:
        said = exc.detail if isinstance(exc, TmuxUnavailable) else exc.message
        raise TmuxUnavailable(
            f"The tmux server of this view is gone and starting a new one on "
            f"{stage.socket_path} failed ({said}). Check that `tmux` runs for this user "
            "and that the socket's directory is writable.", detail=said) from exc
    reconcile(engine)
    failure: SwitchboardError | None = None
    row = engine.conn.execute(
        "SELECT recovery_id FROM recoveries WHERE kind = ? AND subject_type = 'view'"
        " AND subject_id = ? AND state = 'open'",
        (RecoveryKind.SERVER_RESTARTED.value, view_id)).fetchone()
    if row is not None:
        try:
            execute(engine, f"{request_id}:recover:{row['recovery_id']}", row["recovery_id"])
        except SwitchboardError as exc:
            failure = exc  # the window may stand already; the recovery stays open
    try:
        ensure_view_window(engine, view_id)
    except (TmuxUnavailable, ServerIdentityMismatch) as exc:
        why = (failure.message if failure is not None else exc.message).rstrip(". ")
        raise Conflict(
            f"The tmux server of this view restarted and rebuilding the view on the running "
            f"server failed: {why}. `switchboard recovery list` shows the view's "
            "server_restarted recovery (`switchboard reconcile` records it if it is missing) "
            "and `switchboard recovery run ID` retries the rebuild.",
            code="view_rebuild_failed") from exc


def _recover_view(engine: Engine, request_id: str, record: RecoveryRecord) -> None:
    from core.engine import sagas

    stage = engine.require_stage()
    view_id = record.subject_id
    view = views_ops.get_view(engine.conn, view_id)
    if view["active_frame_id"] is None:
        raise Conflict(f"view {view_id} shows no frame; enter its project again")
    snap = stage.snapshot()
    live_id = _live_server_id(engine, snap)
    if view["tmux_server_id"] != live_id or snap is None or snap.view(view_id) is None:
        _rebind_view(engine, view)
        snap = stage.snapshot()
    if _settle_pending(engine, view_id):
        return  # a waiting push/return ran: it presented its target itself
    view = views_ops.get_view(engine.conn, view_id)
    layout = snap.view(view_id) if snap is not None else None
    if layout is not None and layout.main is None and not layout.extra_panes and \
            stage.restore_main(view) is not None:
        snap = stage.snapshot()  # main was killed: the placeholder is main again
        layout = snap.view(view_id) if snap is not None else None
        view = views_ops.get_view(engine.conn, view_id)
    if layout is not None and layout.main is not None and \
            layout.main.pane_id != view["main_pane_id"]:
        with write_transaction(engine.conn) as conn:
            views_ops.set_main_pane(conn, view_id, layout.main.pane_id, engine.now())

    def body(conn: sqlite3.Connection, fp: str, now: int) -> tuple[str, str | None]:
        current = views_ops.get_view(conn, view_id)
        pending = transitions_ops.pending_for_view(conn, view_id)
        if pending is not None:
            raise Conflict(f"a {pending['kind']} transition is {pending['state']} in this "
                           "view; reconcile it or let it settle first",
                           code="transition_in_flight")
        target = frames_ops.get_frame(conn, current["active_frame_id"])
        context = frames_ops.get_context(conn, target["work_context_id"])
        shown = layout.main.surface_id if layout is not None and layout.main else None
        source = conn.execute(
            "SELECT p.frame_id FROM frame_placements p WHERE p.surface_id = ?"
            " AND p.state <> 'orphaned'", (shown,)).fetchone() if shown else None
        transition_id = engine.ids.new_id()
        transitions_ops.insert_transition(
            conn, transition_id=transition_id, request_id=request_id, fingerprint=fp,
            host_id=engine.host_id, view_id=view_id, kind=TransitionKind.RECOVER,
            source_frame_id=source["frame_id"] if source else None,
            target_frame_id=target["frame_id"], work_context_id=target["work_context_id"],
            expected_view_revision=current["revision"],
            expected_claim_generation=context["claim_generation"], now=now)
        return "transition", transition_id

    transition_id = engine.run_request(request_id, "recovery.execute",
                                       {"recovery_id": record.recovery_id}, body,
                                       lambda tid: tid, lambda tid: tid)
    if transition_id is None:  # body always records the recover transition's id
        raise InvariantViolation(f"request {request_id} recorded no transition")
    sagas.execute(engine, transition_id)
    row = transitions_ops.get_transition(engine.conn, transition_id)
    if row["state"] != "completed":
        raise Conflict(f"the recover transition ended {row['state']}: {row['failure']}; "
                       "the recovery stays open", code="recover_failed")


def _settle_pending(engine: Engine, view_id: str) -> bool:
    """What a view recovery does first with the view's transition in flight.

    An unclaimed or unsettled presentation settles (``core.reconcile.settlement``: the
    brief or handoff stays claimable); a prepared push/return that no longer
    waits for a Stop runs now; one that still waits is refused by name, with
    the key that withdraws it. An executing one belongs to its executor until
    its lease expires (reconcile then decides from pane evidence).
    """
    from core.engine import sagas

    pending = transitions_ops.pending_for_view(engine.conn, view_id)
    if pending is None:
        return False
    if pending["state"] in ("presented", "awaiting_claim", "settling"):
        for pane in settlement.settle_unclaimed(engine, view_id):
            engine.require_stage().kill(pane)
        return False
    if pending["state"] == "prepared":
        if sagas.waits_for_stop(engine, pending["transition_id"]):
            who = pending["source_frame_id"] if settlement.agent_working(
                engine.conn, pending["source_frame_id"]) else pending["target_frame_id"]
            title = frames_ops.get_frame(engine.conn, who)["title"]
            way_out = "press w (Withdraw) to cancel it" if pending["kind"] == "push" else \
                f"select “{title}” and press s to stop that agent so it runs now"
            raise Conflict(f"the {pending['kind']} still waits for “{title}” to finish its "
                           f"turn; {way_out}, or run this again after that Stop",
                           code="transition_in_flight")
        sagas.execute(engine, pending["transition_id"])
        row = transitions_ops.get_transition(engine.conn, pending["transition_id"])
        if row["state"] == "failed":
            raise Conflict(f"the waiting {row['kind']} failed: {row['failure']}",
                           code="recover_failed")
        return True
    return False


def _rebind_view(engine: Engine, view: sqlite3.Row) -> None:
    """Build the view's window on the live server; frames whose panes are gone become
    empty (stopped_affinity), so `n` resumes their sessions."""
    from core.engine.sagas import stop_runtime

    stage = engine.require_stage()
    stage.ensure_server(refresh=True)
    frame = frames_ops.get_frame(engine.conn, view["active_frame_id"])
    with stage.view_lock():
        window_id, main_pane, nav_pane = stage.ensure_view(view, frame["title"], rebind=True)
    snap = stage.snapshot()
    now = engine.now()
    with write_transaction(engine.conn) as conn:
        server_id = stage.server_row(conn)
        views_ops.bind_view_tmux(conn, view["view_id"], tmux_server_id=server_id,
                                 window_id=window_id, main_pane_id=main_pane,
                                 navigator_pane_id=nav_pane, now=now)
        for placement in conn.execute(
                "SELECT * FROM frame_placements WHERE view_id = ? AND state IN"
                " ('active', 'parked', 'staged') AND surface_id IS NOT NULL",
                (view["view_id"],)).fetchall():
            surface = sessions_ops.get_surface(conn, placement["surface_id"])
            if surface["lifecycle_state"] == "live" and \
                    _pane_alive(snap, surface, server_id) is not None:
                continue
            if surface["lifecycle_state"] == "live":
                sessions_ops.move_surface(conn, surface["surface_id"], "orphaned", now)
            stop_runtime(conn, placement["frame_id"], now)


LAUNCH_REPORT_MS = 30_000
"""An authorized launch not started after this long was interrupted: creating its
pane is one tmux process, so whoever authorized it is gone (the transition lease)."""

BIND_TIMEOUT_MS = 60_000
"""A started provider, its gate open, that no hook has bound after this long."""


@dataclass(frozen=True)
class ReconcileReport:
    panes_seen: int
    surfaces_lost: int
    transitions_finished: int
    transitions_rolled_back: int
    turns_marked_uncertain: int
    recoveries_opened: int
    transitions_resumed: int = 0
    views_repaired: int = 0
    panes_stopped: int = 0
    sessions_aged: int = 0
    launches_adopted: int = 0
    launches_failed: int = 0
    providers_exited: int = 0
    binds_overdue: int = 0
    surfaces_found: int = 0
    navigators_respawned: int = 0
    transitions_run: int = 0
    transitions_settled: int = 0
    transitions_stalled: int = 0
    mains_restored: int = 0


def reconcile(engine: Engine) -> ReconcileReport:
    """Compare tmux with the registry once; finish, roll back or record a recovery."""
    from core.reconcile.provider_checks import reconcile_stale_activity

    now = engine.now()
    aged = len(reconcile_stale_activity(engine.conn, now))  # a lost Stop: working -> unknown
    stage: StagePort | None = engine.stage
    seen = _others_commits(engine.conn)
    snap = stage.snapshot() if stage is not None else None
    server_id = _live_server_id(engine, snap)
    lost = finished = rolled = resumed = uncertain = repaired = stopped = 0
    adopted = failed = exited = overdue = found = revived = restored = 0
    conn = engine.conn
    before = conn.execute("SELECT COUNT(*) FROM recoveries").fetchone()[0]
    if stage is not None:
        busy = _busy_views(conn, now)
        adopted, failed = _interrupted_launches(engine, snap, server_id, busy, now)
        exited = _exited_providers(engine, snap, server_id, busy, now)
        with write_transaction(conn) as tx:
            # Read tmux again while holding the write lock: a launch records its pane
            # as live and a saga marks its view busy only in a write transaction, so
            # this reading is never older than the rows it is compared with (an older
            # one would call a just-launched pane vanished and orphan its surface).
            busy = _busy_views(tx, now)
            if adopted or failed or exited or _others_commits(tx) != seen:
                snap = stage.snapshot()
            lost = _check_surfaces(engine, tx, snap, server_id, now)
            restored = _restore_mains(engine, tx, snap, server_id, busy, now)
            if restored:
                snap = stage.snapshot()
            found = _found_surfaces(tx, snap, server_id, now)
            repaired = _check_views(engine, tx, snap, server_id, busy, now)
            overdue = _bind_timeouts(engine, tx, now)
    for t in conn.execute("SELECT * FROM view_transitions WHERE state = 'executing'"
                          " AND lease_expires_at < ? ORDER BY created_at",
                          (now,)).fetchall():
        outcome = _interrupted(engine, t, snap, server_id, now)
        finished += outcome == "finished"
        resumed += outcome == "resumed"
        rolled += outcome == "rolled_back"
        if outcome in ("finished", "resumed"):
            settlement.orphaned_wait(engine, t["transition_id"], now)
    uncertain = _watchdog(engine, now)
    swept = settlement.sweep(engine, now)
    resolve_settled_controls(engine, now)
    if stage is not None and snap is not None:
        if finished or resumed:  # those commits stopped panes themselves: read again
            snap = stage.snapshot() or snap
        stopped = _stop_stray_panes(engine, snap, server_id)
        revived = _revive_navigators(engine, snap, server_id)
    opened = conn.execute("SELECT COUNT(*) FROM recoveries").fetchone()[0] - before
    return ReconcileReport(len(snap.panes) if snap is not None else 0, lost, finished, rolled,
                           uncertain, opened, resumed, repaired, stopped, aged, adopted,
                           failed, exited, overdue, found, revived, swept.ran,
                           swept.completed, swept.stalled, restored)


def _others_commits(conn: sqlite3.Connection) -> int:
    """SQLite's count of commits by other connections, as this connection sees it.

    Unchanged between the first tmux read and the write lock means no launch or
    saga committed in between, so that read is not older than the rows it is
    compared with and one `list-panes` serves the whole reconcile.
    """
    return conn.execute("PRAGMA data_version").fetchone()[0]


def _busy_views(conn: sqlite3.Connection, now: int) -> set[str]:
    """Views whose tmux state belongs to someone at work: a transition executing, or
    a start presenting its pane (main shows it a moment before staged -> active)."""
    return {row[0] for row in conn.execute(
        "SELECT view_id FROM view_transitions WHERE state = 'executing'"
        " UNION SELECT p.view_id FROM frame_placements p"
        " JOIN launch_intents l ON l.frame_id = p.frame_id"
        " WHERE p.state = 'staged' AND l.state IN ('planned', 'authorized', 'started')"
        " AND l.updated_at >= ?", (now - LAUNCH_REPORT_MS,))}


def _live_server_id(engine: Engine, snap: ServerSnapshot | None) -> str | None:
    """The tmux_servers row of whoever answers now (the stage rebinds to it)."""
    if snap is None or engine.stage is None:
        return None
    engine.stage.adopt(snap.identity)
    with write_transaction(engine.conn) as conn:
        return engine.stage.server_row(conn, snap.identity)


def _pane_alive(snap: ServerSnapshot | None, surface: sqlite3.Row,
                server_id: str | None) -> PaneSnapshot | None:
    """The surface's exact pane, if it is on the live server, tagged with it and alive."""
    if snap is None or surface["tmux_server_id"] != server_id or not surface["pane_id"]:
        return None
    pane = snap.pane(surface["pane_id"])
    if pane is None or pane.surface_id != surface["surface_id"] or pane.dead:
        return None
    return pane


def _own_pane(snap: ServerSnapshot | None, surface: sqlite3.Row,
              server_id: str | None) -> PaneSnapshot | None:
    """The surface's exact pane on the live server, alive or dead."""
    if snap is None or surface["tmux_server_id"] != server_id or not surface["pane_id"]:
        return None
    pane = snap.pane(surface["pane_id"])
    return pane if pane is not None and pane.surface_id == surface["surface_id"] else None


def _check_surfaces(engine: Engine, conn: sqlite3.Connection, snap: ServerSnapshot | None,
                    server_id: str | None, now: int) -> int:
    lost = 0
    for s in conn.execute("SELECT * FROM surfaces WHERE lifecycle_state = 'live'").fetchall():
        if _own_pane(snap, s, server_id) is not None:
            continue  # alive, or exited: _exited_providers (next pass if its view was busy)
        same_server = server_id is not None and s["tmux_server_id"] == server_id
        lost += 1
        sessions_ops.move_surface(conn, s["surface_id"], "orphaned", now)
        placement = conn.execute(
            "SELECT * FROM frame_placements WHERE surface_id = ? AND state IN"
            " ('active', 'parked', 'staged')", (s["surface_id"],)).fetchone()
        title = "the frame"
        if placement is not None:
            row = frames_ops.get_frame(conn, placement["frame_id"])
            title = f"“{row['title']}”"
            # The pane is gone from the server that runs, or its server is gone (one
            # socket, one server: another identity answering means the old one died):
            # the runtime is over. The frame becomes empty (stopped), so its badge no
            # longer says live and n resumes its session by exact id.
            from core.engine.sagas import stop_runtime
            stop_runtime(conn, placement["frame_id"], now)
        recoveries_ops.open_recovery(
            conn, recovery_id=engine.ids.new_id(), host_id=engine.host_id,
            kind=RecoveryKind.PANE_VANISHED if same_server else RecoveryKind.SERVER_RESTARTED,
            subject_type="surface", subject_id=s["surface_id"],
            actionability=Actionability.MANUAL,
            explanation=(f"The agent pane of {title} is gone; its runtime is stopped and the "
                         f"session kept" if same_server else
                         f"The tmux server of {title} restarted; old pane locators are invalid")
            + f". Select {title} and press n to resume its session (this closes when it "
              "runs again).", now=now)
    return lost


def _restore_mains(engine: Engine, conn: sqlite3.Connection, snap: ServerSnapshot | None,
                   server_id: str | None, busy: set[str], now: int) -> int:
    """Views whose window holds only the navigator (the pane in main was killed): a
    placeholder is split in as main, so the view shows its (now empty) active frame."""
    if snap is None or server_id is None:
        return 0
    restored = 0
    for view in conn.execute("SELECT * FROM user_views WHERE state <> 'retired'"
                             " AND tmux_server_id = ? AND tmux_window_id IS NOT NULL",
                             (server_id,)).fetchall():
        if view["view_id"] in busy:
            continue
        try:
            layout = snap.view(view["view_id"])
        except TmuxError:
            continue
        if layout is None or layout.main is not None or layout.extra_panes:
            continue
        try:
            pane = engine.require_stage().restore_main(view)
        except TmuxError:
            continue  # nothing moved: _check_views opens the view's recovery
        if pane is not None:
            views_ops.set_main_pane(conn, view["view_id"], pane, now)
            restored += 1
    return restored


def _found_surfaces(conn: sqlite3.Connection, snap: ServerSnapshot | None,
                    server_id: str | None, now: int) -> int:
    """Orphaned surfaces whose exact tagged pane runs on the live server: live again.

    Only an earlier reading can have missed such a pane (a server restart
    changes the server identity, so its old locators never match here); the
    ``pane_vanished`` recovery it opened is resolved in the same commit.
    """
    found = 0
    for s in conn.execute("SELECT * FROM surfaces WHERE lifecycle_state = 'orphaned'"
                          " AND tmux_server_id = ?", (server_id,)).fetchall():
        if _pane_alive(snap, s, server_id) is None:
            continue
        sessions_ops.move_surface(conn, s["surface_id"], "live", now)
        recoveries_ops.resolve_for_subject(conn, RecoveryKind.PANE_VANISHED, "surface",
                                           s["surface_id"], now)
        found += 1
    return found


def _expected_main(conn: sqlite3.Connection, view_id: str, server_id: str | None,
                   snap: ServerSnapshot) -> str | None:
    """The pane the committed placement puts in main; None means the placeholder."""
    active = views_ops.active_placement(conn, view_id)
    if active is None or active["surface_id"] is None:
        return None
    surface = sessions_ops.get_surface(conn, active["surface_id"])
    pane = _pane_alive(snap, surface, server_id)
    return pane.pane_id if pane is not None else None


def _shows(layout: ViewLayout | None, pane_id: str | None) -> bool:
    """Whether main holds exactly ``pane_id`` (None: the view's placeholder)."""
    if layout is None or layout.main is None:
        return False
    if pane_id is None:
        return layout.main.role is PaneRole.PLACEHOLDER
    return layout.main.pane_id == pane_id


def _check_views(engine: Engine, conn: sqlite3.Connection, snap: ServerSnapshot | None,
                 server_id: str | None, busy: set[str], now: int) -> int:
    """Restarted servers, stale main locators, mode drift and a wrong pane in main."""
    repaired = 0
    for view in conn.execute("SELECT * FROM user_views WHERE state <> 'retired'"
                             " AND tmux_window_id IS NOT NULL").fetchall():
        view_id = view["view_id"]
        if view["tmux_server_id"] != server_id or snap is None:
            _open(engine, conn, RecoveryKind.SERVER_RESTARTED, view_id, Actionability.SAFE_AUTO,
                  "The tmux server of this view restarted or stopped, so its window and pane "
                  "locators are invalid and nothing was acted on. Running this recovery (or "
                  "opening the project) builds the view on the running server; agents resume "
                  "with n.", now)
            continue
        if view_id in busy:
            continue  # an executing transition owns the view; handled below once expired
        layout = snap.view(view_id)
        if layout is None:
            _open(engine, conn, RecoveryKind.PLACEMENT_ORPHANED, view_id,
                  Actionability.SAFE_AUTO, "The view's tmux window is gone. Running this "
                  "recovery builds it again and shows the active frame.", now)
            continue
        if layout.main is not None and layout.main.pane_id != view["main_pane_id"]:
            views_ops.set_main_pane(conn, view_id, layout.main.pane_id, now)
        if layout.mode != view["mode"] or bool(layout.zoomed) != bool(view["zoomed"]):
            # A mode toggle whose registry write was lost: tmux is the physical truth
            # and mode is model-free, so the observed layout is committed.
            if layout.mode != view["mode"]:
                views_ops.mutate_view(conn, view_id, view["revision"], mode=layout.mode,
                                      now=now)
            views_ops.set_zoom(conn, view_id, layout.zoomed)
            repaired += 1
        if not _shows(layout, _expected_main(conn, view_id, server_id, snap)):
            _open(engine, conn, RecoveryKind.PLACEMENT_ORPHANED, view_id,
                  Actionability.SAFE_AUTO, "Main shows another pane than the view's active "
                  "frame. Running this recovery presents the active frame again.", now)
    return repaired


def _open(engine: Engine, conn: sqlite3.Connection, kind: RecoveryKind, view_id: str,
          actionability: Actionability, explanation: str, now: int) -> str:
    return recoveries_ops.open_recovery(
        conn, recovery_id=engine.ids.new_id(), host_id=engine.host_id, kind=kind,
        subject_type="view", subject_id=view_id, actionability=actionability,
        explanation=_with_way_out(conn, view_id, actionability, explanation), now=now)


def _with_way_out(conn: sqlite3.Connection, view_id: str, actionability: Actionability,
                  explanation: str) -> str:
    """A view recovery names the frame it is about and the key that acts on it."""
    row = conn.execute("SELECT f.title FROM user_views v JOIN frames f"
                       " ON f.frame_id = v.active_frame_id WHERE v.view_id = ?",
                       (view_id,)).fetchone()
    frame = f"“{row['title']}”" if row is not None else "its active frame"
    action = "Press Enter (or R) on this recovery to run it" \
        if actionability is Actionability.SAFE_AUTO else \
        "Press Enter on this recovery to go to the view"
    return f"{explanation[:700]} The view shows {frame}. {action}."


def _interrupted(engine: Engine, t: sqlite3.Row, snap: ServerSnapshot | None,
                 server_id: str | None, now: int) -> str:
    """Settle one executing transition whose owner's lease expired, from pane evidence.

    main shows the target -> the move happened: inspected, committed.
    intent and the target is still parked -> nothing moved: resumed under a
    new lease (the control turn and launch are never repeated).
    Anything else -> failed (rolled_back after moved), with a recovery.
    """
    from core.engine import sagas

    conn = engine.conn
    transition_id, phase = t["transition_id"], t["transport_phase"]
    view = views_ops.get_view(conn, t["view_id"])
    if engine.stage is None:
        if phase == "inspected":
            sagas.commit(engine, transition_id)
            return "finished"
        return _fail(engine, t, f"interrupted at {phase}; tmux was not inspected",
                     RecoveryKind.TRANSITION_INTERRUPTED, Actionability.OPEN_VIEW)
    if snap is None or view["tmux_server_id"] != server_id:
        return _fail(engine, t, f"interrupted at {phase}; the tmux server restarted",
                     RecoveryKind.SERVER_RESTARTED, Actionability.SAFE_AUTO)
    layout = snap.view(t["view_id"])
    if t["kind"] == TransitionKind.MODE and layout is not None:
        return _interrupted_mode(engine, t, layout, now)
    target = views_ops.placement_of_frame(conn, t["target_frame_id"])
    target_pane = None
    if target is not None and target["surface_id"]:
        target_pane = _pane_alive(snap, sessions_ops.get_surface(conn, target["surface_id"]),
                                  server_id)
    target_id = target_pane.pane_id if target_pane is not None else None
    if _shows(layout, target_id):
        with write_transaction(conn) as tx:
            if phase in ("intent", "moved"):
                transitions_ops.advance_phase(tx, transition_id, phase, "inspected", now)
            if layout is not None and layout.main is not None:
                views_ops.set_main_pane(tx, t["view_id"], layout.main.pane_id, now)
        sagas.commit(engine, transition_id)
        return "finished"
    movable = target_pane is None or target_pane.parked
    if phase == "intent" and movable and layout is not None and layout.main is not None:
        with write_transaction(conn) as tx:
            taken = transitions_ops.take_over_at_intent(tx, transition_id, engine.owner,
                                                        now + sagas.LEASE_MS, now)
            views_ops.set_main_pane(tx, t["view_id"], layout.main.pane_id, now)
        if not taken:
            return "skipped"
        try:
            sagas.resume(engine, transition_id)
        except TmuxError:
            return "skipped"  # uncertain again: the new lease expires, the next pass reads
        row = transitions_ops.get_transition(conn, transition_id)
        return "resumed" if row["state"] != "failed" else "rolled_back"
    consistent = layout is not None and \
        _shows(layout, _expected_main(conn, t["view_id"], server_id, snap))
    if consistent:
        return _fail(engine, t, f"interrupted at {phase}; main still shows the committed "
                     "placement", RecoveryKind.TRANSITION_INTERRUPTED, Actionability.OPEN_VIEW)
    return _fail(engine, t, f"interrupted at {phase}; main shows neither the target nor the "
                 "committed placement", RecoveryKind.PLACEMENT_ORPHANED, Actionability.SAFE_AUTO)


def _interrupted_mode(engine: Engine, t: sqlite3.Row, layout: ViewLayout, now: int) -> str:
    """A mode toggle is model-free and tmux is its physical truth: the layout tmux
    shows either is the target mode (commit it) or is not (nothing moved: it ends
    failed, and the view keeps the mode it shows; no recovery is needed)."""
    from core.engine import sagas

    transition_id, phase = t["transition_id"], t["transport_phase"]
    if layout.mode == t["target_mode"]:
        with write_transaction(engine.conn) as tx:
            if phase in ("intent", "moved"):
                transitions_ops.advance_phase(tx, transition_id, phase, "inspected", now)
        sagas.commit(engine, transition_id)
        return "finished"
    with write_transaction(engine.conn) as tx:
        if phase in ("moved", "inspected"):
            transitions_ops.advance_phase(tx, transition_id, phase, "rolled_back", now)
        transitions_ops.move_transition(tx, transition_id, _ts("executing"), _ts("failed"),
                                        now, failure="interrupted before the mode changed; "
                                                     "nothing moved")
    return "rolled_back"


def _fail(engine: Engine, t: sqlite3.Row, why: str, kind: RecoveryKind,
          actionability: Actionability) -> str:
    now = engine.now()
    with write_transaction(engine.conn) as conn:
        if t["transport_phase"] in ("moved", "inspected"):
            transitions_ops.advance_phase(conn, t["transition_id"], t["transport_phase"],
                                          "rolled_back", now)
        transitions_ops.move_transition(conn, t["transition_id"], _ts("executing"),
                                        _ts("failed"), now, failure=why)
        _open(engine, conn, kind, t["view_id"], actionability,
              f"A {t['kind']} was {why}. The registry keeps the last committed placement"
              + ("; running this recovery presents it again." if
                 actionability is Actionability.SAFE_AUTO else
                 "; open the view and repeat the action if it is still wanted."), now)
    return "rolled_back"


def _watchdog(engine: Engine, now: int) -> int:
    """Submitted control turns past the watchdog become uncertain, never resubmitted;
    their targets' fences are lifted (the watchdog process may be gone)."""
    watchdog_ms = int(engine.config.control_turns.watchdog_timeout_seconds * 1000)
    marked: list[str] = []
    with write_transaction(engine.conn) as conn:
        for c in conn.execute("SELECT * FROM control_turns WHERE state = 'submitted'"
                              " AND submitted_at < ?", (now - watchdog_ms,)).fetchall():
            if settlement.expire_turn(engine, conn, c, now):
                marked.append(c["control_turn_id"])
    from core.engine.sagas import lift_fence

    for control_turn_id in marked:
        lift_fence(engine, control_turn_id)
    return len(marked)


def _interrupted_launches(engine: Engine, snap: ServerSnapshot | None, server_id: str | None,
                          busy: set[str], now: int) -> tuple[int, int]:
    """Launches stopped between 'authorized' and 'started': (adopted, failed).

    The launcher creates the pane (tagged ``@sb_surface``) and only then records
    it, so the pane may or may not exist. Alive on the live server -> adopted:
    surface live, launch started, and, when its frame is what the view shows
    and main holds the placeholder (an interrupted start), presented with its
    gate opened in the swap, as the start would have. No such pane -> the
    launch failed, the frame is empty again (``n`` starts it) and a
    ``launch_uncertain`` recovery says so; a dead pane of it is killed.
    A push or return whose launch this was is settled by ``_interrupted``.
    """
    from core.engine.sagas import stop_runtime

    conn = engine.conn
    adopted = failed = 0
    rows = conn.execute(
        "SELECT l.launch_id, l.frame_id, l.session_key, s.surface_id, p.view_id,"
        " v.tmux_server_id AS view_server FROM launch_intents l"
        " JOIN surfaces s ON s.launch_id = l.launch_id"
        " LEFT JOIN frame_placements p ON p.surface_id = s.surface_id AND p.state <> 'orphaned'"
        " LEFT JOIN user_views v ON v.view_id = p.view_id"
        " WHERE l.state = 'authorized' AND s.lifecycle_state = 'planned' AND l.updated_at < ?",
        (now - LAUNCH_REPORT_MS,)).fetchall()
    for row in rows:
        launch_id, surface_id = row["launch_id"], row["surface_id"]
        pane = None
        if snap is not None and server_id is not None and row["view_server"] == server_id:
            pane = snap.by_surface(surface_id)
        if pane is not None and not pane.dead and server_id is not None:
            with write_transaction(conn) as tx:
                sessions_ops.surface_live(tx, surface_id, tmux_server_id=server_id,
                                          pane_id=pane.pane_id, process_id=pane.pane_pid,
                                          now=now)
                sessions_ops.bind_capability_pane(tx, surface_id, server_id, pane.pane_id)
                sessions_ops.move_launch(tx, launch_id, "authorized", "started", now)
                if row["session_key"]:
                    sessions_ops.set_runtime_presence(tx, row["session_key"],
                                                      RuntimePresence.LIVE, now)
            adopted += 1
            if row["view_id"] is not None and row["view_id"] not in busy:
                _present_adopted(engine, row["view_id"], row["frame_id"], pane, launch_id)
            continue
        with write_transaction(conn) as tx:
            sessions_ops.move_launch(
                tx, launch_id, "authorized", "failed", now,
                failure="interrupted before its pane was recorded; no live pane of it exists")
            placement = views_ops.placement_of_frame(tx, row["frame_id"])
            if placement is not None and placement["surface_id"] == surface_id:
                stop_runtime(tx, row["frame_id"], now)  # staged -> empty again
            else:
                sessions_ops.move_surface(tx, surface_id, "retired", now)
                sessions_ops.revoke_capabilities(tx, surface_id, now)
            recoveries_ops.open_recovery(
                tx, recovery_id=engine.ids.new_id(), host_id=engine.host_id,
                kind=RecoveryKind.LAUNCH_UNCERTAIN, subject_type="launch", subject_id=launch_id,
                actionability=Actionability.MANUAL,
                explanation="An agent start was interrupted before its pane was recorded, and "
                            "no live pane of it exists: the launch was marked failed and "
                            "nothing runs. Select "
                            f"“{frames_ops.get_frame(tx, row['frame_id'])['title']}” and "
                            "press n to start it again.", now=now)
        failed += 1
        if pane is not None and server_id is not None:  # tagged with its surface, but dead
            engine.require_stage().kill_unrecorded(pane.pane_id, surface_id, server_id)
    return adopted, failed


def _present_adopted(engine: Engine, view_id: str, frame_id: str, pane: PaneSnapshot,
                     launch_id: str) -> None:
    """Finish an interrupted start: the view shows this frame, main the placeholder."""
    from core.tmux.stage import gate_name

    conn = engine.conn
    view = views_ops.get_view(conn, view_id)
    placement = views_ops.placement_of_frame(conn, frame_id)
    if view["active_frame_id"] != frame_id or placement is None or \
            placement["state"] != PlacementState.STAGED or not pane.parked:
        return  # a later focus presents it and opens its gate
    layout = None
    snap = engine.require_stage().snapshot()
    if snap is not None:
        layout = snap.view(view_id)
    if layout is None or layout.main is None or layout.main.role is not PaneRole.PLACEHOLDER:
        return
    try:
        shown = engine.require_stage().present(view, pane.pane_id, launch_gate=gate_name(launch_id))
    except TmuxError:
        return  # nothing moved; the frame stays staged and a focus can show it
    if shown != pane.pane_id:
        return
    with write_transaction(conn) as tx:
        placement = views_ops.placement_of_frame(tx, frame_id)
        if placement is None:
            raise InvariantViolation(f"frame {frame_id} lost its placement while shown")
        if placement["state"] == PlacementState.STAGED:
            views_ops.move_placement(tx, placement["placement_id"], placement["generation"],
                                     PlacementState.ACTIVE, engine.now(), focused=True)


def _exited_providers(engine: Engine, snap: ServerSnapshot | None, server_id: str | None,
                      busy: set[str], now: int) -> int:
    """Live surfaces whose provider exited (``pane_dead``; panes keep remain-on-exit).

    The surface becomes dead and its session's runtime stopped; the frame is
    empty (``stopped_affinity``), so the view shows its placeholder if the
    dead pane was in main; the dead pane is then killed, which the adapter
    allows only for the launch-owned pane alone in its holding window (never
    the last pane of a view window). Views with a transition in flight are
    left to it; the next pass sees the pane again.
    """
    if snap is None:
        return 0
    conn = engine.conn
    exited = 0
    for s in conn.execute("SELECT * FROM surfaces WHERE lifecycle_state = 'live'"
                          " AND tmux_server_id = ?", (server_id,)).fetchall():
        pane = _own_pane(snap, s, server_id)
        if pane is None or not pane.dead:
            continue
        placement = conn.execute(
            "SELECT * FROM frame_placements WHERE surface_id = ? AND state <> 'orphaned'",
            (s["surface_id"],)).fetchone()
        if placement is not None and placement["view_id"] in busy:
            continue
        status = "" if pane.dead_status is None else f" (exit status {pane.dead_status})"
        with write_transaction(conn) as tx:
            _runtime_exited(engine, tx, s, placement, f"the provider exited{status}", now)
        exited += 1
        if placement is not None:
            layout = snap.view(placement["view_id"])
            if layout is not None and layout.main is not None and \
                    layout.main.pane_id == pane.pane_id:
                try:
                    engine.require_stage().present(
                        views_ops.get_view(conn, placement["view_id"]), None)
                except TmuxError:
                    continue  # main keeps the dead pane; _check_views opens a recovery
        engine.require_stage().kill(pane.pane_id, surface_id=s["surface_id"])
    return exited


def _runtime_exited(engine: Engine, conn: sqlite3.Connection, surface: sqlite3.Row,
                    placement: sqlite3.Row | None, why: str, now: int) -> None:
    """Registry side of an exited provider: surface dead, runtime stopped, frame empty."""
    surface_id = surface["surface_id"]
    sessions_ops.move_surface(conn, surface_id, "dead", now)
    sessions_ops.revoke_capabilities(conn, surface_id, now)
    if surface["session_key"]:
        sessions_ops.set_runtime_presence(conn, surface["session_key"],
                                          RuntimePresence.STOPPED, now)
    launch = conn.execute("SELECT state FROM launch_intents WHERE launch_id = ?",
                          (surface["launch_id"],)).fetchone()
    if launch is not None and launch["state"] == "started":
        sessions_ops.move_launch(conn, surface["launch_id"], "started", "failed", now,
                                 failure=f"{why} before any hook bound it")
    if placement is None:
        return
    if placement["state"] in (PlacementState.ACTIVE, PlacementState.PARKED):
        views_ops.move_placement(conn, placement["placement_id"], placement["generation"],
                                 PlacementState.STOPPED_AFFINITY, now)
    elif placement["state"] == PlacementState.STAGED:
        views_ops.move_placement(conn, placement["placement_id"], placement["generation"],
                                 PlacementState.ORPHANED, now)
        views_ops.insert_placement(conn, placement_id=engine.ids.new_id(),
                                   host_id=placement["host_id"], view_id=placement["view_id"],
                                   frame_id=placement["frame_id"],
                                   state=PlacementState.STOPPED_AFFINITY, surface_id=None,
                                   now=now)


def _bind_timeouts(engine: Engine, conn: sqlite3.Connection, now: int) -> int:
    """Started launches no hook has bound BIND_TIMEOUT_MS after their provider could run.

    The gate opens when the pane is first shown (the placement leaves
    ``staged``), so a staged pane waiting behind its gate is never overdue.
    Opens one manual ``bind_timeout`` per launch and kills nothing; it is
    resolved once the launch is bound or has ended.
    """
    overdue = 0
    for row in conn.execute(
            "SELECT l.launch_id FROM launch_intents l JOIN surfaces s ON s.launch_id = l.launch_id"
            " JOIN frame_placements p ON p.surface_id = s.surface_id"
            " AND p.state IN ('active', 'parked')"
            " WHERE l.state = 'started' AND s.lifecycle_state = 'live'"
            " AND MAX(l.updated_at, p.updated_at) < ?", (now - BIND_TIMEOUT_MS,)).fetchall():
        opened = conn.execute("SELECT 1 FROM recoveries WHERE kind = 'bind_timeout'"
                              " AND subject_id = ? AND state = 'open'",
                              (row["launch_id"],)).fetchone()
        if opened is not None:
            continue
        recoveries_ops.open_recovery(
            conn, recovery_id=engine.ids.new_id(), host_id=engine.host_id,
            kind=RecoveryKind.BIND_TIMEOUT, subject_type="launch", subject_id=row["launch_id"],
            actionability=Actionability.MANUAL,
            explanation=f"The agent has run for over {BIND_TIMEOUT_MS // 1000} s without any "
                        "hook reaching Switchboard (hooks missing, or the provider is stuck "
                        "before its first prompt). Nothing was stopped: press Enter on this "
                        "recovery to go and look; close the frame or resolve this when it "
                        "is fine.", now=now)
        overdue += 1
    for row in conn.execute(
            "SELECT r.recovery_id FROM recoveries r JOIN launch_intents l"
            " ON l.launch_id = r.subject_id WHERE r.kind = 'bind_timeout'"
            " AND r.state = 'open' AND l.state <> 'started'").fetchall():
        recoveries_ops.close_recovery(conn, row["recovery_id"], RecoveryState.RESOLVED, now)
    return overdue


def _stop_stray_panes(engine: Engine, snap: ServerSnapshot, server_id: str | None) -> int:
    """Finish committed stops: a retired/dead surface's parked pane that still runs."""
    stopped = 0
    rows = engine.conn.execute(
        "SELECT surface_id, pane_id FROM surfaces WHERE lifecycle_state IN ('retired', 'dead')"
        " AND tmux_server_id = ? AND pane_id IS NOT NULL", (server_id,)).fetchall()
    for row in rows:
        pane = snap.pane(row["pane_id"])
        if pane is None or pane.surface_id != row["surface_id"] or not pane.parked:
            continue
        stopped += engine.require_stage().kill(row["pane_id"], surface_id=row["surface_id"])
    return stopped


def _revive_navigators(engine: Engine, snap: ServerSnapshot, server_id: str | None) -> int:
    """Navigator panes that crashed or were quit run again, in place (remain-on-exit
    keeps them): views of the live server only, one tmux process for all of them."""
    if server_id is None:
        return 0
    views = {row[0] for row in engine.conn.execute(
        "SELECT view_id FROM user_views WHERE state <> 'retired' AND tmux_server_id = ?",
        (server_id,))}
    try:
        return engine.require_stage().revive_navigators(snap, server_id, views)
    except TmuxError:
        return 0  # nothing was respawned; the next pass reads the panes again


def _ts(value: str) -> TransitionState:
    return TransitionState(value)
