"""The recoveries that say a presented push or return waits for its claim.

Opened by the saga that presents a target it could not type the line into
(``core.runtime.sagas``) and by the settlement sweep when a claim is overdue
(``core.reconcile.settlement``); both import them from here, below either of them.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

from core.model.enums import Actionability, RecoveryKind, TransitionKind
from storage.operations import recoveries as recoveries_ops
from storage.operations import transitions as transitions_ops

if TYPE_CHECKING:
    from core.context.context import Context

SETTLE_KEY = "Enter"
"""The navigator key (and ``switchboard recovery run``) that runs a safe_auto recovery."""


def frame_title(conn: sqlite3.Connection, frame_id: str | None) -> str:
    """A frame's title in quotes for a recovery's sentence, or a neutral phrase."""
    if frame_id is None:
        return "the frame"
    row = conn.execute("SELECT title FROM frames WHERE frame_id = ?", (frame_id,)).fetchone()
    return f"“{row['title']}”" if row is not None else "the frame"


def open_unclaimed(ctx: Context, conn: sqlite3.Connection, row: sqlite3.Row,
                   now: int) -> int:
    """The one view recovery for an unclaimed presentation (stable id: reopening is a
    no-op); a typed control turn becomes uncertain with its own recovery."""
    view_id = row["view_id"]
    exists = conn.execute(
        "SELECT 1 FROM recoveries WHERE kind = ? AND subject_type = 'view' AND subject_id = ?"
        " AND state = 'open'", (RecoveryKind.TRANSITION_INTERRUPTED.value, view_id)).fetchone()
    if exists is not None:
        return 0
    target = frame_title(conn, row["target_frame_id"])
    source = frame_title(conn, row["source_frame_id"])
    control = transitions_ops.control_turn_of(conn, row["transition_id"])
    record = "brief" if row["kind"] == TransitionKind.PUSH else "handoff"
    if control is not None and control["state"] == "prepared":
        why = (f"{target} was shown but its activity is not proven idle, so the claim line "
               "was not typed")
    elif control is not None and control["state"] in ("submitted", "observed", "uncertain"):
        why = f"the claim line reached {target} but it has not claimed the {record}"
        mark_uncertain(ctx, conn, control, target, record, now)
    else:
        why = f"{target} has not claimed the {record}"
    explanation = (
        f"The {row['kind'].replace('_', '-')} from {source} is waiting: {why}. "
        f"Press {SETTLE_KEY} (R) to settle it: the view is ready again and the {record} stays "
        f"pending for {target} (its next transition_claim() returns it; nothing is typed).")
    recoveries_ops.open_recovery(
        conn, recovery_id=ctx.ids.new_id(), host_id=ctx.host_id,
        kind=RecoveryKind.TRANSITION_INTERRUPTED, subject_type="view", subject_id=view_id,
        actionability=Actionability.SAFE_AUTO, explanation=explanation, now=now)
    return 1


def mark_uncertain(ctx: Context, conn: sqlite3.Connection, control: sqlite3.Row,
                   target: str, record: str, now: int) -> None:
    """A control turn whose line may have been typed: ``uncertain`` (never retyped),
    with its own recovery saying where to look."""
    if control["state"] in ("submitted", "observed"):
        transitions_ops.move_control(conn, control["control_turn_id"], (control["state"],),
                                     "uncertain", now, failure="no claim followed the line")
    recoveries_ops.open_recovery(
        conn, recovery_id=ctx.ids.new_id(), host_id=ctx.host_id,
        kind=RecoveryKind.CONTROL_SUBMIT_UNCERTAIN, subject_type="control_turn",
        subject_id=control["control_turn_id"], actionability=Actionability.OPEN_VIEW,
        explanation=f"The claim line was typed into {target} once and is never typed again. "
                    f"Press Enter on this recovery to go to {target} and ask it to call "
                    f"transition_claim(): the {record} is still there.", now=now)
