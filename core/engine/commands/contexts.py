"""A work context's checkout claim: release, block, and a person's resolution.
"""

from __future__ import annotations

import sqlite3

from core.context.context import Context
from core.model.enums import (
    ClaimState,
)
from core.model.errors import (
    Conflict,
    InvariantViolation,
)
from storage.operations import frames as frames_ops
from storage.operations import transitions as transitions_ops


def context_release(ctx: Context, request_id: str, work_context_id: str) -> str:
    """Release a checkout claim only when nothing can still mutate the checkout."""

    def body(conn: sqlite3.Connection, fp: str, now: int) -> tuple[str, str | None]:
        context = frames_ops.get_context(conn, work_context_id)
        if context["background_state"] != "safe":
            raise Conflict(f"background work is {context['background_state']}; "
                           "the claim stays held", code="background_work")
        live = conn.execute(
            "SELECT COUNT(*) FROM surfaces s JOIN frame_placements p"
            " ON p.surface_id = s.surface_id JOIN frames f ON f.frame_id = p.frame_id"
            " WHERE f.work_context_id = ? AND s.lifecycle_state = 'live'",
            (work_context_id,)).fetchone()[0]
        if live:
            raise Conflict(f"{live} live agent pane(s) can still change the checkout",
                           code="live_surfaces")
        if transitions_ops.pending_in_context(conn, work_context_id):
            raise Conflict("a transition is pending in this context",
                           code="transition_in_flight")
        frames_ops.release_claim(conn, work_context_id, context["claim_generation"], now)
        return "work_context", work_context_id

    return ctx.run_request(request_id, "context.release",
                            {"work_context_id": work_context_id}, body,
                           _recorded_id, _recorded_id)


def context_block(ctx: Context, request_id: str, work_context_id: str) -> str:
    """A person blocks the checkout claim (e.g. to work in it by hand): no automatic
    transition may take it until an explicit resolution."""

    def body(conn: sqlite3.Connection, fp: str, now: int) -> tuple[str, str | None]:
        context = frames_ops.get_context(conn, work_context_id)
        if context["claim_state"] == ClaimState.BLOCKED:
            return "work_context", work_context_id
        if transitions_ops.pending_in_context(conn, work_context_id):
            raise Conflict("a transition is in flight in this context; let it settle first",
                           code="transition_in_flight")
        frames_ops.block_claim(conn, work_context_id, context["claim_generation"], now)
        return "work_context", work_context_id

    return ctx.run_request(request_id, "context.block",
                            {"work_context_id": work_context_id}, body,
                           _recorded_id, _recorded_id)


def context_resolve(ctx: Context, request_id: str, work_context_id: str, to_state: ClaimState,
                    foreground_frame_id: str | None = None) -> str:
    """The explicit human resolution of a blocked claim."""

    def body(conn: sqlite3.Connection, fp: str, now: int) -> tuple[str, str | None]:
        context = frames_ops.get_context(conn, work_context_id)
        frames_ops.resolve_blocked(conn, work_context_id, to_state,
                                   foreground_frame_id if to_state is ClaimState.HELD
                                   else None, context["claim_generation"], now)
        return "work_context", work_context_id

    return ctx.run_request(request_id, "context.resolve",
                            {"work_context_id": work_context_id, "to": to_state.value,
                             "foreground": foreground_frame_id}, body,
                           _recorded_id, _recorded_id)


def _recorded_id(result_id: str | None) -> str:
    """The id a context request records (every one records its work context)."""
    if result_id is None:
        raise InvariantViolation("the request recorded no work context")
    return result_id
