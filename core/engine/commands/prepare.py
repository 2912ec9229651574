"""Preparing a transition and running it: the shared steps of every transition
request (results, the live-view check, prepare-then-maybe-execute).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any

from core.context.context import Context
from core.model.enums import (
    TransitionKind,
    TransitionState,
    ViewState,
)
from core.model.errors import (
    Conflict,
    InvariantViolation,
)
from core.model.results import TransitionResult
from storage.operations import frames as frames_ops
from storage.operations import transitions as transitions_ops
from storage.operations import views as views_ops


def transition_result(ctx: Context, request_id: str
                       ) -> Callable[[str | None], TransitionResult | None]:
    def build(transition_id: str | None) -> TransitionResult | None:
        if transition_id is None:
            return None  # the request was a no-op (e.g. mode already set)
        row = transitions_ops.get_transition(ctx.conn, transition_id)
        return TransitionResult(request_id, transition_id, row["kind"], row["state"],
                                row["transport_phase"], row["view_id"],
                                row["target_frame_id"])
    return build


def prepare_simple(ctx: Context, request_id: str, kind: TransitionKind, view_id: str,
                   semantic: dict[str, Any],
                   resolve: Callable[[sqlite3.Connection], tuple[str, str | None] | None],
                   *, target_mode: Callable[[], str] | None = None
                    ) -> TransitionResult | None:
    """Prepare a model-free transition; ``resolve`` derives (target, source) inside the
    transaction, after the request lookup, so a replay never re-derives them. A
    show-only move (focus, back) is claimed in that same transaction."""
    from core.runtime import sagas

    claimed: list[str] = []

    def body(conn: sqlite3.Connection, fp: str, now: int) -> tuple[str, str | None]:
        view = views_ops.get_view(conn, view_id)
        require_live_view(view)
        resolved = resolve(conn)
        if resolved is None:
            return "none", None
        target_frame_id, source = resolved
        pending = transitions_ops.pending_for_view(conn, view_id)
        if pending is not None:
            # Navigation may replace navigation that has not started; an agent's
            # prepared push or return is never dropped by a keypress.
            if pending["state"] == "prepared" and kind in MODEL_FREE \
                    and pending["kind"] in MODEL_FREE:
                transitions_ops.move_transition(conn, pending["transition_id"],
                                                _ts("prepared"), _ts("superseded"), now)
            else:
                raise Conflict(
                    f"a {pending['kind']} transition is {pending['state']} in this view; "
                    "wait for it to settle or recover it", code="transition_in_flight")
        target = frames_ops.get_frame(conn, target_frame_id)
        context = frames_ops.get_context(conn, target["work_context_id"])
        transition_id = ctx.ids.new_id()
        transitions_ops.insert_transition(
            conn, transition_id=transition_id, request_id=request_id, fingerprint=fp,
            host_id=ctx.host_id, view_id=view_id, kind=kind, source_frame_id=source,
            target_frame_id=target_frame_id, work_context_id=target["work_context_id"],
            expected_view_revision=view["revision"],
            expected_claim_generation=context["claim_generation"], now=now,
            target_mode=target_mode() if target_mode is not None else None)
        if sagas.claim_at_prepare(ctx, conn, transition_id, now):
            claimed.append(transition_id)
        return "transition", transition_id

    result = ctx.run_request(request_id, f"view.{kind.value}", semantic, body,
                             transition_result(ctx, request_id),
                             transition_result(ctx, request_id))
    return maybe_execute(ctx, result, claimed=bool(claimed))


def maybe_execute(ctx: Context, result: TransitionResult | None, *, claimed: bool = False
                   ) -> TransitionResult | None:
    """Run a prepared transition now unless it must wait for its source's Stop;
    ``claimed``: this request's prepare claimed it (``sagas.claim_at_prepare``)."""
    from core.runtime import sagas

    if result is None or (result.state != "prepared" and not claimed):
        return result
    if claimed:
        sagas.execute(ctx, result.transition_id, claimed=True)
    elif not sagas.waits_for_stop(ctx, result.transition_id):
        sagas.execute(ctx, result.transition_id)
    row = transitions_ops.get_transition(ctx.conn, result.transition_id)
    return TransitionResult(result.request_id, result.transition_id, row["kind"],
                            row["state"], row["transport_phase"], row["view_id"],
                            row["target_frame_id"])


MODEL_FREE = (TransitionKind.FOCUS, TransitionKind.BACK, TransitionKind.MODE)


def prepared(result: TransitionResult | None) -> TransitionResult:
    """The result of a request that always prepares a transition (only a mode toggle
    that is already in place prepares none)."""
    if result is None:
        raise InvariantViolation("the request prepared no transition")
    return result


def require_live_view(view: sqlite3.Row) -> None:
    """Only ready or degraded views take mutations; retired is terminal."""
    if view["state"] not in (ViewState.READY, ViewState.DEGRADED, ViewState.TRANSITIONING):
        raise Conflict(f"view {view['view_id']} is {view['state']}; enter the project again "
                       "to get a live view", code="view_not_live")


def _ts(value: str) -> TransitionState:
    return TransitionState(value)
