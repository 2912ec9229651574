"""Fork a frame: a sibling task whose agent continues a copy of the frame's conversation.

The fork is a new task beside the frame (same parent, same view, same checkout
claim); its first session starts as a fork of the frame's current provider session
(``core.runtime.forks``: Claude ``--resume ID --fork-session --session-id NEW``,
Codex ``fork ID``), with a session id of its own, while the original frame keeps its
session and its running agent. A fork of the workspace is a child task of the
workspace: a project has exactly one workspace, so the workspace has no sibling.

``worktree``: the fork works in a git worktree of its own. A checkout is a project
here (one work context per checkout), so the worktree becomes its project
(``core.install.worktree``, named ``<project>-fork-<id>``) and the fork a task under
that project's workspace, in that project's view: the same conversation, another
checkout, the original's files untouched.
"""

from __future__ import annotations

import hashlib
import sqlite3

from core.context.context import Context
from core.engine.commands.frames import frame_result, frame_start
from core.engine.commands.prepare import require_live_view
from core.engine.commands.projects import project_enter
from core.model.enums import CreatedBy, FrameLifecycle, FrameRole, PlacementState, Provider
from core.model.errors import Conflict, ProviderError, SwitchboardError
from core.model.results import FrameResult
from core.model.session_enums import PENDING_SESSION_PREFIX
from core.model.text import TextShape, refuse_unsafe
from core.runtime import forks
from storage.limits import check_text
from storage.operations import frames as frames_ops
from storage.operations import transitions as transitions_ops
from storage.operations import views as views_ops

FORK_PREFIX = "fork of "


def fork_title(source_title: str, title: str | None) -> str:
    """The fork's title: the one given (checked as any task title), else ``fork of
    <the frame's title>`` cut to the 200 characters a title may hold."""
    if title is None:
        return (FORK_PREFIX + source_title)[:200]
    refuse_unsafe("title", title, TextShape.LINE)
    title = title.strip()
    if not title:
        raise SwitchboardError("a fork needs a non-empty title (or leave --title out)",
                               code="bad_request")
    check_text("title", title)
    return title


def frame_fork(ctx: Context, request_id: str, frame_id: str, *, title: str | None = None,
               start: bool = True, worktree: bool = False) -> FrameResult:
    """Make the fork and (``start``, with a tmux stage) start its agent as a fork.

    Refused by name, before anything is written: a frame that is not open, has no
    session, whose session has no id of its own yet (a Codex thread before its first
    prompt), is not placed in a live view, or is the workspace at the depth limit.
    """
    if title is not None:
        fork_title("", title)  # refuse bad words before the transaction
    into = _worktree_workspace(ctx, request_id, frame_id) if worktree else None

    def body(conn: sqlite3.Connection, fp: str, now: int) -> tuple[str, str | None]:
        source = frames_ops.get_frame(conn, frame_id)
        session = _forkable_session(conn, source)
        home = source if into is None else frames_ops.get_frame(conn, into)
        parent_id, depth = _fork_parent(ctx, source) if into is None else (into, 1)
        placement = views_ops.placement_of_frame(conn, home["frame_id"])
        if placement is None:
            raise Conflict(f"frame {frame_id} is not placed in a view; open its project "
                           "first", code="not_placed")
        require_live_view(views_ops.get_view(conn, placement["view_id"]))
        pending = transitions_ops.pending_for_view(conn, placement["view_id"])
        if start and pending is not None and pending["state"] != "prepared":
            # The fork's start shows it, which waits for nothing: refused now rather
            # than leaving a fork that did not start.
            raise Conflict(f"a {pending['kind']} transition is {pending['state']} in this "
                           "view; fork once it settles", code="transition_in_flight")
        fork_id = ctx.ids.new_id()
        # The origin first: a fork frame never exists without it (a rolled-back
        # transaction leaves only a file no frame names).
        forks.record_origin(ctx, fork_id, session["session_key"])
        frames_ops.insert_frame(
            conn, frame_id=fork_id, host_id=ctx.host_id, project_id=home["project_id"],
            role=FrameRole.TASK, parent_frame_id=parent_id,
            work_context_id=home["work_context_id"],
            title=fork_title(source["title"], title), purpose=source["purpose"],
            preferred_provider=session["provider"], created_by=CreatedBy.USER,
            depth=depth, now=now)
        views_ops.insert_placement(conn, placement_id=ctx.ids.new_id(), host_id=ctx.host_id,
                                   view_id=placement["view_id"], frame_id=fork_id,
                                   state=PlacementState.STOPPED_AFFINITY, surface_id=None,
                                   now=now)
        return "frame", fork_id

    _require_provider(ctx, frame_id)
    build = frame_result(ctx, request_id)
    result = ctx.run_request(request_id, "frame.fork",
                             {"frame_id": frame_id, "title": title, "start": start,
                              "worktree": worktree},
                             body, build, build)
    if start and ctx.stage is not None and result.lifecycle_state == FrameLifecycle.OPEN:
        fork = frames_ops.get_frame(ctx.conn, result.frame_id)
        if not fork["current_session_key"]:
            frame_start(ctx, request_id + ":start", result.frame_id,
                        Provider(fork["preferred_provider"]))
    return result


def _worktree_workspace(ctx: Context, request_id: str, frame_id: str) -> str:
    """The workspace of the fork's own worktree project, made (``git worktree add`` and a
    project) unless this request made it already; the frame is checked first, so a
    frame that cannot be forked makes no worktree."""
    from core.config.config import load_config
    from core.install.worktree import add_worktree, worktree_project_name

    source = frames_ops.get_frame(ctx.conn, frame_id)
    _forkable_session(ctx.conn, source)
    if ctx.config.automation.initial_max_depth < 1:
        raise Conflict("a fork in a worktree is a task below that worktree's workspace, and "
                       "tasks are off ([automation] initial_max_depth = 0)",
                       code="depth_exceeded")
    home = ctx.require_home()
    base = ctx.config.project(source["project_id"]).name
    # Named after the request, so a retried request finds the worktree it made.
    name = "fork-" + hashlib.sha256(request_id.encode()).hexdigest()[:8]
    project = worktree_project_name(base, name)
    if not any(p.name == project for p in ctx.config.projects):
        add_worktree(home, base, name)
        ctx.config = load_config(home.config_path)
    route = project_enter(ctx, request_id + ":worktree", project)
    workspace = frames_ops.workspace_of(ctx.conn, ctx.host_id, route.project_id)
    if workspace is None:
        raise Conflict(f"project {project!r} has no workspace after its entry",
                       code="worktree_unplaced")
    return str(workspace["frame_id"])


def _forkable_session(conn: sqlite3.Connection, source: sqlite3.Row) -> sqlite3.Row:
    frame_id = source["frame_id"]
    if source["lifecycle_state"] != FrameLifecycle.OPEN:
        raise Conflict(f"frame {frame_id} is {source['lifecycle_state']}; only an open frame "
                       "can be forked (reopen it first)", code="not_open")
    key = source["current_session_key"]
    session = conn.execute("SELECT * FROM provider_sessions WHERE session_key = ?",
                           (key,)).fetchone() if key else None
    if session is None:
        raise Conflict(f"frame {frame_id} has no agent session to fork; start it first "
                       "(n in the navigator)", code="no_session")
    if session["provider_session_id"].startswith(PENDING_SESSION_PREFIX):
        raise Conflict(f"the {session['provider']} session of frame {frame_id} has no id of "
                       "its own until its first prompt; send it one, then fork",
                       code="session_unbound")
    if session["resumability"] == "missing":
        raise Conflict(f"the session of frame {frame_id} never ran (its start failed); "
                       "there is no conversation to fork", code="session_missing")
    return session


def _fork_parent(ctx: Context, source: sqlite3.Row) -> tuple[str, int]:
    """The fork's parent and depth: the frame's own parent (a sibling), or, for the
    workspace, the workspace itself (a child task, within the depth limit)."""
    if source["role"] == FrameRole.TASK:
        return source["parent_frame_id"], source["depth"]
    if ctx.config.automation.initial_max_depth < 1:
        raise Conflict("a fork of the workspace is a task below it, and tasks are off "
                       "([automation] initial_max_depth = 0)", code="depth_exceeded")
    return source["frame_id"], 1


def _require_provider(ctx: Context, frame_id: str) -> None:
    """A fork whose agent could not start here is refused before the frame is made
    (the push's rule: what passes launches)."""
    from core.providers.checks import check_provider

    if ctx.stage is None:
        return
    row = ctx.conn.execute(
        "SELECT ps.provider FROM frames f JOIN provider_sessions ps"
        " ON ps.session_key = f.current_session_key WHERE f.frame_id = ?",
        (frame_id,)).fetchone()
    if row is None:
        return  # the request says why (no frame, no session)
    try:
        check_provider(ctx.config, Provider(row["provider"]))
    except ProviderError as exc:
        raise ProviderError(f"no fork was made: its agent would run {row['provider']}, "
                            f"which cannot start here ({exc.message})", code=exc.code) from None
