"""A view's requests: focus a frame, switch navigator/direct mode, retire it.
"""

from __future__ import annotations

import sqlite3

from core.context.context import Context
from core.engine.commands.prepare import prepare_simple, prepared
from core.model.enums import (
    FrameLifecycle,
    TransitionKind,
    ViewMode,
    ViewState,
)
from core.model.errors import (
    Conflict,
)
from core.model.results import TransitionResult, ViewResult
from storage.operations import frames as frames_ops
from storage.operations import transitions as transitions_ops
from storage.operations import views as views_ops


def view_focus(ctx: Context, request_id: str, view_id: str, frame_id: str) -> TransitionResult:
    """Navigation only: no lineage, nothing closes."""

    def resolve(conn: sqlite3.Connection) -> tuple[str, str | None]:
        frame = frames_ops.get_frame(conn, frame_id)
        if frame["lifecycle_state"] != FrameLifecycle.OPEN:
            raise Conflict(f"frame {frame_id} is {frame['lifecycle_state']}; only open "
                           "frames can be shown (reopen it first)", code="frame_not_open")
        placement = views_ops.placement_of_frame(conn, frame_id)
        if placement is None or placement["view_id"] != view_id:
            raise Conflict(f"frame {frame_id} is not placed in view {view_id}")
        return frame_id, views_ops.get_view(conn, view_id)["active_frame_id"]

    return prepared(prepare_simple(ctx, request_id, TransitionKind.FOCUS, view_id,
                                          {"view_id": view_id, "frame_id": frame_id},
                                          resolve))


def view_mode(ctx: Context, request_id: str, view_id: str,
              mode: ViewMode | None = None) -> ViewResult:
    """Set (or, with no mode, toggle) navigator/direct as a model-free ``mode``
    transition; the provider pane never moves or restarts."""
    chosen: dict[str, str] = {}

    def resolve(conn: sqlite3.Connection) -> tuple[str, str | None] | None:
        view = views_ops.get_view(conn, view_id)
        chosen["mode"] = (mode or (ViewMode.DIRECT if view["mode"] == ViewMode.NAVIGATOR
                                   else ViewMode.NAVIGATOR)).value
        if view["mode"] == chosen["mode"]:
            return None  # already there: the request is recorded, nothing moves
        if view["active_frame_id"] is None:
            raise Conflict("the view shows no frame yet; enter its project first",
                           code="view_empty")
        return view["active_frame_id"], view["active_frame_id"]

    result = prepare_simple(ctx, request_id, TransitionKind.MODE, view_id,
        {"view_id": view_id, "mode": mode.value if mode else "toggle"},
        resolve, target_mode=lambda: chosen["mode"])
    row = views_ops.get_view(ctx.conn, view_id)
    if result is None and mode is ViewMode.NAVIGATOR and ctx.stage is not None \
            and row["mode"] == ViewMode.NAVIGATOR and row["tmux_window_id"]:
        # Already navigator mode (prefix+S): a navigator that crashed or was quit
        # is brought back in place; a live one is left exactly as it is.
        ctx.stage.set_mode(row, ViewMode.NAVIGATOR)
    return ViewResult(request_id, view_id, row["mode"], row["revision"],
                      row["active_frame_id"])


def view_retire(ctx: Context, request_id: str, view_id: str) -> ViewResult:
    def body(conn: sqlite3.Connection, fp: str, now: int) -> tuple[str, str | None]:
        view = views_ops.get_view(conn, view_id)
        if transitions_ops.pending_for_view(conn, view_id) is not None:
            raise Conflict("a transition is in flight in this view")
        live = conn.execute(
            "SELECT COUNT(*) FROM frame_placements p JOIN surfaces s"
            " ON s.surface_id = p.surface_id WHERE p.view_id = ?"
            " AND s.lifecycle_state = 'live'", (view_id,)).fetchone()[0]
        if live:
            raise Conflict(f"view has {live} live agent pane(s); stop them first",
                           code="live_surfaces")
        views_ops.mutate_view(conn, view_id, view["revision"], state=ViewState.RETIRED,
                              now=now)
        # Its placements stay until the next entry re-homes them, so every open
        # frame always has exactly one owning placement.
        return "view", view_id

    def build(_: str | None) -> ViewResult:
        row = views_ops.get_view(ctx.conn, view_id)
        return ViewResult(request_id, view_id, row["mode"], row["revision"],
                          row["active_frame_id"])

    return ctx.run_request(request_id, "view.retire", {"view_id": view_id}, body, build,
                           build)
