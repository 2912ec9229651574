"""Settlement: no transition waits forever for evidence that cannot come.

A push or complete-return leaves the executing saga in ``awaiting_claim`` and
then depends on the target agent: its UserPromptSubmit, its
``transition_claim()``, its post-claim Stop. Each of those can be lost (the
agent gave up after a refused claim, its activity was never proven idle so
no line was typed, its pane was killed, its executor died). This module
turns each such wait into something a person can act on:

- a prepared push/return that no longer waits for anyone's Stop runs;
- a claimed return whose post-claim Stop cannot come any more completes;
- an unclaimed presentation whose claim is overdue opens one view recovery
  (``transition_interrupted``, safe_auto) whose action, ``settle``, makes the
  view ready again while the brief or handoff stays claimable (the claim
  query also reads completed transitions), and a control turn that may have
  been typed becomes ``uncertain`` with its own recovery, never retyped;
- ``cancel`` withdraws a prepared transition (``prepared -> cancelled``).

Everything here runs inside named storage operations; nothing types a line.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import TYPE_CHECKING

from core.model.enums import (
    Actionability,
    CloseReason,
    FrameLifecycle,
    PlacementState,
    RecoveryKind,
    TransitionKind,
    TransitionState,
)
from core.model.errors import Conflict, InvariantViolation, NotFound, SwitchboardError
from core.runtime.sagas import agent_working
from core.runtime.unclaimed import SETTLE_KEY, frame_title, mark_uncertain, open_unclaimed
from storage.connection import write_transaction
from storage.operations import frames as frames_ops
from storage.operations import recoveries as recoveries_ops
from storage.operations import transitions as transitions_ops
from storage.operations import views as views_ops

if TYPE_CHECKING:
    from core.context.context import Context

T = TransitionState

CLAIM_OVERDUE_MS = 60_000
"""An unclaimed presentation whose target agent is not working after this long will
not be claimed on its own (a resumed provider starts and claims well within it)."""

PREPARED_GRACE_MS = 2_000
"""A prepared transition younger than this belongs to the request that made it."""

EXECUTOR_START_MS = 10_000
"""A Stop hook starts the executor of the push/return it released well within this;
a released transition still prepared after it lost that process."""



@dataclass(frozen=True)
class SweepReport:
    ran: int = 0
    completed: int = 0
    stalled: int = 0


def sweep(ctx: Context, now: int) -> SweepReport:
    """One pass over every nonterminal push/return that no executor owns."""
    from core.runtime import sagas

    conn = ctx.conn
    ran = completed = stalled = 0
    with write_transaction(conn) as tx:
        # A model-free transition runs in the request that prepared it; one still
        # prepared after the grace period lost its process before it started. Nothing
        # moved, so it simply ends (the key can be pressed again).
        for row in tx.execute(
                "SELECT transition_id FROM view_transitions WHERE state = 'prepared'"
                " AND kind NOT IN ('push', 'complete_return') AND updated_at < ?",
                (now - PREPARED_GRACE_MS,)).fetchall():
            transitions_ops.move_transition(
                tx, row["transition_id"], T.PREPARED, T.FAILED, now,
                failure="its request ended before it started; nothing moved")
    for row in conn.execute(
            "SELECT transition_id FROM view_transitions WHERE state = 'prepared'"
            " AND kind IN ('push', 'complete_return') AND updated_at < ?"
            " ORDER BY created_at", (now - PREPARED_GRACE_MS,)).fetchall():
        transition_id = row["transition_id"]
        if sagas.waits_for_stop(ctx, transition_id):
            stalled += _note_waiting(ctx, transition_id, now)
            continue
        orphaned = _runner_gone(conn, transition_id, now)
        try:
            sagas.execute(ctx, transition_id)
        except SwitchboardError as exc:
            _open_failed(ctx, transition_id, exc.message, now)
        else:
            if orphaned:  # this pass ran it for a dead process and ends now
                orphaned_wait(ctx, transition_id, now)
        ran += 1
    with write_transaction(conn) as tx:
        for row in tx.execute(
                "SELECT * FROM view_transitions WHERE state = 'settling'"
                " AND kind = 'complete_return' AND updated_at < ?",
                (now - watchdog_ms(ctx),)).fetchall():
            if agent_working(tx, row["target_frame_id"]):
                continue  # its post-claim Stop will come
            _complete_settling(tx, row, now)
            completed += 1
        for row in tx.execute(
                "SELECT * FROM view_transitions WHERE state IN ('presented', 'awaiting_claim')"
                " AND kind IN ('push', 'complete_return')"
                " AND (lease_expires_at IS NULL OR lease_expires_at < ?)"
                " ORDER BY created_at", (now,)).fetchall():
            if _claim_overdue(ctx, tx, row, now):
                stalled += open_unclaimed(ctx, tx, row, now)
    return SweepReport(ran, completed, stalled)


def watchdog_ms(ctx: Context) -> int:
    """How long a submitted control turn may wait for its UserPromptSubmit (config)."""
    return int(ctx.config.control_turns.watchdog_timeout_seconds * 1000)


def _claim_overdue(ctx: Context, conn: sqlite3.Connection, row: sqlite3.Row,
                   now: int) -> bool:
    """The target agent is not working and either its turn with the line ended without
    a claim, nothing could be typed, or the claim is simply overdue."""
    if agent_working(conn, row["target_frame_id"]):
        return False
    control = transitions_ops.control_turn_of(conn, row["transition_id"])
    if control is not None and control["state"] == "observed":
        return True  # the line's turn ended (the agent is not working) without a claim
    if control is not None and control["state"] == "prepared" and \
            control["transport"] == "live_input":
        return True  # nothing was typed: the target was not proven idle
    return row["updated_at"] < now - CLAIM_OVERDUE_MS


def _runner_gone(conn: sqlite3.Connection, transition_id: str, now: int) -> bool:
    """Whether the process meant to run a prepared push/return is surely gone: its
    source agent's last change (the Stop that released it) is older than any Stop
    hook takes to start the executor. A recent one may be racing this pass."""
    row = conn.execute(
        "SELECT s.updated_at FROM view_transitions t JOIN frames f"
        " ON f.frame_id = t.source_frame_id JOIN provider_sessions s"
        " ON s.session_key = f.current_session_key WHERE t.transition_id = ?",
        (transition_id,)).fetchone()
    return row is None or row["updated_at"] < now - EXECUTOR_START_MS


def orphaned_wait(ctx: Context, transition_id: str, now: int) -> None:
    """A push/return that reconcile carried to ``awaiting_claim`` for a dead executor
    waits for an agent nobody is watching for: it becomes a recovery at once (Enter
    settles it; the claim, if it still comes, resolves it), with the turn uncertain
    if the line may have been typed."""
    with write_transaction(ctx.conn) as conn:
        row = transitions_ops.get_transition(conn, transition_id)
        if row["state"] in (T.PRESENTED, T.AWAITING_CLAIM):
            open_unclaimed(ctx, conn, row, now)


def _note_waiting(ctx: Context, transition_id: str, now: int) -> int:
    """A prepared push/return whose agent is still working: it runs on that Stop.

    Only when the wait is overdue (the turn runs past CLAIM_OVERDUE_MS) is a
    recovery opened, so the view says what it waits for and ``w`` withdraws it.
    """
    with write_transaction(ctx.conn) as conn:
        row = transitions_ops.get_transition(conn, transition_id)
        if row["state"] != "prepared" or row["updated_at"] >= now - CLAIM_OVERDUE_MS:
            return 0
        waiting_on = row["source_frame_id"] if agent_working(conn, row["source_frame_id"]) \
            else row["target_frame_id"]
        title = frame_title(conn, waiting_on)
        way_out = "press w (Withdraw) to cancel it" if row["kind"] == TransitionKind.PUSH \
            else f"select {title} and press s to stop that agent so it runs now"
        recoveries_ops.open_recovery(
            conn, recovery_id=ctx.ids.new_id(), host_id=ctx.host_id,
            kind=RecoveryKind.TRANSITION_INTERRUPTED, subject_type="view",
            subject_id=row["view_id"], actionability=Actionability.SAFE_AUTO,
            explanation=f"A {row['kind'].replace('_', '-')} waits for {title} to finish its "
                        f"turn (its Stop runs it). To act now, {way_out}; {SETTLE_KEY} (R) "
                        "runs it once that agent is idle.", now=now)
    return 1


def _open_failed(ctx: Context, transition_id: str, why: str, now: int) -> None:
    with write_transaction(ctx.conn) as conn:
        row = transitions_ops.get_transition(conn, transition_id)
        recoveries_ops.open_recovery(
            conn, recovery_id=ctx.ids.new_id(), host_id=ctx.host_id,
            kind=RecoveryKind.TRANSITION_INTERRUPTED, subject_type="view",
            subject_id=row["view_id"], actionability=Actionability.SAFE_AUTO,
            explanation=f"A {row['kind'].replace('_', '-')} to "
                        f"{frame_title(conn, row['target_frame_id'])} could not run ({why[:300]}); "
                        f"its brief or handoff is kept. Press {SETTLE_KEY} (R) to present the "
                        "view's active frame again.", now=now)


def _complete_settling(conn: sqlite3.Connection, row: sqlite3.Row, now: int) -> None:
    """A claimed return whose post-claim Stop cannot come (the agent is not working)."""
    control = transitions_ops.control_turn_of(conn, row["transition_id"])
    if control is not None and control["state"] == "claimed":
        transitions_ops.move_control(conn, control["control_turn_id"], ("claimed",),
                                     "settled", now)
    transitions_ops.move_transition(conn, row["transition_id"], T.SETTLING, T.COMPLETED, now)


def settle_unclaimed(ctx: Context, view_id: str) -> list[str]:
    """The recovery's action: the view's unclaimed presentation completes.

    The brief or handoff is neither stamped nor dropped: ``transition_claim()``
    reads completed transitions too, and the parent's claim closes the child
    then (``completed`` needs a claimed handoff). A typed turn becomes uncertain;
    an untyped one is superseded. A returned child's runtime is stopped (it
    finished); returns the panes to kill.
    """
    now = ctx.now()
    panes: list[str] = []
    with write_transaction(ctx.conn) as conn:
        row = transitions_ops.pending_for_view(conn, view_id)
        if row is None or row["state"] not in ("presented", "awaiting_claim", "settling"):
            return panes
        control = transitions_ops.control_turn_of(conn, row["transition_id"])
        if row["state"] == "settling":
            _complete_settling(conn, row, now)
            return panes
        record = "brief" if row["kind"] == TransitionKind.PUSH else "handoff"
        if control is not None and control["state"] == "prepared":
            transitions_ops.move_control(conn, control["control_turn_id"], ("prepared",),
                                         "superseded", now, failure="settled unclaimed")
        elif control is not None and control["state"] in ("submitted", "observed"):
            mark_uncertain(ctx, conn, control, frame_title(conn, row["target_frame_id"]),
                           record, now)
        if row["kind"] == TransitionKind.COMPLETE_RETURN and row["source_frame_id"]:
            from core.runtime.sagas import stop_runtime

            child = frames_ops.get_frame(conn, row["source_frame_id"])
            placement = views_ops.placement_of_frame(conn, child["frame_id"])
            if child["lifecycle_state"] == FrameLifecycle.CLOSING and placement is not None \
                    and placement["state"] in (PlacementState.PARKED, PlacementState.STAGED):
                panes = stop_runtime(conn, child["frame_id"], now)
        transitions_ops.move_transition(conn, row["transition_id"], T(row["state"]),
                                        T.SETTLING, now)
        transitions_ops.move_transition(conn, row["transition_id"], T.SETTLING, T.COMPLETED,
                                        now)
    return panes


def cancel(ctx: Context, request_id: str, *, view_id: str | None = None,
           transition_id: str | None = None, by_frame: str | None = None) -> str:
    """Withdraw a prepared transition: ``prepared -> cancelled``, nothing ran.

    Only prepared may be cancelled (the contract's edge); anything later is
    refused by name. A cancelled push closes its never-started child
    (dismissed). A complete-return is refused: its task is already closing
    with its handoff stored, and ``closing`` only leads to ``closed``. With
    ``by_frame`` (an agent), only a transition that frame made may be cancelled.
    Returns the transition id; a retry of the same request changes nothing.
    """

    def body(conn: sqlite3.Connection, fp: str, now: int) -> tuple[str, str | None]:
        if transition_id is not None:
            row = conn.execute("SELECT * FROM view_transitions WHERE transition_id = ?",
                               (transition_id,)).fetchone()
            if row is None:
                raise NotFound(f"unknown transition {transition_id}; `switchboard state` "
                               "lists the views and their transitions")
        else:
            assert view_id is not None
            views_ops.get_view(conn, view_id)
            row = transitions_ops.pending_for_view(conn, view_id)
            if row is None:
                raise Conflict(f"view {view_id} has no transition in flight; nothing to "
                               "cancel", code="nothing_to_cancel")
        if by_frame is not None and row["source_frame_id"] != by_frame:
            raise Conflict("only the agent that asked for a transition may cancel it",
                           code="not_your_transition")
        if row["state"] != T.PREPARED:
            raise Conflict(
                f"the {row['kind']} transition is {row['state']}; only a prepared one (still "
                "waiting for an agent's Stop) can be cancelled. A later one settles or is "
                "recovered (`switchboard recovery list`)", code="not_cancellable")
        if row["kind"] == TransitionKind.COMPLETE_RETURN:
            # Its task is closing with the handoff stored, and a closing frame has only
            # one way on (closed): the return is never withdrawn, only run sooner.
            waiting = frame_title(conn, row["source_frame_id"] if agent_working(
                conn, row["source_frame_id"]) else row["target_frame_id"])
            raise Conflict(f"a complete-return cannot be withdrawn: its task is closing with "
                           f"the handoff stored. It runs when {waiting} ends its turn; select "
                           f"{waiting} and press s to stop that agent and run it now",
                           code="not_cancellable")
        transitions_ops.move_transition(conn, row["transition_id"], T.PREPARED, T.CANCELLED,
                                        now, failure=f"cancelled by request {request_id}")
        control = transitions_ops.control_turn_of(conn, row["transition_id"])
        if control is not None and control["state"] == "prepared":
            transitions_ops.move_control(conn, control["control_turn_id"], ("prepared",),
                                         "superseded", now, failure="transition cancelled")
        if row["kind"] == TransitionKind.PUSH:
            child = frames_ops.get_frame(conn, row["target_frame_id"])
            if child["lifecycle_state"] == FrameLifecycle.OPEN and \
                    child["current_session_key"] is None:
                frames_ops.begin_close(conn, child["frame_id"], CloseReason.DISMISSED, now)
                frames_ops.finish_close(conn, child["frame_id"], now)
        recoveries_ops.resolve_for_subject(conn, RecoveryKind.TRANSITION_INTERRUPTED, "view",
                                           row["view_id"], now)
        return "transition", row["transition_id"]

    semantic = {"view_id": view_id, "transition_id": transition_id, "by_frame": by_frame}
    cancelled = ctx.run_request(request_id, "transition.cancel", semantic, body,
                                lambda tid: tid, lambda tid: tid)
    if cancelled is None:  # body always records the cancelled transition's id
        raise InvariantViolation(f"request {request_id} recorded no transition")
    return cancelled


ADVICE_KEYS = ("Enter", "press n", "w (Withdraw)", "recovery run")
"""Every open recovery's explanation names at least one of these ways out."""


def invariant_problems(ctx: Context) -> list[str]:
    """The no-stuck-view invariant, checked against the registry (empty = it holds).

    Every live view is ready with no transition in flight (an executing one
    under a live lease belongs to its executor), or has an open recovery about
    it; a degraded view has one; every open recovery names a way out (a key
    or ``switchboard recovery run``); and no frame's session says live while
    its runtime's surface is not (its badge would show ready for nothing).
    """
    conn = ctx.conn
    now = ctx.now()
    found: list[str] = []
    for view in conn.execute("SELECT * FROM user_views WHERE state <> 'retired'").fetchall():
        view_id = view["view_id"]
        recoveries = conn.execute(
            "SELECT kind, bounded_explanation FROM recoveries WHERE subject_type = 'view'"
            " AND subject_id = ? AND state = 'open'", (view_id,)).fetchall()
        pending = transitions_ops.pending_for_view(conn, view_id)
        owned = pending is not None and pending["state"] == "executing" and \
            (pending["lease_expires_at"] or 0) >= now
        if pending is not None and not owned and not recoveries:
            found.append(f"view {view_id}: a {pending['kind']} is {pending['state']} and no "
                         "recovery says what to do")
        if view["state"] == "degraded" and not recoveries:
            found.append(f"view {view_id} is degraded with no open recovery")
        if view["state"] == "transitioning" and pending is None:
            found.append(f"view {view_id} is transitioning with nothing in flight")
    for row in conn.execute("SELECT recovery_id, kind, bounded_explanation FROM recoveries"
                            " WHERE state = 'open'").fetchall():
        text = row["bounded_explanation"].lower()
        if not any(key.lower() in text for key in ADVICE_KEYS):
            found.append(f"recovery {row['kind']} names no key: {row['bounded_explanation']!r}")
    for row in conn.execute(
            "SELECT f.frame_id, f.title FROM frames f JOIN provider_sessions s"
            " ON s.session_key = f.current_session_key WHERE s.runtime_presence = 'live'"
            " AND f.lifecycle_state <> 'closed' AND NOT EXISTS (SELECT 1 FROM"
            " frame_placements p JOIN surfaces u ON u.surface_id = p.surface_id"
            " WHERE p.frame_id = f.frame_id AND p.state IN ('active', 'parked', 'staged')"
            " AND u.lifecycle_state IN ('live', 'planned'))").fetchall():
        found.append(f"frame {row['title']!r} shows a live runtime that is gone")
    return found


def expire_turn(ctx: Context, conn: sqlite3.Connection, control: sqlite3.Row,
                now: int) -> bool:
    """A submitted turn past its watchdog: uncertain with its recovery, never retyped."""
    if not transitions_ops.move_control(conn, control["control_turn_id"], ("submitted",),
                                        "uncertain", now, failure="watchdog expired"):
        return False
    target = frame_title(conn, control["target_frame_id"])
    recoveries_ops.open_recovery(
        conn, recovery_id=ctx.ids.new_id(), host_id=ctx.host_id,
        kind=RecoveryKind.CONTROL_SUBMIT_UNCERTAIN, subject_type="control_turn",
        subject_id=control["control_turn_id"], actionability=Actionability.OPEN_VIEW,
        explanation=f"No prompt evidence after the claim line was sent to {target}. It is "
                    f"never typed again; press Enter on this recovery to go to {target} and "
                    "check it (its transition_claim() still returns what waits for it).",
        now=now)
    return True


def run_watchdog(ctx: Context, control_turn_id: str) -> bool:
    """The watchdog's action for one turn (after its timeout): True if it expired it."""
    now = ctx.now()
    with write_transaction(ctx.conn) as conn:
        control = conn.execute("SELECT * FROM control_turns WHERE control_turn_id = ?",
                               (control_turn_id,)).fetchone()
        expired = control is not None and control["state"] == "submitted" and \
            expire_turn(ctx, conn, control, now)
    from core.runtime.sagas import lift_fence

    lift_fence(ctx, control_turn_id)
    return expired


__all__ = ["sweep", "settle_unclaimed", "cancel", "SweepReport",
           "CLAIM_OVERDUE_MS"]

