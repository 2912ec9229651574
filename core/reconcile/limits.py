"""Agents stopped on a usage limit: the one fixed continue line, once, when it resets.

A turn that ended on a usage or rate limit leaves its frame ``needs_input`` with
the reason ``usage_limit`` and an open ``usage_limit`` recovery (the hook does
that). With ``[limits] auto_resume = true`` each reconcile looks at those: once
the reset time the CLI stated (the turn row ``core.usage`` stored in the session's
evidence file) has passed, the fixed line ``control.continue.v1`` is typed into
that agent's pane, as a control turn is:

- **once**: the recovery is resolved in its own commit *before* anything is typed,
  so no later pass (or a second process) can type it again;
- **fenced**: the pane's input is off while the line goes in (one tmux process),
  and a dialog on screen stops it (the line would answer the dialog);
- **uncertain -> recovery**: when tmux cannot confirm the line, a ``usage_limit``
  recovery marked ``manual`` says so; auto-resume never acts on a manual one.

``switchboard limits --resume-all`` runs the same step without waiting for the reset.
A reset the CLI did not state is never guessed: such an agent waits for the person.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.model.control_line import CONTINUE_TEMPLATE
from core.model.enums import Actionability, RecoveryKind, RecoveryState
from core.model.errors import SwitchboardError
from storage.connection import write_transaction
from storage.operations import recoveries as recoveries_ops

if TYPE_CHECKING:
    from core.context.context import Context

_OPEN_LIMITS = (
    "SELECT r.recovery_id, r.subject_id AS frame_id, f.title, f.current_session_key,"
    " s.activity, s.activity_reason FROM recoveries r"
    " JOIN frames f ON f.frame_id = r.subject_id"
    " LEFT JOIN provider_sessions s ON s.session_key = f.current_session_key"
    " WHERE r.kind = ? AND r.subject_type = 'frame' AND r.state = 'open'"
    " AND r.actionability = ? ORDER BY r.created_at")


def auto_resume(ctx: Context, now: int) -> list[str]:
    """The reconcile step: only with ``[limits] auto_resume`` and a tmux stage."""
    if not ctx.config.limits.auto_resume or ctx.stage is None:
        return []
    return resume_limited(ctx, now, after_reset=True)


def reset_at(ctx: Context, session_key: str) -> str | None:
    """The stated reset time (UTC ISO) of the session's newest turn, if it ended on a
    limit; None when it states none or the evidence file cannot be read."""
    from storage import session_db
    from storage.session_usage import newest_turn

    if ctx.home is None:
        return None
    with session_db.reading(ctx.home.root, session_key) as conn:
        turn = None if conn is None else newest_turn(conn, session_key)
    return turn.limit_reset_at if turn is not None and turn.limit_kind else None


def resume_limited(ctx: Context, now: int, *, after_reset: bool) -> list[str]:
    """Type the continue line into each limited agent (whose reset passed, with
    ``after_reset``); returns the frames it was typed into."""
    from core.runtime.dialogs import dialog_blocks_typing
    from core.runtime.sagas import live_pane
    from storage.session_db import iso

    stage = ctx.require_stage()
    resumed: list[str] = []
    rows = ctx.conn.execute(_OPEN_LIMITS, (RecoveryKind.USAGE_LIMIT.value,
                                           Actionability.OPEN_VIEW.value)).fetchall()
    for row in rows:
        if (row["activity"], row["activity_reason"]) != ("needs_input", "usage_limit"):
            continue  # the agent moved on (a prompt resolves it; the hook may lag)
        if after_reset:
            reset = reset_at(ctx, row["current_session_key"])
            if reset is None or reset > iso(now):
                continue
        surface_id, pane = live_pane(ctx.conn, row["frame_id"])
        if surface_id is None or pane is None:
            continue
        if dialog_blocks_typing(ctx, surface_id, pane):
            continue  # recorded as a dialog wait; the person answers it first
        with write_transaction(ctx.conn) as tx:  # once: recorded before the line
            recoveries_ops.close_recovery(tx, row["recovery_id"], RecoveryState.RESOLVED, now)
        try:
            stage.fence(pane, surface_id)
            stage.paste_control(pane, surface_id=surface_id, text=CONTINUE_TEMPLATE)
        except SwitchboardError as exc:
            _uncertain(ctx, row["frame_id"], row["title"], str(exc), now)
            continue
        finally:
            stage.lift_fence(pane, surface_id)  # refused for a parked pane: stays fenced
        resumed.append(row["frame_id"])
    return resumed


def _uncertain(ctx: Context, frame_id: str, title: str, why: str, now: int) -> None:
    with write_transaction(ctx.conn) as tx:
        recoveries_ops.open_recovery(
            tx, recovery_id=ctx.ids.new_id(), host_id=ctx.host_id,
            kind=RecoveryKind.USAGE_LIMIT, subject_type="frame", subject_id=frame_id,
            actionability=Actionability.MANUAL,
            explanation=f"The continue line may or may not have reached “{title}” after its "
                        f"usage limit reset ({why[:200]}). It will not be typed again; press "
                        "Enter to go there and type to it if it is still waiting.",
            now=now)
