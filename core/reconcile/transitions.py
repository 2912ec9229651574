"""Reconcile's interrupted executors: executing transitions whose lease expired.

A saga holds a lease while it moves panes; when the lease runs out its owner
is gone, possibly in the middle of a swap. Reconcile never repeats a swap it
cannot prove did not happen, so each such transition is decided from pane
evidence alone: main shows the target (finish it), nothing moved yet (resume
it under a new lease), or anything else (fail it, with a view recovery).

"Nothing moved yet" is only what tmux showed when it was read: the dead owner's
swap batch is a tmux process of its own and may still land. The resumed swap is
guarded (the target must still be parked), so at most one of the two runs; when
the dead owner's lands first, the refused saga reads the panes and rolls the
move forward from that evidence (``core.runtime.sagas``, ``pane_evidence.swap_landed``).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

from core.model.enums import Actionability, RecoveryKind, TransitionKind, TransitionState
from core.model.errors import TmuxError
from core.reconcile import settlement
from core.reconcile.views import open_view_recovery
from core.runtime.pane_evidence import expected_main, pane_alive, shows
from core.tmux.panes import ServerSnapshot, ViewLayout
from storage.connection import write_transaction
from storage.operations import sessions as sessions_ops
from storage.operations import transitions as transitions_ops
from storage.operations import views as views_ops

if TYPE_CHECKING:
    from core.context.context import Context


class RepairOutcome(StrEnum):
    """How reconcile left one interrupted transition."""

    FINISHED = "finished"
    RESUMED = "resumed"
    ROLLED_BACK = "rolled_back"
    SKIPPED = "skipped"  # another owner took it, or tmux failed again: the next pass reads


@dataclass(frozen=True)
class ExpiredSettled:
    """What ``settle_expired`` did, counted for the reconcile report."""

    finished: int = 0
    resumed: int = 0
    rolled_back: int = 0


def settle_expired(ctx: Context, snap: ServerSnapshot | None, server_id: str | None,
                   now: int) -> ExpiredSettled:
    """Every executing transition whose lease expired, oldest first, settled from
    ``snap``; one that moved on also settles the Stop wait it orphaned."""
    finished = resumed = rolled = 0
    for t in ctx.conn.execute("SELECT * FROM view_transitions WHERE state = 'executing'"
                              " AND lease_expires_at < ? ORDER BY created_at",
                                 (now,)).fetchall():
        outcome = interrupted(ctx, t, snap, server_id, now)
        finished += outcome is RepairOutcome.FINISHED
        resumed += outcome is RepairOutcome.RESUMED
        rolled += outcome is RepairOutcome.ROLLED_BACK
        if outcome in (RepairOutcome.FINISHED, RepairOutcome.RESUMED):
            settlement.orphaned_wait(ctx, t["transition_id"], now)
    return ExpiredSettled(finished, resumed, rolled)


def interrupted(ctx: Context, t: sqlite3.Row, snap: ServerSnapshot | None,
                server_id: str | None, now: int) -> RepairOutcome:
    """Settle one executing transition whose owner's lease expired, from pane evidence.

    main shows the target -> the move happened: inspected, committed.
    intent and the target is still parked -> nothing moved: resumed under a
    new lease (the control turn and launch are never repeated).
    Anything else -> failed (rolled_back after moved), with a recovery.
    """
    from core.runtime import sagas

    conn = ctx.conn
    phase = t["transport_phase"]
    view = views_ops.get_view(conn, t["view_id"])
    if ctx.stage is None:
        if phase == "inspected":
            sagas.commit(ctx, t["transition_id"])
            return RepairOutcome.FINISHED
        return _fail(ctx, t, f"interrupted at {phase}; tmux was not inspected",
                     RecoveryKind.TRANSITION_INTERRUPTED, Actionability.OPEN_VIEW)
    if snap is None or view["tmux_server_id"] != server_id:
        return _fail(ctx, t, f"interrupted at {phase}; the tmux server restarted",
                     RecoveryKind.SERVER_RESTARTED, Actionability.SAFE_AUTO)
    layout = snap.view(t["view_id"])
    if t["kind"] == TransitionKind.MODE and layout is not None:
        return _interrupted_mode(ctx, t, layout, now)
    target = views_ops.placement_of_frame(conn, t["target_frame_id"])
    target_pane = None
    if target is not None and target["surface_id"]:
        target_pane = pane_alive(snap, sessions_ops.get_surface(conn, target["surface_id"]),
                                 server_id)
    if shows(layout, target_pane.pane_id if target_pane is not None else None):
        return _finish_shown(ctx, t, layout, now)
    movable = target_pane is None or target_pane.parked
    if phase == "intent" and movable and layout is not None and layout.main is not None:
        return _resume_at_intent(ctx, t, layout.main.pane_id, now)
    consistent = layout is not None and \
        shows(layout, expected_main(conn, t["view_id"], server_id, snap))
    if consistent:
        return _fail(ctx, t, f"interrupted at {phase}; main still shows the committed "
                     "placement", RecoveryKind.TRANSITION_INTERRUPTED, Actionability.OPEN_VIEW)
    return _fail(ctx, t, f"interrupted at {phase}; main shows neither the target nor the "
                 "committed placement", RecoveryKind.PLACEMENT_ORPHANED, Actionability.SAFE_AUTO)


def _finish_shown(ctx: Context, t: sqlite3.Row, layout: ViewLayout | None,
                  now: int) -> RepairOutcome:
    """Main shows the target: the move happened, so it is inspected and committed."""
    from core.runtime import sagas

    transition_id, phase = t["transition_id"], t["transport_phase"]
    with write_transaction(ctx.conn) as tx:
        if phase in ("intent", "moved"):
            transitions_ops.advance_phase(tx, transition_id, phase, "inspected", now)
        if layout is not None and layout.main is not None:
            views_ops.set_main_pane(tx, t["view_id"], layout.main.pane_id, now)
    sagas.commit(ctx, transition_id)
    return RepairOutcome.FINISHED


def _resume_at_intent(ctx: Context, t: sqlite3.Row, main_pane_id: str, now: int) -> RepairOutcome:
    """Nothing moved yet: take the transition over under a new lease and run it on."""
    from core.runtime import sagas

    transition_id = t["transition_id"]
    with write_transaction(ctx.conn) as tx:
        taken = transitions_ops.take_over_at_intent(tx, transition_id, ctx.owner,
                                                    now + sagas.LEASE_MS, now)
        views_ops.set_main_pane(tx, t["view_id"], main_pane_id, now)
    if not taken:
        return RepairOutcome.SKIPPED
    try:
        sagas.resume(ctx, transition_id)
    except TmuxError:
        return RepairOutcome.SKIPPED  # uncertain again: the new lease expires, the next pass reads
    row = transitions_ops.get_transition(ctx.conn, transition_id)
    return RepairOutcome.RESUMED if row["state"] != "failed" else RepairOutcome.ROLLED_BACK


def _interrupted_mode(ctx: Context, t: sqlite3.Row, layout: ViewLayout, now: int) -> RepairOutcome:
    """A mode toggle is model-free and tmux is its physical truth: the layout tmux
    shows either is the target mode (commit it) or is not (nothing moved: it ends
    failed, and the view keeps the mode it shows; no recovery is needed)."""
    from core.runtime import sagas

    transition_id, phase = t["transition_id"], t["transport_phase"]
    if layout.mode == t["target_mode"]:
        with write_transaction(ctx.conn) as tx:
            if phase in ("intent", "moved"):
                transitions_ops.advance_phase(tx, transition_id, phase, "inspected", now)
        sagas.commit(ctx, transition_id)
        return RepairOutcome.FINISHED
    with write_transaction(ctx.conn) as tx:
        if phase in ("moved", "inspected"):
            transitions_ops.advance_phase(tx, transition_id, phase, "rolled_back", now)
        transitions_ops.move_transition(tx, transition_id, TransitionState.EXECUTING,
                                        TransitionState.FAILED, now,
                                        failure="interrupted before the mode changed; "
                                                "nothing moved")
    return RepairOutcome.ROLLED_BACK


def _fail(ctx: Context, t: sqlite3.Row, why: str, kind: RecoveryKind,
          actionability: Actionability) -> RepairOutcome:
    """Fail the transition (its phase rolled back once it moved) and open its recovery."""
    now = ctx.now()
    with write_transaction(ctx.conn) as conn:
        if t["transport_phase"] in ("moved", "inspected"):
            transitions_ops.advance_phase(conn, t["transition_id"], t["transport_phase"],
                                          "rolled_back", now)
        transitions_ops.move_transition(conn, t["transition_id"], TransitionState.EXECUTING,
                                        TransitionState.FAILED, now, failure=why)
        open_view_recovery(
            ctx, conn, kind, t["view_id"], actionability,
            f"A {t['kind']} was {why}. The registry keeps the last committed placement"
            + ("; running this recovery presents it again." if
               actionability is Actionability.SAFE_AUTO else
               "; open the view and repeat the action if it is still wanted."), now)
    return RepairOutcome.ROLLED_BACK
