"""A frame's own requests: start and stop its agent, close it (a human close is a
transition) and reopen it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from core.context.context import Context
from core.engine.commands.prepare import prepare_simple, prepared, require_live_view
from core.engine.commands.views import view_focus
from core.model.enums import (
    FrameLifecycle,
    FrameRole,
    PlacementState,
    Provider,
    TransitionKind,
    ViewState,
)
from core.model.errors import (
    Conflict,
    InvariantViolation,
    NotFound,
)
from core.model.results import FrameResult, StartResult, TransitionResult
from core.runtime.starts import plan_start_bundle, provider_for
from storage.operations import frames as frames_ops
from storage.operations import sessions as sessions_ops
from storage.operations import transitions as transitions_ops
from storage.operations import views as views_ops


def frame_row(ctx: Context, frame_id: str) -> sqlite3.Row:
    return frames_ops.get_frame(ctx.conn, frame_id)


def frame_result(ctx: Context, request_id: str, transition_id: str | None = None
                  ) -> Callable[[str | None], FrameResult]:
    def build(frame_id: str | None) -> FrameResult:
        assert frame_id is not None
        row = frame_row(ctx, frame_id)
        return FrameResult(request_id, frame_id, row["lifecycle_state"], transition_id)
    return build


def frame_start(ctx: Context, request_id: str, frame_id: str, provider: Provider | None = None,
                *, fresh: bool = False, claim_line: bool = False) -> StartResult:
    """Start the frame's agent: resume its current provider session by exact id when
    that session is stopped and resumable, else the start bundle of a new session
    (a rollover membership when the frame had one before). ``claim_line``: the agent
    starts with the fixed claim line (a task moved to this provider claims its
    handover, ``core.runtime.handover``)."""
    frame = frame_row(ctx, frame_id)
    current = None
    if frame["current_session_key"]:
        current = sessions_ops.get_session(ctx.conn, frame["current_session_key"])
    provider = provider or (Provider(current["provider"]) if current is not None
                            else provider_for(ctx, frame))

    def body(conn: sqlite3.Connection, fp: str, now: int) -> tuple[str, str | None]:
        return "launch", plan_start_bundle(ctx, conn, request_id, frame_id, now,
                                           provider=provider, fresh=fresh)

    def build(launch_id: str | None) -> StartResult:
        if launch_id is None:
            raise InvariantViolation(f"request {request_id} recorded no launch")
        row = ctx.conn.execute("SELECT * FROM launch_intents WHERE launch_id = ?",
                                (launch_id,)).fetchone()
        surface = ctx.conn.execute("SELECT surface_id FROM surfaces WHERE launch_id = ?",
                                    (launch_id,)).fetchone()
        return StartResult(request_id, row["frame_id"], row["session_key"], launch_id,
                           surface["surface_id"])

    if ctx.stage is not None:
        _show_for_start(ctx, request_id, frame_id)
    result = ctx.run_request(request_id, "frame.start",
                              {"frame_id": frame_id, "provider": provider.value,
                               "fresh": fresh}, body, build, build)
    if ctx.stage is not None:
        from core.runtime import sagas
        sagas.launch(ctx, result.launch_id,
                     initial_prompt_for=_undelivered_brief(ctx, frame_id)
                     or ("handover" if claim_line else None))
    return result


def _undelivered_brief(ctx: Context, frame_id: str) -> str | None:
    """A push to this task that failed before its agent ran: the start carries the
    fixed claim line so the agent claims the brief it was never given."""
    row = ctx.conn.execute(
        "SELECT t.transition_id FROM view_transitions t JOIN transition_briefs b"
        " ON b.transition_id = t.transition_id WHERE t.target_frame_id = ?"
        " AND t.kind = 'push' AND t.state = 'failed' AND b.first_claimed_at IS NULL"
        " ORDER BY t.created_at DESC LIMIT 1", (frame_id,)).fetchone()
    return row[0] if row is not None else None


def _show_for_start(ctx: Context, request_id: str, frame_id: str) -> None:
    """n on a frame the view does not show: show it first (a focus), so the started
    agent lands in main as a start always does, instead of being refused."""
    placement = views_ops.placement_of_frame(ctx.conn, frame_id)
    if placement is None:
        return
    view = views_ops.get_view(ctx.conn, placement["view_id"])
    if view["active_frame_id"] == frame_id or view["state"] == ViewState.RETIRED or \
            placement["state"] != PlacementState.STOPPED_AFFINITY:
        return  # shown already, or it runs: the start refuses that by name
    view_focus(ctx, request_id + ":show", view["view_id"], frame_id)


def frame_stop(ctx: Context, request_id: str, frame_id: str) -> FrameResult:
    """Stop a frame's agent: its launch-owned pane is killed (an active one after
    the placeholder takes main), the session is kept, resumable by exact id."""
    from core.runtime import sagas

    def body(conn: sqlite3.Connection, fp: str, now: int) -> tuple[str, str | None]:
        frame = frames_ops.get_frame(conn, frame_id)
        placement = views_ops.placement_of_frame(conn, frame_id)
        if placement is None or placement["state"] not in (
                PlacementState.ACTIVE, PlacementState.PARKED, PlacementState.STAGED):
            raise Conflict(f"frame {frame_id} has no running agent", code="not_running")
        view = views_ops.get_view(conn, placement["view_id"])
        require_live_view(view)
        pending = transitions_ops.pending_for_view(conn, view["view_id"])
        if pending is not None and pending["state"] != "prepared":
            # A prepared one has moved nothing yet: stopping the agent it waits for
            # is the way to run it now (it runs right after the stop).
            raise Conflict("a transition is in flight in this view; let it settle first",
                           code="transition_in_flight")
        if placement["state"] == PlacementState.ACTIVE and ctx.stage is not None:
            ctx.stage.present(view, None)  # the placeholder takes main first
        panes = sagas.stop_runtime(conn, frame_id, now)
        if placement["state"] == PlacementState.ACTIVE:
            views_ops.mutate_view(conn, view["view_id"], view["revision"], now=now)
        stopped.extend(panes)
        del frame
        return "frame", frame_id

    stopped: list[str] = []
    result = ctx.run_request(request_id, "frame.stop", {"frame_id": frame_id}, body,
                             frame_result(ctx, request_id), frame_result(ctx, request_id))
    for pane in stopped:
        if ctx.stage is not None:
            ctx.stage.kill(pane)
    _run_unblocked(ctx, frame_id)
    return result


def _run_unblocked(ctx: Context, frame_id: str) -> None:
    """A prepared push/return that waited for this frame's agent runs once it stopped."""
    from core.runtime import sagas

    rows = ctx.conn.execute(
        "SELECT transition_id FROM view_transitions WHERE state = 'prepared' AND kind IN"
        " ('push', 'complete_return') AND (source_frame_id = ? OR target_frame_id = ?)"
        " ORDER BY created_at", (frame_id, frame_id)).fetchall()
    for row in rows:
        if not sagas.waits_for_stop(ctx, row["transition_id"]):
            sagas.execute(ctx, row["transition_id"])


def frame_close(ctx: Context, request_id: str, frame_id: str) -> TransitionResult:
    """Human close: present the parent first, then stop the child, dismissed."""
    placement = views_ops.placement_of_frame(ctx.conn, frame_id)
    if placement is None:
        # A closed frame may have lost its placement; a replay still finds its request.
        placement = ctx.conn.execute(
            "SELECT * FROM frame_placements WHERE frame_id = ? ORDER BY updated_at DESC",
            (frame_id,)).fetchone()
    if placement is None:
        raise NotFound(f"frame {frame_id} is not placed in any view")

    def resolve(conn: sqlite3.Connection) -> tuple[str, str]:
        frame = frames_ops.get_frame(conn, frame_id)
        if frame["role"] != FrameRole.TASK:
            raise Conflict("the workspace cannot be closed; retire its view instead",
                           code="not_a_task")
        if frame["lifecycle_state"] != FrameLifecycle.OPEN:
            raise Conflict(f"frame {frame_id} is {frame['lifecycle_state']}, not open")
        if frames_ops.open_children(conn, frame_id):
            raise Conflict("close its open child tasks first", code="has_open_children")
        return frame["parent_frame_id"], frame_id

    return prepared(prepare_simple(ctx, request_id, TransitionKind.HUMAN_CLOSE,
                                          placement["view_id"], {"frame_id": frame_id},
                                          resolve))


def frame_reopen(ctx: Context, request_id: str, frame_id: str) -> FrameResult:
    """closed -> open with the same identity and lineage; no runtime is started."""

    def body(conn: sqlite3.Connection, fp: str, now: int) -> tuple[str, str | None]:
        frame = frames_ops.get_frame(conn, frame_id)
        if frame["parent_frame_id"]:
            parent = frames_ops.get_frame(conn, frame["parent_frame_id"])
            if parent["lifecycle_state"] != FrameLifecycle.OPEN:
                raise Conflict("reopen its parent first", code="parent_closed")
        frames_ops.reopen(conn, frame_id, now)
        _rehome_if_stranded(ctx, conn, frame, now)
        return "frame", frame_id

    build = frame_result(ctx, request_id)
    return ctx.run_request(request_id, "frame.reopen", {"frame_id": frame_id}, body,
                           build, build)


def _rehome_if_stranded(ctx: Context, conn: sqlite3.Connection, frame: sqlite3.Row,
                        now: int) -> None:
    """A frame whose view was retired moves to its project's live view, if any."""
    placement = views_ops.placement_of_frame(conn, frame["frame_id"])
    if placement is not None and views_ops.get_view(
            conn, placement["view_id"])["state"] != ViewState.RETIRED:
        return
    live = views_ops.view_of_project(conn, ctx.host_id, frame["project_id"])
    if live is None:
        return  # the next project entry homes it
    if placement is not None:
        views_ops.move_placement(conn, placement["placement_id"], placement["generation"],
                                 PlacementState.ORPHANED, now)
    views_ops.insert_placement(conn, placement_id=ctx.ids.new_id(), host_id=ctx.host_id,
                               view_id=live["view_id"], frame_id=frame["frame_id"],
                               state=PlacementState.STOPPED_AFFINITY, surface_id=None,
                               now=now)
