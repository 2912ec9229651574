"""transition_claim(): how a target agent receives its brief or handoff.

Authority comes only from the caller's capability, resolved by
``core.config.capabilities``; this module revalidates frame, transition, placement and
WorkContext generation, stamps the semantic record and advances the control
turn, all in one transaction. Claims are idempotent: a second claim returns
the same content and changes nothing.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import TYPE_CHECKING

from core.model.enums import RecoveryKind, TransitionKind, TransitionState
from core.model.errors import Conflict
from storage.connection import write_transaction
from storage.operations import frames as frames_ops
from storage.operations import recoveries as recoveries_ops
from storage.operations import transitions as transitions_ops

if TYPE_CHECKING:
    from core.config.capabilities import Authority
    from core.context.context import Context
    from core.context.stage_port import StagePort

T = TransitionState
CLAIMABLE = ("presented", "awaiting_claim", "settling", "completed")


@dataclass(frozen=True)
class ClaimResult:
    """What the agent reads: the record and the instructions that go with it."""

    kind: str  # "brief" | "handoff" | "none"
    transition_id: str | None
    frame_id: str
    title: str | None
    body: str | None
    summary: str | None
    next_action: str | None
    instructions: str
    first_claim: bool


def claim_for_frame(ctx: Context, frame_id: str, session_key: str | None, *,
                    authority: Authority | None = None) -> ClaimResult:
    """Claim whatever transition names this frame as its target.

    With the caller's ``authority`` (an agent tool), its placement is revalidated
    too: the capability's surface must still be what the frame's placement holds,
    at the capability's placement generation or later (a stopped, replaced or
    re-homed runtime's capability claims nothing).
    """
    now = ctx.now()
    stop_panes: list[str] = []
    with write_transaction(ctx.conn) as conn:
        if authority is not None:
            _check_placement(conn, frame_id, authority)
        # A push that failed before its task's agent ran still owes the task its brief:
        # the task's next start (n) carries the claim line, and this claim returns it.
        row = conn.execute(
            "SELECT * FROM view_transitions t WHERE target_frame_id = ? AND (kind IN"
            " ('push', 'complete_return') AND state IN"
            " ('presented', 'awaiting_claim', 'settling', 'completed') OR (kind = 'push'"
            " AND state = 'failed' AND EXISTS (SELECT 1 FROM transition_briefs b"
            " WHERE b.transition_id = t.transition_id AND b.first_claimed_at IS NULL)))"
            " ORDER BY created_at DESC, transition_id DESC LIMIT 1", (frame_id,)).fetchone()
        frame = frames_ops.get_frame(conn, frame_id)
        early = conn.execute(
            "SELECT kind, state FROM view_transitions WHERE target_frame_id = ? AND kind IN"
            " ('push', 'complete_return') AND state IN ('prepared', 'executing')",
            (frame_id,)).fetchone()
        if early is not None:
            # The swap may already be visible before its commit: ask again shortly
            # rather than answering with an older record or "nothing to claim".
            raise Conflict(f"your {early['kind']} transition is still {early['state']}; "
                           "call transition_claim() again in a moment",
                           code="transition_not_ready")
        handover = None
        if row is None or row["state"] == "completed":
            from core.runtime.handover import mark_claimed, read_handover

            handover = read_handover(ctx.home, frame_id)
        if handover is not None and ctx.home is not None:
            # The task was moved to this provider (switch-provider): its handover is the
            # brief, while no transition for the frame waits to be claimed.
            return ClaimResult(
                "brief", None, frame_id, frame["title"], handover.brief, None, None,
                f"You are now the agent for this task (it moved from {handover.from_provider}"
                " to you). Work on the brief below in this checkout. When the outcome is "
                "done, call task_complete_return(summary, next_action).",
                mark_claimed(ctx.home, frame_id))
        if row is None:
            return ClaimResult("none", None, frame_id, frame["title"], None, None, None,
                               "There is no pending transition for you; continue your work.",
                               False)
        context = frames_ops.get_context(conn, frame["work_context_id"])
        if context["foreground_frame_id"] != frame_id:
            raise Conflict("foreground authority has not moved to your frame yet; try again "
                           "after the transition is presented", code="not_foreground")
        if session_key is not None and frame["current_session_key"] != session_key:
            raise Conflict("your session is not this frame's current session",
                           code="session_mismatch")
        transition_id = row["transition_id"]
        control = transitions_ops.control_turn_of(conn, transition_id)
        if row["kind"] == TransitionKind.PUSH:
            record = conn.execute("SELECT * FROM transition_briefs WHERE transition_id = ?",
                                  (transition_id,)).fetchone()
            first = record["first_claimed_at"] is None
            transitions_ops.stamp_claimed(conn, "transition_briefs", transition_id, now)
            if control is not None:
                _claim_control(conn, control, now)
                # A push settles with its claim: the brief turn is done.
                transitions_ops.move_control(conn, control["control_turn_id"], ("claimed",),
                                             "settled", now)
            if row["state"] in ("presented", "awaiting_claim"):
                transitions_ops.move_transition(conn, transition_id, T(row["state"]),
                                                T.SETTLING, now)
                transitions_ops.move_transition(conn, transition_id, T.SETTLING, T.COMPLETED,
                                                now)
            result = ClaimResult(
                "brief", transition_id, frame_id, frame["title"], record["brief"], None, None,
                "You are the agent for this task. Work on the brief below in this checkout. "
                "When the outcome is done, call task_complete_return(summary, next_action).",
                first)
        else:
            record = conn.execute("SELECT * FROM completion_handoffs WHERE transition_id = ?",
                                  (transition_id,)).fetchone()
            first = record["first_claimed_at"] is None
            transitions_ops.stamp_claimed(conn, "completion_handoffs", transition_id, now)
            if control is not None:
                _claim_control(conn, control, now)
            child = frames_ops.get_frame(conn, row["source_frame_id"])
            if child["lifecycle_state"] == "closing":
                from core.runtime.sagas import stop_runtime
                stop_panes = stop_runtime(conn, child["frame_id"], now)
                frames_ops.finish_close(conn, child["frame_id"], now)
            if row["state"] in ("presented", "awaiting_claim"):
                transitions_ops.move_transition(conn, transition_id, T(row["state"]),
                                                T.SETTLING, now)
            result = ClaimResult(
                "handoff", transition_id, frame_id, child["title"], None, record["summary"],
                record["next_action"],
                f"Your task '{child['title']}' finished and returned. Read the summary and "
                "next action, then tell the person what happened and continue.", first)
        if control is not None:
            recoveries_ops.resolve_for_subject(conn, RecoveryKind.CONTROL_SUBMIT_UNCERTAIN,
                                               "control_turn", control["control_turn_id"], now)
        if row["state"] in ("presented", "awaiting_claim"):
            # The claim is the evidence the unclaimed-presentation recovery waited for.
            recoveries_ops.resolve_for_subject(conn, RecoveryKind.TRANSITION_INTERRUPTED,
                                               "view", row["view_id"], now)
    if stop_panes and ctx.stage is None and ctx.home is not None:
        from core.runtime.stage import attach_stage
        attach_stage(ctx, ctx.home)
    for pane in stop_panes:
        if ctx.stage is not None:
            _kill_soon(ctx.stage, pane)
    if result.kind == "handoff" and result.first_claim and result.transition_id:
        from core.evidence import tasks as evidence_tasks  # after the commit, best effort
        evidence_tasks.handoff_claimed(ctx, result.transition_id, session_key)
    return result


def _check_placement(conn: sqlite3.Connection, frame_id: str, authority: Authority) -> None:
    placement = frames_placement = conn.execute(
        "SELECT * FROM frame_placements WHERE frame_id = ? AND state <> 'orphaned'",
        (frame_id,)).fetchone()
    del frames_placement
    if placement is None or placement["surface_id"] != authority.surface_id or \
            placement["view_id"] != authority.view_id or \
            placement["generation"] < authority.placement_generation:
        raise Conflict("your runtime no longer holds this frame's placement (it was stopped, "
                       "replaced or moved); nothing was claimed", code="stale_placement")


def _kill_soon(stage: StagePort, pane: str, attempts: int = 5) -> None:
    """Kill the closed child's parked pane; a swap still settling in another process
    can make the first try refuse, so retry briefly (reconcile sweeps what is left)."""
    import time

    for attempt in range(attempts):
        if stage.kill(pane):
            return
        time.sleep(0.1 * (attempt + 1))


def _claim_control(conn: sqlite3.Connection, control: sqlite3.Row, now: int) -> None:
    state = control["state"]
    if state in ("submitted", "observed", "uncertain"):
        if state == "submitted":
            transitions_ops.move_control(conn, control["control_turn_id"], ("submitted",),
                                         "observed", now)
        transitions_ops.move_control(conn, control["control_turn_id"],
                                     ("observed", "uncertain"), "claimed", now)
    elif state == "prepared":
        # Reached by the agent's own turn (or a registry-only run): nothing was typed, so
        # the turn is superseded rather than left pending beside a settled transition.
        transitions_ops.move_control(conn, control["control_turn_id"], ("prepared",),
                                     "superseded", now)


def settle_after_stop(ctx: Context, frame_id: str) -> list[str]:
    """The target's post-claim Stop settles its complete-return presentation."""
    now = ctx.now()
    settled: list[str] = []
    with write_transaction(ctx.conn) as conn:
        rows = conn.execute(
            "SELECT * FROM view_transitions WHERE target_frame_id = ? AND state = 'settling'"
            " AND kind = 'complete_return'", (frame_id,)).fetchall()
        for row in rows:
            control = transitions_ops.control_turn_of(conn, row["transition_id"])
            if control is not None and control["state"] == "claimed":
                transitions_ops.move_control(conn, control["control_turn_id"], ("claimed",),
                                             "settled", now)
            transitions_ops.move_transition(conn, row["transition_id"], T.SETTLING,
                                            T.COMPLETED, now)
            settled.append(row["transition_id"])
    return settled
