"""Starting a frame's agent inside a write transaction: which provider runs it and
the start bundle (session, membership, launch intent, surface, staged placement,
claim). Below the engine's commands because the sagas start a pushed child and
resume a returned-to parent in their own claim transaction.
"""

from __future__ import annotations

import sqlite3

from core.context.context import Context
from core.model.enums import (
    ClaimState,
    FrameLifecycle,
    LaunchAction,
    MembershipReason,
    PlacementState,
    Provider,
)
from core.model.errors import (
    Conflict,
)
from core.model.session_enums import PENDING_SESSION_PREFIX
from core.providers.adapters import get_adapter
from storage.operations import frames as frames_ops
from storage.operations import sessions as sessions_ops
from storage.operations import views as views_ops


def source_provider(ctx: Context, conn: sqlite3.Connection,
                    source: sqlite3.Row) -> Provider | None:
    """A task runs on its parent agent's provider unless the push names one (a
    Codex agent's tasks are Codex tasks), while that provider is enabled."""
    if not source["current_session_key"]:
        return None
    row = conn.execute("SELECT provider FROM provider_sessions WHERE session_key = ?",
                       (source["current_session_key"],)).fetchone()
    if row is None:
        return None
    provider = Provider(row["provider"])
    config = ctx.config.providers.get(provider)
    return provider if config is not None and config.enabled else None


def provider_for(ctx: Context, frame: sqlite3.Row) -> Provider:
    """The provider a new session of ``frame`` runs: the frame's preferred one, else
    its project's, else the first enabled. Public because a push's child is started
    by the saga that executes the push (``core.runtime.sagas``)."""
    return provider_of(ctx, frame["preferred_provider"], frame["project_id"])


def provider_of(ctx: Context, preferred: str | None, project_id: str) -> Provider:
    if preferred:
        return Provider(preferred)
    project = ctx.config.project(project_id)
    if project.preferred_provider:
        return project.preferred_provider
    return ctx.config.default_provider


def plan_start_bundle(ctx: Context, conn: sqlite3.Connection, request_id: str, frame_id: str,
                      now: int, *, provider: Provider | None = None,
                      fresh: bool = False) -> str:
    """Plan a frame's start inside the caller's write transaction; return its launch id.

    The frame's current session is resumed by exact id when it is stopped and
    resumable on ``provider`` (default: that session's provider, else the frame's
    preferred one) and ``fresh`` is not asked; otherwise a new session starts (a
    rollover membership when the frame had one before). Public because the sagas
    plan starts in their own claim transaction: a pushed child's first start and
    a returned-to parent's resume.
    """
    frame = frames_ops.get_frame(conn, frame_id)
    key = frame["current_session_key"]
    session = sessions_ops.get_session(conn, key) if key else None
    if provider is None:
        provider = Provider(session["provider"]) if session is not None \
            else provider_for(ctx, frame)
    if session is not None and not fresh and _resumable(session, provider):
        return start_bundle(ctx, conn, request_id, frame_id, provider,
                            MembershipReason.RESUMED, key, now)
    reason = MembershipReason.STARTED if session is None else MembershipReason.ROLLOVER
    return start_bundle(ctx, conn, request_id, frame_id, provider, reason, None, now)


def start_bundle(ctx: Context, conn: sqlite3.Connection, request_id: str, frame_id: str,
                 provider: Provider, reason: MembershipReason, resume_key: str | None,
                 now: int) -> str:
    """Write a start bundle inside the caller's transaction and return its launch id:
    a new session and membership (or the resumed ``resume_key``), the launch intent,
    its surface, the placement staged, the claim acquired. Public because the saga
    that executes a push starts the child as its own step (``core.runtime.sagas``); the
    choice between resuming and a new session is ``plan_start_bundle``'s."""
    frame = frames_ops.get_frame(conn, frame_id)
    if frame["lifecycle_state"] != FrameLifecycle.OPEN:
        raise Conflict(f"frame {frame_id} is {frame['lifecycle_state']}; reopen it first")
    placement = views_ops.placement_of_frame(conn, frame_id)
    if placement is None:
        raise Conflict(f"frame {frame_id} has no placement in any view")
    if placement["state"] != PlacementState.STOPPED_AFFINITY:
        raise Conflict(
            f"frame {frame_id} already has a {placement['state']} runtime; "
            "stop it before starting another", code="runtime_exists")
    if resume_key is None:
        # The adapter says whether the CLI takes our id or names its own in its
        # first hook (a provisional id that binding re-keys).
        provider_session_id = get_adapter(provider).new_session_id(ctx.ids.new_id())
        key = sessions_ops.insert_session(
            conn, host_id=ctx.host_id, provider=provider,
            provider_session_id=provider_session_id, project_id=frame["project_id"],
            checkout_id=ctx.config.project(frame["project_id"]).checkout_id,
            name=frame["title"], purpose=frame["purpose"], now=now)
        sessions_ops.insert_membership(conn, frame_session_id=ctx.ids.new_id(),
                                       frame_id=frame_id, key=key, reason=reason, now=now)
        frames_ops.set_current_session(conn, frame_id, key, now)
        action, target = LaunchAction.NEW, None
    else:
        key, action, target = resume_key, LaunchAction.RESUME, resume_key
    launch_id = ctx.ids.new_id()
    sessions_ops.insert_launch(conn, launch_id=launch_id, request_id=request_id,
                               host_id=ctx.host_id, frame_id=frame_id, provider=provider,
                               action=action, target_session_key=target, key=key, now=now)
    surface_id = ctx.ids.new_id()
    sessions_ops.insert_surface(conn, surface_id=surface_id, host_id=ctx.host_id,
                                provider=provider, key=key, launch_id=launch_id, now=now)
    views_ops.move_placement(conn, placement["placement_id"], placement["generation"],
                             PlacementState.STAGED, now, surface_id=surface_id,
                             change_surface=True)
    context = frames_ops.get_context(conn, frame["work_context_id"])
    if context["claim_state"] == ClaimState.RELEASED:
        frames_ops.acquire_claim(conn, context["work_context_id"], frame_id,
                                 context["claim_generation"], now)
    elif context["claim_state"] == ClaimState.BLOCKED:
        raise Conflict("the checkout claim is blocked; resolve it first",
                       code="claim_blocked")
    return launch_id


def _resumable(session: sqlite3.Row, provider: Provider) -> bool:
    """A stopped session of the same provider whose exact id is known can be resumed."""
    return (session["provider"] == provider.value
            and session["runtime_presence"] != "live"
            and session["resumability"] != "missing"
            and not session["provider_session_id"].startswith(PENDING_SESSION_PREFIX))
