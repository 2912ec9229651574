"""Reconcile's control-turn steps: the watchdog backstop and settled uncertainties.

A control turn is a line typed into an agent. Its own watchdog process marks
it ``uncertain`` when no claim follows in time; that process may be gone, so
each reconcile does the same for overdue submitted turns (never retyping
them). And a ``control_submit_uncertain`` recovery whose turn and transition
settled since through another path is resolved here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.model.enums import RecoveryKind, RecoveryState
from core.reconcile import settlement
from storage.connection import write_transaction
from storage.operations import recoveries as recoveries_ops

if TYPE_CHECKING:
    from core.context.context import Context


def expire_overdue_turns(ctx: Context, now: int) -> int:
    """Submitted control turns past the watchdog become uncertain, never resubmitted;
    their targets' fences are lifted (the watchdog process may be gone)."""
    watchdog_ms = int(ctx.config.control_turns.watchdog_timeout_seconds * 1000)
    marked: list[str] = []
    with write_transaction(ctx.conn) as conn:
        for c in conn.execute("SELECT * FROM control_turns WHERE state = 'submitted'"
                              " AND submitted_at < ?", (now - watchdog_ms,)).fetchall():
            if settlement.expire_turn(ctx, conn, c, now):
                marked.append(c["control_turn_id"])
    from core.runtime.sagas import lift_fence

    for control_turn_id in marked:
        lift_fence(ctx, control_turn_id)
    return len(marked)


def resolve_settled_controls(ctx: Context, now: int) -> int:
    """Older control_submit_uncertain records whose control turn and transition have
    both settled since (the claim came through another path): resolved."""
    with write_transaction(ctx.conn) as conn:
        rows = conn.execute(
            "SELECT r.recovery_id FROM recoveries r JOIN control_turns c"
            " ON c.control_turn_id = r.subject_id JOIN view_transitions t"
            " ON t.transition_id = c.transition_id WHERE r.kind = ? AND r.state = 'open'"
            " AND c.state IN ('claimed', 'settled') AND t.state = 'completed'",
            (RecoveryKind.CONTROL_SUBMIT_UNCERTAIN.value,)).fetchall()
        for row in rows:
            recoveries_ops.close_recovery(conn, row["recovery_id"], RecoveryState.RESOLVED, now)
    return len(rows)
