"""Tasks: push a child with its brief, complete and return with a handoff, cancel a
prepared push or return, back to the parent.
"""

from __future__ import annotations

import sqlite3

from core.context.context import Context
from core.engine.commands.prepare import (
    maybe_execute,
    prepare_simple,
    prepared,
    require_live_view,
    transition_result,
)
from core.model.enums import (
    CloseReason,
    ControlKind,
    ControlTransport,
    CreatedBy,
    FrameLifecycle,
    FrameRole,
    PlacementState,
    Provider,
    TransitionKind,
    TransportPolicy,
)
from core.model.errors import (
    Conflict,
    ProviderError,
    SwitchboardError,
)
from core.model.results import TransitionResult
from core.model.text import TextShape, refuse_unsafe
from core.runtime.starts import provider_of, source_provider
from storage.limits import check_text
from storage.operations import frames as frames_ops
from storage.operations import sessions as sessions_ops
from storage.operations import transitions as transitions_ops
from storage.operations import views as views_ops


def _require_child_provider(ctx: Context, source_frame_id: str, provider: Provider | None) -> None:
    """Refuse a push, before anything is written, whose child's agent could not start.

    The child frame, its placement and the transition are committed first and
    the child is launched later (at the source's Stop, or at once); a provider
    that is not installed then failed that launch and left a stopped frame and
    a placement recovery behind a refusal. The check is the launcher's own
    (``check_provider``, probed once per process), so what passes here launches.
    An engine without a tmux stage launches nothing, so it has nothing to check.
    """
    from core.providers.checks import check_provider

    if ctx.stage is None:
        return
    source = ctx.conn.execute("SELECT * FROM frames WHERE frame_id = ?",
                               (source_frame_id,)).fetchone()
    if source is None:
        return  # the request itself says the frame does not exist
    chosen = provider or source_provider(ctx, ctx.conn, source) or \
        provider_of(ctx, None, source["project_id"])
    try:
        check_provider(ctx.config, chosen)
    except ProviderError as exc:
        raise ProviderError(f"no task was created: its agent would run {chosen.value}, "
                            f"which cannot start here ({exc.message})",
                            code=exc.code) from None


def _depth_refusal(ctx: Context, depth: int, max_depth: int) -> str:
    """Where a person meets the depth limit (an agent's task_push, the navigator's
    p, frame push) it says what the limit is and how to raise it, not just its name."""
    where = f" in {ctx.home.config_path}" if ctx.home is not None else ""
    level = "the workspace" if depth == 0 else \
        f"a task {depth} level{'s' if depth > 1 else ''} below the workspace"
    return (f"no task was created: this frame is {level}, and tasks may go at most "
            f"{max_depth} level{'s' if max_depth > 1 else ''} deep "
            f"([automation] initial_max_depth = {max_depth}). To let tasks push "
            f"their own tasks, set initial_max_depth = {depth + 1} (at most 32) "
            f"under [automation]{where}: an agent's next task_push reads it, a "
            "navigator pane once it restarts.")


def frame_push(ctx: Context, request_id: str, source_frame_id: str, title: str, brief: str, *,
               purpose: str | None = None, provider: Provider | None = None,
               created_by: CreatedBy = CreatedBy.USER) -> TransitionResult:
    """Prepare a push: child frame, its placement, the transition and its brief.

    Execution (parking the parent and presenting the child) waits for the
    source agent's Stop, or runs at once when the source has no live agent.
    """
    title = _checked_task_text(title, brief, purpose)

    def body(conn: sqlite3.Connection, fp: str, now: int) -> tuple[str, str | None]:
        source, view = _push_source(ctx, conn, source_frame_id)
        context = frames_ops.get_context(conn, source["work_context_id"])
        child_id = ctx.ids.new_id()
        chosen = provider or source_provider(ctx, conn, source)
        frames_ops.insert_frame(
            conn, frame_id=child_id, host_id=ctx.host_id, project_id=source["project_id"],
            role=FrameRole.TASK, parent_frame_id=source_frame_id,
            work_context_id=source["work_context_id"], title=title[:200],
            purpose=purpose, preferred_provider=chosen.value if chosen else None,
            created_by=created_by, depth=source["depth"] + 1, now=now)
        views_ops.insert_placement(conn, placement_id=ctx.ids.new_id(),
                                   host_id=ctx.host_id, view_id=view["view_id"],
                                   frame_id=child_id,
                                   state=PlacementState.STOPPED_AFFINITY, surface_id=None,
                                   now=now)
        transition_id = ctx.ids.new_id()
        transitions_ops.insert_transition(
            conn, transition_id=transition_id, request_id=request_id, fingerprint=fp,
            host_id=ctx.host_id, view_id=view["view_id"], kind=TransitionKind.PUSH,
            source_frame_id=source_frame_id, target_frame_id=child_id,
            work_context_id=source["work_context_id"],
            expected_view_revision=view["revision"],
            expected_claim_generation=context["claim_generation"], now=now)
        transitions_ops.insert_brief(
            conn, brief_id=ctx.ids.new_id(), transition_id=transition_id,
            source_frame_id=source_frame_id, source_session_key=source["current_session_key"],
            target_frame_id=child_id, brief=brief, now=now)
        # A new child learns its brief through the launch's initial prompt.
        transitions_ops.insert_control_turn(
            conn, control_turn_id=ctx.ids.new_id(), transition_id=transition_id,
            target_frame_id=child_id, target_session_key=None, kind=ControlKind.CLAIM_BRIEF,
            transport=ControlTransport.RESUME_INITIAL, now=now)
        return "transition", transition_id

    _require_child_provider(ctx, source_frame_id, provider)
    semantic = {"source_frame_id": source_frame_id, "title": title, "brief": brief,
                "purpose": purpose, "provider": provider.value if provider else None}
    result = prepared(ctx.run_request(request_id, "frame.push", semantic, body,
                                      transition_result(ctx, request_id),
                                      transition_result(ctx, request_id)))
    from core.evidence import tasks as evidence_tasks  # after the commit, best effort
    evidence_tasks.task_pushed(ctx, result.transition_id)
    return prepared(maybe_execute(ctx, result))


def frame_complete(ctx: Context, request_id: str, frame_id: str, summary: str, next_action: str,
                   *, source: CreatedBy = CreatedBy.USER) -> TransitionResult:
    """Store the completion handoff, mark the child closing, prepare the return."""
    if not summary.strip():
        raise SwitchboardError("complete-return needs a summary", code="bad_request")
    refuse_unsafe("summary", summary, TextShape.BLOCK)
    refuse_unsafe("next action", next_action, TextShape.BLOCK)
    check_text("summary", summary)
    check_text("next_action", next_action)

    def body(conn: sqlite3.Connection, fp: str, now: int) -> tuple[str, str | None]:
        frame = frames_ops.get_frame(conn, frame_id)
        if frame["role"] != FrameRole.TASK:
            raise Conflict("only a task can complete and return; the workspace has no parent",
                           code="not_a_task")
        if frame["lifecycle_state"] != FrameLifecycle.OPEN:
            raise Conflict(f"frame {frame_id} is {frame['lifecycle_state']}, not open")
        if frames_ops.open_children(conn, frame_id):
            raise Conflict("complete or close its open child tasks first",
                           code="has_open_children")
        parent = frames_ops.get_frame(conn, frame["parent_frame_id"])
        placement = views_ops.placement_of_frame(conn, frame_id)
        if placement is None:
            raise Conflict(f"frame {frame_id} is not placed in any view")
        view = views_ops.get_view(conn, placement["view_id"])
        require_live_view(view)
        context = frames_ops.get_context(conn, frame["work_context_id"])
        transition_id = ctx.ids.new_id()
        transitions_ops.insert_transition(
            conn, transition_id=transition_id, request_id=request_id, fingerprint=fp,
            host_id=ctx.host_id, view_id=view["view_id"],
            kind=TransitionKind.COMPLETE_RETURN, source_frame_id=frame_id,
            target_frame_id=parent["frame_id"], work_context_id=frame["work_context_id"],
            expected_view_revision=view["revision"],
            expected_claim_generation=context["claim_generation"], now=now)
        transitions_ops.insert_handoff(
            conn, handoff_id=ctx.ids.new_id(), transition_id=transition_id,
            source_frame_id=frame_id, source_session_key=frame["current_session_key"],
            target_frame_id=parent["frame_id"], summary=summary, next_action=next_action,
            now=now)
        frames_ops.begin_close(conn, frame_id, CloseReason.COMPLETED, now)
        policy = ctx.config.effective_complete_return(frame["project_id"])
        if policy.value == "synthesize":
            transport = _control_transport(ctx, conn, parent)
            transitions_ops.insert_control_turn(
                conn, control_turn_id=ctx.ids.new_id(), transition_id=transition_id,
                target_frame_id=parent["frame_id"],
                target_session_key=parent["current_session_key"],
                kind=ControlKind.CLAIM_HANDOFF, transport=transport, now=now)
        return "transition", transition_id

    result = prepared(ctx.run_request(
        request_id, "frame.complete",
        {"frame_id": frame_id, "summary": summary, "next_action": next_action},
        body, transition_result(ctx, request_id), transition_result(ctx, request_id)))
    from core.evidence import tasks as evidence_tasks  # after the commit, best effort
    evidence_tasks.task_completed(ctx, result.transition_id)
    return prepared(maybe_execute(ctx, result))


def transition_cancel(ctx: Context, request_id: str, *, view_id: str | None = None,
                      transition_id: str | None = None,
                      by_frame: str | None = None) -> TransitionResult:
    """Withdraw a prepared transition (``prepared -> cancelled``): a push or return
    still waiting for an agent's Stop. Later states are refused by name."""
    from core.reconcile import settlement

    if (view_id is None) == (transition_id is None):
        raise SwitchboardError("name exactly one of a view or a transition to cancel",
                               code="bad_request")
    cancelled = settlement.cancel(ctx, request_id, view_id=view_id,
                                  transition_id=transition_id, by_frame=by_frame)
    result = transition_result(ctx, request_id)(cancelled)
    assert result is not None
    return result


def _control_transport(ctx: Context, conn: sqlite3.Connection,
                       target: sqlite3.Row) -> ControlTransport:
    if ctx.config.control_turns.transport is TransportPolicy.RESUME_ONLY:
        return ControlTransport.RESUME_INITIAL
    placement = views_ops.placement_of_frame(conn, target["frame_id"])
    if placement is not None and placement["surface_id"]:
        surface = sessions_ops.get_surface(conn, placement["surface_id"])
        if surface["lifecycle_state"] == "live":
            return ControlTransport.LIVE_INPUT
    return ControlTransport.RESUME_INITIAL


def frame_back(ctx: Context, request_id: str, view_id: str) -> TransitionResult:
    """Show the exact parent of the active frame; the child stays open and parked."""

    def resolve(conn: sqlite3.Connection) -> tuple[str, str]:
        view = views_ops.get_view(conn, view_id)
        active = frames_ops.get_frame(conn, view["active_frame_id"])
        if active["parent_frame_id"] is None:
            raise Conflict("the workspace has no parent to go back to", code="no_parent")
        return active["parent_frame_id"], active["frame_id"]

    return prepared(prepare_simple(ctx, request_id, TransitionKind.BACK, view_id,
                                          {"view_id": view_id}, resolve))


def _checked_task_text(title: str, brief: str, purpose: str | None) -> str:
    """Refuse a push whose words are empty, unsafe or too long, before anything is
    written; the title as stored (stripped)."""
    refuse_unsafe("title", title, TextShape.LINE)
    title = title.strip()
    if not title:
        raise SwitchboardError("a task needs a non-empty title", code="bad_request")
    if not brief.strip():
        raise SwitchboardError("a task needs a non-empty brief", code="bad_request")
    refuse_unsafe("brief", brief, TextShape.BLOCK)
    refuse_unsafe("purpose", purpose, TextShape.LINE)
    check_text("title", title)
    check_text("brief", brief)
    check_text("purpose", purpose)
    return title


def _push_source(ctx: Context, conn: sqlite3.Connection,
                 source_frame_id: str) -> tuple[sqlite3.Row, sqlite3.Row]:
    """The frame a push starts from and its view, refused by name when it cannot push:
    not open, at the depth limit, not placed, or in a view that is not live."""
    source = frames_ops.get_frame(conn, source_frame_id)
    if source["lifecycle_state"] != FrameLifecycle.OPEN:
        raise Conflict(f"frame {source_frame_id} is not open")
    max_depth = ctx.config.automation.initial_max_depth
    if source["depth"] + 1 > max_depth:
        raise Conflict(_depth_refusal(ctx, source["depth"], max_depth),
                       code="depth_exceeded")
    placement = views_ops.placement_of_frame(conn, source_frame_id)
    if placement is None:
        raise Conflict(f"frame {source_frame_id} is not placed in a view")
    view = views_ops.get_view(conn, placement["view_id"])
    require_live_view(view)
    return source, view
