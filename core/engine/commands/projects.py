"""project.enter: a project shown in its view, its workspace and view created on
first entry.
"""

from __future__ import annotations

import sqlite3

from core.context.context import Context
from core.engine.commands.views import view_focus
from core.model.enums import (
    CreatedBy,
    FrameRole,
    PlacementState,
)
from core.model.errors import (
    NotFound,
)
from core.model.results import RouteResult
from core.model.tokens import token_urlsafe
from storage.operations import frames as frames_ops
from storage.operations import projects as projects_ops
from storage.operations import views as views_ops


def _ensure_project(ctx: Context, conn: sqlite3.Connection, project_id: str, now: int) -> None:
    project = ctx.config.project(project_id)
    checkout = ctx.config.checkout(project.checkout_id)
    if checkout.repository_id:
        repo = next((r for r in ctx.config.repositories
                     if r.repository_id == checkout.repository_id), None)
        if repo is not None:
            projects_ops.upsert_repository(conn, ctx.host_id, repo.repository_id, repo.name)
    projects_ops.upsert_checkout(conn, ctx.host_id, checkout.checkout_id,
                                 checkout.repository_id, checkout.path)
    projects_ops.upsert_project(conn, ctx.host_id, project.project_id, project.name,
                                checkout.checkout_id, now)


def project_enter(ctx: Context, request_id: str, project: str) -> RouteResult:
    """Show a project in its view: create view and workspace on first entry.

    Two concurrent entries serialize on the write lock and the
    one-workspace / one-view-per-project indexes, so they converge. With a
    stage, the view's window is ensured (``core.reconcile.recovery.enter_view``): after
    a tmux server restart it is rebuilt on the running server, and a
    navigator that crashed or was quit runs again.
    """
    project_id = ctx.config.project_id_for(project)

    def body(conn: sqlite3.Connection, fp: str, now: int) -> tuple[str, str | None]:
        _ensure_project(ctx, conn, project_id, now)
        workspace = frames_ops.workspace_of(conn, ctx.host_id, project_id)
        if workspace is None:
            workspace_id = _create_workspace(ctx, conn, project_id, now)
        else:
            workspace_id = workspace["frame_id"]
        view = views_ops.view_of_project(conn, ctx.host_id, project_id)
        if view is None:
            view_id = ctx.ids.new_id()
            views_ops.insert_view(conn, view_id=view_id, host_id=ctx.host_id,
                                  project_id=project_id,
                                  mode=ctx.config.views.cli_default_mode,
                                  active_frame_id=workspace_id,
                                  desktop_token=token_urlsafe(16), now=now)
            _home_open_frames(ctx, conn, project_id, view_id, now)
            frames_ops.touch_focus(conn, workspace_id, now)
            return "view", view_id
        return "view", view["view_id"]

    def finish(view_id: str | None) -> RouteResult:
        assert view_id is not None
        if ctx.stage is not None:
            # An explicit entry: a view whose tmux server restarted is rebuilt on the
            # running one (its server_restarted recovery runs), not refused.
            from core.reconcile.recovery import enter_view
            enter_view(ctx, request_id, view_id)
        view = views_ops.get_view(ctx.conn, view_id)
        target = _route_target(ctx, project_id, view)
        transition_id = None
        if target != view["active_frame_id"]:
            moved = view_focus(ctx, request_id + ":route", view_id, target)
            transition_id = moved.transition_id
            view = views_ops.get_view(ctx.conn, view_id)
        return RouteResult(request_id, project_id, view_id, view["active_frame_id"],
                           view["revision"], transition_id)

    return ctx.run_request(request_id, "project.enter", {"project_id": project_id},
                           body, finish, finish)


def _route_target(ctx: Context, project_id: str, view: sqlite3.Row) -> str:
    """The active frame if it is an open frame of this project, else the most
    recently focused open frame, else the workspace."""
    active = view["active_frame_id"]
    if active:
        row = ctx.conn.execute(
            "SELECT lifecycle_state, project_id FROM frames WHERE frame_id = ?",
            (active,)).fetchone()
        if row and row["lifecycle_state"] == "open" and row["project_id"] == project_id:
            return active
    row = ctx.conn.execute(
        "SELECT frame_id FROM frames WHERE project_id = ? AND host_id = ?"
        " AND lifecycle_state = 'open' ORDER BY COALESCE(last_focused_at, 0) DESC,"
        " role = 'workspace' DESC, frame_id LIMIT 1",
        (project_id, ctx.host_id)).fetchone()
    if row is None:
        raise NotFound(f"project {project_id} has no open frame")
    return row["frame_id"]


def _create_workspace(ctx: Context, conn: sqlite3.Connection, project_id: str, now: int) -> str:
    project = ctx.config.project(project_id)
    frame_id = ctx.ids.new_id()
    context_id = ctx.ids.new_id()
    frames_ops.insert_work_context(conn, work_context_id=context_id, host_id=ctx.host_id,
                                   project_id=project_id, checkout_id=project.checkout_id,
                                   now=now)
    frames_ops.insert_frame(conn, frame_id=frame_id, host_id=ctx.host_id,
                            project_id=project_id, role=FrameRole.WORKSPACE,
                            parent_frame_id=None, work_context_id=context_id,
                            title=project.name, purpose=None,
                            preferred_provider=(project.preferred_provider.value
                                                if project.preferred_provider else None),
                            created_by=CreatedBy.USER, depth=0, now=now)
    return frame_id


def _home_open_frames(ctx: Context, conn: sqlite3.Connection, project_id: str, view_id: str,
                      now: int) -> None:
    """Home every open frame of the project in its new view: on re-entry after a
    retire, its old placement is orphaned first."""
    for frame in conn.execute(
            "SELECT frame_id FROM frames WHERE host_id = ? AND project_id = ?"
            " AND lifecycle_state <> 'closed'", (ctx.host_id, project_id)):
        old = views_ops.placement_of_frame(conn, frame["frame_id"])
        if old is not None and old["view_id"] != view_id:
            views_ops.move_placement(conn, old["placement_id"], old["generation"],
                                     PlacementState.ORPHANED, now)
            old = None
        if old is None:
            views_ops.insert_placement(
                conn, placement_id=ctx.ids.new_id(), host_id=ctx.host_id,
                view_id=view_id, frame_id=frame["frame_id"],
                state=PlacementState.STOPPED_AFFINITY, surface_id=None, now=now)
