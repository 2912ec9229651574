"""Transition sagas: durable intent first, then tmux effects, then the commit.

Every step is a small function over the transition row. Progress lives in
``state`` and ``transport_phase`` so an interrupted saga is inspectable by
``core.reconcile`` instead of repeatable: committed or rolled-back work never
runs again, and a swap is never repeated blindly.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

from core.model.enums import (
    Actionability,
    ClaimState,
    CloseReason,
    ControlTransport,
    FrameLifecycle,
    MembershipReason,
    PlacementState,
    RecoveryKind,
    RecoveryState,
    RuntimePresence,
    TransitionKind,
    TransitionState,
    ViewMode,
)
from core.model.errors import Conflict, InvariantViolation, SwitchboardError
from core.runtime import starts
from core.tmux.errors import (
    PaneNotFound,
    PlacementRefused,
    ServerIdentityMismatch,
    TmuxUnavailable,
    UnmanagedPane,
)
from storage.connection import write_transaction
from storage.operations import frames as frames_ops
from storage.operations import recoveries as recoveries_ops
from storage.operations import sessions as sessions_ops
from storage.operations import transitions as transitions_ops
from storage.operations import views as views_ops

if TYPE_CHECKING:
    from core.context.context import Context

LEASE_MS = 30_000
_SERVER_GONE = (ServerIdentityMismatch, TmuxUnavailable)
T = TransitionState


def waits_for_stop(ctx: Context, transition_id: str) -> bool:
    """Push and complete-return run after the source agent's trusted Stop; a return
    that will type its claim line also waits for a working parent's Stop (the line
    needs a proven idle parent, so a busy one blocks instead of being guessed at)."""
    row = transitions_ops.get_transition(ctx.conn, transition_id)
    if row["kind"] not in (TransitionKind.PUSH, TransitionKind.COMPLETE_RETURN):
        return False
    if agent_working(ctx.conn, row["source_frame_id"]):
        return True
    if row["kind"] != TransitionKind.COMPLETE_RETURN:
        return False
    control = transitions_ops.control_turn_of(ctx.conn, transition_id)
    return control is not None and control["state"] == "prepared" and \
        agent_working(ctx.conn, row["target_frame_id"])


def agent_working(conn: sqlite3.Connection, frame_id: str) -> bool:
    """A live runtime in the middle of a turn: evidence (a Stop, a claim) may still come.
    (Reconcile's settlement asks the same.)"""
    key = frames_ops.get_frame(conn, frame_id)["current_session_key"]
    if key is None:
        return False
    session = sessions_ops.get_session(conn, key)
    return session["runtime_presence"] == "live" and session["activity"] == "working"


def live_pane(conn: sqlite3.Connection, frame_id: str) -> tuple[str | None, str | None]:
    """(surface_id, pane_id) of a frame's live runtime, if any (also read by
    ``core.reconcile.settlement`` and ``core.reconcile.recovery`` before they touch its pane)."""
    placement = views_ops.placement_of_frame(conn, frame_id)
    if placement is None or placement["surface_id"] is None:
        return None, None
    surface = sessions_ops.get_surface(conn, placement["surface_id"])
    if surface["lifecycle_state"] != "live":
        return surface["surface_id"], None
    return surface["surface_id"], surface["pane_id"]


#: Moves claimed in the transaction that prepares them, and recorded whole in the
#: commit after their swap: they start nothing and type nothing, so no step between
#: prepare and claim, or between the swap's re-read and the commit, has work of its own.
SHOW_ONLY = (TransitionKind.FOCUS, TransitionKind.BACK)


def claim_at_prepare(ctx: Context, conn: sqlite3.Connection, transition_id: str,
                     now: int) -> bool:
    """Claim a just-prepared show-only move inside its prepare transaction (one commit
    less per focus). False leaves it prepared: ``execute`` then fails it and says why."""
    row = transitions_ops.get_transition(conn, transition_id)
    if row["kind"] not in SHOW_ONLY or \
            _claim_failure(conn, row, views_ops.get_view(conn, row["view_id"])) is not None:
        return False
    transitions_ops.claim_execution(conn, transition_id, ctx.owner, now + LEASE_MS, now)
    return True


def execute(ctx: Context, transition_id: str, *, claimed: bool = False) -> None:
    """Claim a prepared transition and drive it to presented (or failed); ``claimed``
    when ``claim_at_prepare`` already did in the prepare's transaction."""
    if claimed:
        _drive(ctx, transition_id, transitions_ops.get_transition(ctx.conn, transition_id),
               [])
        return
    now = ctx.now()
    stop_first: list[str] = []
    with write_transaction(ctx.conn) as conn:
        row = transitions_ops.get_transition(conn, transition_id)
        if row["state"] != T.PREPARED:
            return
        view = views_ops.get_view(conn, row["view_id"])
        failure = _claim_failure(conn, row, view)
        if failure is not None:
            transitions_ops.move_transition(conn, transition_id, T.PREPARED, T.FAILED, now,
                                            failure=failure)
            raise Conflict(f"transition could not start: {failure}", code="stale_transition")
        transitions_ops.claim_execution(conn, transition_id, ctx.owner,
                                        now + LEASE_MS, now)
        if row["kind"] in (TransitionKind.PUSH, TransitionKind.COMPLETE_RETURN):
            # A recovery that said this transition waits for a Stop is answered now.
            recoveries_ops.resolve_for_subject(conn, RecoveryKind.TRANSITION_INTERRUPTED,
                                               "view", row["view_id"], now)
        if row["kind"] == TransitionKind.PUSH:
            child = frames_ops.get_frame(conn, row["target_frame_id"])
            starts.start_bundle(ctx, conn, row["request_id"], child["frame_id"],
                                starts.provider_for(ctx, child), MembershipReason.STARTED, None,
                                now)
            child = frames_ops.get_frame(conn, row["target_frame_id"])
            transitions_ops.target_session_of_transition(conn, transition_id,
                                                         child["current_session_key"])
        elif row["kind"] == TransitionKind.COMPLETE_RETURN and ctx.stage is not None:
            stop_first = _plan_parent_resume(ctx, conn, row, now)
    _drive(ctx, transition_id, row, stop_first)


def _drive(ctx: Context, transition_id: str, row: sqlite3.Row, stop_first: list[str]
           ) -> None:
    """From the claim on: stop what must go first, move, deliver what became readable."""
    ctx.fault_point("after_claim")
    for pane in stop_first:  # resume_only: the idle parent's old runtime goes first
        ctx.require_stage().kill(pane)
    _move(ctx, transition_id)
    from core.broker import membership

    # A newly shown, ready agent gets its lines.
    if row["kind"] in SHOW_ONLY:
        membership.after_focus(ctx, row["view_id"], row["target_frame_id"])
    else:
        membership.after_presentation(ctx, row["view_id"])


def _plan_parent_resume(ctx: Context, conn: sqlite3.Connection, row: sqlite3.Row,
                        now: int) -> list[str]:
    """A return to a parent with no live agent: plan its exact-session resume.

    Live input needs a proven idle, owned, live pane; without one the control turn
    uses ``resume_initial`` (the same fixed line as the resumed CLI's initial prompt).
    Under ``resume_only`` a live parent proven idle (ready, no permission prompt) is
    stopped first and resumed the same way; a busy or ambiguous one is left alone
    and its turn stays prepared. Returns the panes to kill after the commit.
    """
    control = transitions_ops.control_turn_of(conn, row["transition_id"])
    if control is None or control["state"] != "prepared":
        return []  # handoff policy (no control turn), or already under way
    parent = frames_ops.get_frame(conn, row["target_frame_id"])
    _surface, pane = live_pane(conn, parent["frame_id"])
    stop_first: list[str] = []
    if pane is not None:
        if control["transport"] != ControlTransport.RESUME_INITIAL or \
                not _proven_idle(conn, parent["current_session_key"]):
            return []
        stop_first = stop_runtime(conn, parent["frame_id"], now)
    placement = views_ops.placement_of_frame(conn, parent["frame_id"])
    if placement is None or placement["state"] != PlacementState.STOPPED_AFFINITY:
        return stop_first
    starts.plan_start_bundle(ctx, conn, row["request_id"], parent["frame_id"], now)
    parent = frames_ops.get_frame(conn, row["target_frame_id"])
    transitions_ops.plan_resume_initial(conn, control["control_turn_id"],
                                        parent["current_session_key"], now)
    return stop_first


def _proven_idle(conn: sqlite3.Connection, session_key: str | None) -> bool:
    """Ready after a trusted Stop and free of a permission prompt."""
    if session_key is None:
        return False
    session = sessions_ops.get_session(conn, session_key)
    return session["activity"] == "ready" and session["activity_reason"] != "permission"


def _pending_launch(conn: sqlite3.Connection, frame_id: str) -> str | None:
    placement = views_ops.placement_of_frame(conn, frame_id)
    if placement is None or placement["state"] != PlacementState.STAGED \
            or placement["surface_id"] is None:
        return None
    surface = sessions_ops.get_surface(conn, placement["surface_id"])
    launch_row = conn.execute("SELECT state FROM launch_intents WHERE launch_id = ?",
                              (surface["launch_id"],)).fetchone()
    return surface["launch_id"] if launch_row and launch_row["state"] == "planned" else None


def _claim_failure(conn: sqlite3.Connection, row: sqlite3.Row, view: sqlite3.Row) -> str | None:
    if view["revision"] != row["expected_view_revision"] and row["kind"] not in (
            TransitionKind.PUSH, TransitionKind.COMPLETE_RETURN):
        return (f"view revision moved from {row['expected_view_revision']} to "
                f"{view['revision']}")
    target = frames_ops.get_frame(conn, row["target_frame_id"])
    if target["lifecycle_state"] != FrameLifecycle.OPEN:
        return "target frame is not open"
    if row["kind"] in (TransitionKind.PUSH, TransitionKind.COMPLETE_RETURN):
        context = frames_ops.get_context(conn, row["work_context_id"])
        if context["claim_generation"] != row["expected_claim_generation"] and \
                context["foreground_frame_id"] != row["source_frame_id"]:
            return "work context claim moved"
    placement = views_ops.placement_of_frame(conn, row["target_frame_id"])
    if placement is None or placement["view_id"] != row["view_id"]:
        return "target is not placed in this view"
    return None


def resume(ctx: Context, transition_id: str) -> None:
    """Drive an executing transition from ``intent`` (reconcile, after reading that
    nothing moved); the control turn and launch steps skip what already happened."""
    _move(ctx, transition_id)


def _move(ctx: Context, transition_id: str) -> None:
    """The external part: launch/paste/swap, then re-read and commit."""
    conn = ctx.conn
    row = transitions_ops.get_transition(conn, transition_id)
    stage = ctx.stage
    if stage is not None:
        if row["kind"] == TransitionKind.PUSH:
            child_placement = views_ops.placement_of_frame(conn, row["target_frame_id"])
            if child_placement is None or child_placement["surface_id"] is None:
                # Its start was interrupted and failed before a pane existed (reconcile
                # never retries a launch by inference): nothing moved, roll back.
                _roll_back(ctx, transition_id, "the task's agent start was interrupted "
                           "before its pane existed; nothing launched. Select the task and "
                           "press n to start it")
                return
            surface = sessions_ops.get_surface(conn, child_placement["surface_id"])
            try:
                launch(ctx, surface["launch_id"], present=False,
                       initial_prompt_for=transition_id)
            except SwitchboardError as exc:  # refused before the child could run
                _roll_back(ctx, transition_id, f"nothing launched: {exc.message}",
                           server_restarted=isinstance(exc, ServerIdentityMismatch))
                return
            ctx.fault_point("after_launch")
        if row["kind"] == TransitionKind.COMPLETE_RETURN:
            resume_launch = _pending_launch(conn, row["target_frame_id"])
            if resume_launch is not None:
                # The parent was not running: it is resumed on its exact session with
                # the fixed line as its initial prompt, gated until it is in main.
                try:
                    launch(ctx, resume_launch, present=False,
                           initial_prompt_for=transition_id)
                except SwitchboardError as exc:
                    _roll_back(ctx, transition_id, f"nothing launched: {exc.message}",
                               server_restarted=isinstance(exc, ServerIdentityMismatch))
                    return
                ctx.fault_point("after_launch")
            _submit_control_turn(ctx, transition_id)
        if row["kind"] == TransitionKind.MODE:
            _move_mode(ctx, row)
            return
        _surface_id, target_pane = live_pane(conn, row["target_frame_id"])
        view = views_ops.get_view(conn, row["view_id"])
        control = transitions_ops.control_turn_of(conn, transition_id)
        # A typed claim line not yet seen by its UserPromptSubmit keeps the target
        # fenced in main; that hook or the settlement watchdog lifts the fence.
        fenced = control is not None and control["transport"] == ControlTransport.LIVE_INPUT \
            and control["state"] == "submitted"
        # The intent is recorded; the swap batch below is a tmux process of its own,
        # which outlives this one if it is killed while the batch is in flight.
        ctx.fault_point("before_swap")
        main_seen: str | None = None  # a show-only move records main in its one commit
        try:
            # One guarded tmux process: swap, fence the old main, open a staged
            # target's launch gate, re-read both panes.
            if row["kind"] in SHOW_ONLY:
                presented = stage.present_unrecorded(view, target_pane,
                                                     enable_input=not fenced)
                shown, main_seen = presented.shown, presented.main
            else:
                shown = stage.present(view, target_pane, enable_input=not fenced)
        except PlacementRefused as exc:
            shown = _landed_before(ctx, view, _surface_id, target_pane, fenced)
            if shown is None:  # refused, and the panes do not show this move: nothing moved
                _roll_back(ctx, transition_id, f"nothing moved: {exc}")
                return
        except (UnmanagedPane, PaneNotFound, ServerIdentityMismatch,
                TmuxUnavailable) as exc:  # no server answering: nothing could move
            _roll_back(ctx, transition_id, f"nothing moved: {exc}",
                       server_restarted=isinstance(exc, _SERVER_GONE))
            return
        ctx.fault_point("after_swap")
        if fenced and control is not None and \
                _control_state(conn, transition_id) != "submitted":
            # Its UserPromptSubmit came while the pane was still parked (that hook
            # cannot lift a parked pane's fence): the evidence is in, lift it now.
            lift_fence(ctx, control["control_turn_id"])
        # The batch that moved the panes also re-read them: when main shows the
        # target, the move is recorded as inspected in the same commit, and a
        # show-only move is recorded whole there (its placements committed too).
        landed = target_pane is None or shown == target_pane
        whole = landed and row["kind"] in SHOW_ONLY
        with write_transaction(conn) as tx:
            if main_seen is not None:
                views_ops.set_main_pane(tx, view["view_id"], main_seen, ctx.now())
            transitions_ops.advance_phase(tx, transition_id, "intent",
                                          "inspected" if landed else "moved", ctx.now())
            if whole:
                _commit_in(ctx, tx, transition_id, ctx.now())
        ctx.fault_point("after_move")
        if not landed:
            _roll_back(ctx, transition_id, f"main shows {shown}, expected {target_pane}")
            return
        if whole:
            ctx.fault_point("after_inspect")
            ctx.fault_point("after_commit")
            return
    else:
        with write_transaction(conn) as tx:
            transitions_ops.advance_phase(tx, transition_id, "intent", "inspected", ctx.now())
    ctx.fault_point("after_inspect")
    commit(ctx, transition_id)


def _landed_before(ctx: Context, view: sqlite3.Row, target_surface_id: str | None,
                   target_pane: str | None, fenced: bool) -> str | None:
    """The target's pane when a refused swap finds this very move already made.

    A killed executor's swap batch is a tmux process of its own and outlives it:
    it can land after reconcile read tmux (target parked, phase ``intent``: the
    transition is resumed) and before the resumed swap, whose guard then refuses
    (the target is no longer parked). The panes prove the batch ran
    (``pane_evidence.swap_landed``), so the move rolls forward from that evidence
    instead of failing with main showing the target. Nothing is swapped again.
    """
    from core.runtime.pane_evidence import swap_landed

    if target_pane is None:
        return None
    try:
        snap = ctx.require_stage().adapter_for(view["tmux_server_id"]).checked_snapshot()
        landed = swap_landed(snap, view["view_id"], view["main_pane_id"], target_pane,
                             target_surface_id, target_input=not fenced)
    except SwitchboardError:
        return None  # no reading: nothing is proven, the refusal stands
    if not landed:
        return None
    with write_transaction(ctx.conn) as tx:
        views_ops.set_main_pane(tx, view["view_id"], target_pane, ctx.now())
    return target_pane


def _move_mode(ctx: Context, row: sqlite3.Row) -> None:
    """Park or restore the navigator pane, re-read the layout, then commit."""
    transition_id = row["transition_id"]
    view = views_ops.get_view(ctx.conn, row["view_id"])
    target = ViewMode(row["target_mode"])
    try:
        ctx.require_stage().set_mode(view, target)
    except (PlacementRefused, UnmanagedPane, PaneNotFound, ServerIdentityMismatch,
            TmuxUnavailable) as exc:
        _roll_back(ctx, transition_id, f"mode not changed: {exc}",
                   server_restarted=isinstance(exc, _SERVER_GONE))
        return
    with write_transaction(ctx.conn) as tx:
        transitions_ops.advance_phase(tx, transition_id, "intent", "moved", ctx.now())
    ctx.fault_point("after_move")
    shown = ctx.require_stage().layout_mode(views_ops.get_view(ctx.conn, row["view_id"]))
    if shown is not None and shown != target:
        _roll_back(ctx, transition_id, f"the view is in {shown} mode, expected {target}")
        return
    with write_transaction(ctx.conn) as tx:
        transitions_ops.advance_phase(tx, transition_id, "moved", "inspected", ctx.now())
    ctx.fault_point("after_inspect")
    commit(ctx, transition_id)


def _roll_back(ctx: Context, transition_id: str, why: str, *,
               server_restarted: bool = False) -> None:
    """Fail the transition; the registry keeps its last committed placement.

    At ``intent`` (a refused swap: nothing moved) the phase stays, since only
    moved/inspected may become rolled_back.
    """
    now = ctx.now()
    with write_transaction(ctx.conn) as conn:
        row = transitions_ops.get_transition(conn, transition_id)
        if row["transport_phase"] in ("moved", "inspected"):
            transitions_ops.advance_phase(conn, transition_id, row["transport_phase"],
                                          "rolled_back", now)
        transitions_ops.move_transition(conn, transition_id, T(row["state"]), T.FAILED, now,
                                        failure=why[:1024])
        recoveries_ops.open_recovery(
            conn, recovery_id=ctx.ids.new_id(), host_id=ctx.host_id,
            kind=RecoveryKind.SERVER_RESTARTED if server_restarted
            else RecoveryKind.PLACEMENT_ORPHANED, subject_type="view",
            subject_id=row["view_id"], actionability=Actionability.SAFE_AUTO,
            explanation=f"{row['kind']} did not land: {why}"[:600] + ". Press Enter (or R) "
                        "on this recovery: it re-reads the panes and shows the recorded "
                        "placement again; "
                        f"“{frames_ops.get_frame(conn, row['target_frame_id'])['title']}” "
                        "stays where it was.",
            now=now)


def commit(ctx: Context, transition_id: str) -> None:
    """Record the inspected placement: the one transaction that makes it true."""
    with write_transaction(ctx.conn) as conn:
        stop_after = _commit_in(ctx, conn, transition_id, ctx.now())
    if stop_after is None:
        return
    ctx.fault_point("after_commit")
    for pane in stop_after:
        if ctx.stage is not None:
            ctx.stage.kill(pane)


def _commit_in(ctx: Context, conn: sqlite3.Connection, transition_id: str,
               now: int) -> list[str] | None:
    """``commit``'s writes inside the caller's transaction: the panes to stop after it,
    or None when the transition is not (or no longer) inspected."""
    stop_after: list[str] = []
    row = transitions_ops.get_transition(conn, transition_id)
    if row["transport_phase"] != "inspected":
        return None
    view = views_ops.get_view(conn, row["view_id"])
    target_id = row["target_frame_id"]
    _swap_placements(conn, view, target_id, now)
    views_ops.mutate_view(conn, view["view_id"], view["revision"], active_frame_id=target_id,
                          mode=ViewMode(row["target_mode"]) if row["target_mode"] else None,
                          now=now)
    frames_ops.touch_focus(conn, target_id, now)
    _transfer_foreground(conn, target_id, now)
    transitions_ops.advance_phase(conn, transition_id, "inspected", "committed", now)
    transitions_ops.move_transition(conn, transition_id, T.EXECUTING, T.PRESENTED, now)
    kind = TransitionKind(row["kind"])
    if kind in (TransitionKind.FOCUS, TransitionKind.BACK, TransitionKind.MODE,
                TransitionKind.RECOVER):
        _settle(conn, transition_id, T.PRESENTED, now)
    elif kind is TransitionKind.HUMAN_CLOSE:
        child = row["source_frame_id"]
        frames_ops.begin_close(conn, child, CloseReason.DISMISSED, now)
        stop_after.extend(stop_runtime(conn, child, now))
        frames_ops.finish_close(conn, child, now)
        _settle(conn, transition_id, T.PRESENTED, now)
    else:
        control = transitions_ops.control_turn_of(conn, transition_id)
        if control is not None and control["state"] == "prepared" and \
                control["transport"] == ControlTransport.RESUME_INITIAL and \
                ctx.stage is not None and \
                _target_started(conn, target_id, row["request_id"]):
            # The fixed line went in as the launch's initial prompt: submitted once.
            transitions_ops.mark_submitted(conn, control["control_turn_id"], now)
        transitions_ops.move_transition(conn, transition_id, T.PRESENTED,
                                        T.AWAITING_CLAIM, now)
        control = transitions_ops.control_turn_of(conn, transition_id)
        if control is not None and control["state"] == "prepared" and \
                control["transport"] == ControlTransport.LIVE_INPUT:
            # The target is shown but was not proven idle, so no line was typed:
            # say so at once (the recovery settles it) instead of waiting unseen.
            from core.runtime.unclaimed import open_unclaimed
            open_unclaimed(ctx, conn, transitions_ops.get_transition(conn, transition_id),
                           now)
    return stop_after


def _target_started(conn: sqlite3.Connection, frame_id: str, request_id: str) -> bool:
    """Did this transition's own launch of the target reach the provider (started or
    bound)? An older launch of the frame carried no fixed line."""
    row = conn.execute(
        "SELECT state, request_id FROM launch_intents WHERE frame_id = ?"
        " ORDER BY created_at DESC, rowid DESC LIMIT 1", (frame_id,)).fetchone()
    return row is not None and row["request_id"] == request_id and \
        row["state"] in ("started", "bound")


def _control_state(conn: sqlite3.Connection, transition_id: str) -> str:
    """The state of the control turn a transition had when it started."""
    control = transitions_ops.control_turn_of(conn, transition_id)
    if control is None:
        raise InvariantViolation(f"transition {transition_id} lost its control turn")
    return control["state"]


def _settle(conn: sqlite3.Connection, transition_id: str, from_state: TransitionState,
            now: int) -> None:
    transitions_ops.move_transition(conn, transition_id, from_state, T.SETTLING, now)
    transitions_ops.move_transition(conn, transition_id, T.SETTLING, T.COMPLETED, now)


def _swap_placements(conn: sqlite3.Connection, view: sqlite3.Row, target_id: str,
                     now: int) -> None:
    current = views_ops.active_placement(conn, view["view_id"])
    target = views_ops.placement_of_frame(conn, target_id)
    if target is None:
        raise InvariantViolation(f"frame {target_id} has no placement to show")
    if current is not None and current["frame_id"] != target_id:
        views_ops.move_placement(conn, current["placement_id"], current["generation"],
                                 PlacementState.PARKED, now)
    if target["state"] == PlacementState.STAGED or target["state"] == PlacementState.PARKED:
        views_ops.move_placement(conn, target["placement_id"], target["generation"],
                                 PlacementState.ACTIVE, now, focused=True)
    # stopped_affinity stays: the view shows an empty main with "n to start".


def _transfer_foreground(conn: sqlite3.Connection, frame_id: str, now: int) -> None:
    frame = frames_ops.get_frame(conn, frame_id)
    context = frames_ops.get_context(conn, frame["work_context_id"])
    if context["claim_state"] == ClaimState.HELD and context["foreground_frame_id"] != frame_id:
        frames_ops.transfer_foreground(conn, context["work_context_id"], frame_id,
                                       context["claim_generation"], now)


def stop_runtime(conn: sqlite3.Connection, frame_id: str, now: int) -> list[str]:
    """Mark a frame's runtime stopped; returns panes the caller must kill after commit.

    Public: every path that ends a runtime inside its own transaction (a stop, a
    claim, a settlement, a recovery) marks it through this one function."""
    placement = views_ops.placement_of_frame(conn, frame_id)
    panes: list[str] = []
    if placement is None:
        return panes
    if placement["surface_id"]:
        surface = sessions_ops.get_surface(conn, placement["surface_id"])
        state = surface["lifecycle_state"]
        if state in ("live", "orphaned") and surface["pane_id"]:
            # An orphaned surface's pane may still exist (a reading that missed it):
            # the kill is guarded by the pane's surface tag, so asking is safe.
            panes.append(surface["pane_id"])
        if state == "live":
            sessions_ops.move_surface(conn, surface["surface_id"], "dead", now)
        if state in ("live", "dead", "planned", "orphaned"):
            sessions_ops.move_surface(conn, surface["surface_id"], "retired", now)
        sessions_ops.revoke_capabilities(conn, surface["surface_id"], now)
        if surface["session_key"]:
            sessions_ops.set_runtime_presence(conn, surface["session_key"],
                                              RuntimePresence.STOPPED, now)
        launch = conn.execute("SELECT state FROM launch_intents WHERE launch_id = ?",
                              (surface["launch_id"],)).fetchone()
        if launch and launch["state"] in ("planned", "authorized"):
            sessions_ops.move_launch(conn, surface["launch_id"], launch["state"], "superseded",
                                     now)
        elif launch and launch["state"] == "started":
            sessions_ops.move_launch(conn, surface["launch_id"], "started", "failed", now,
                                     failure="runtime stopped before binding")
    if placement["state"] in (PlacementState.ACTIVE, PlacementState.PARKED):
        views_ops.move_placement(conn, placement["placement_id"], placement["generation"],
                                 PlacementState.STOPPED_AFFINITY, now)
    elif placement["state"] == PlacementState.STAGED:
        views_ops.move_placement(conn, placement["placement_id"], placement["generation"],
                                 PlacementState.ORPHANED, now)
        views_ops.insert_placement(conn, placement_id=_new_id(), host_id=placement["host_id"],
                                   view_id=placement["view_id"], frame_id=frame_id,
                                   state=PlacementState.STOPPED_AFFINITY, surface_id=None,
                                   now=now)
    return panes


def _new_id() -> str:
    import uuid
    return str(uuid.uuid4())


def _submit_control_turn(ctx: Context, transition_id: str) -> None:
    """Type the one fixed line into the exact parked parent, at most once."""
    conn = ctx.conn
    control = transitions_ops.control_turn_of(conn, transition_id)
    if control is None or control["state"] != "prepared":
        return
    if control["transport"] != ControlTransport.LIVE_INPUT:
        return
    row = transitions_ops.get_transition(conn, transition_id)
    _surface, pane = live_pane(conn, row["target_frame_id"])
    if pane is None:
        return
    session = sessions_ops.get_session(conn, control["target_session_key"])
    if session["activity"] not in ("ready",) or session["activity_reason"] == "permission":
        # Not proven idle after a trusted Stop: leave it prepared, never guess.
        return
    from core.runtime.dialogs import dialog_blocks_typing

    if _surface is not None and dialog_blocks_typing(ctx, _surface, pane):
        return  # the line would answer its CLI's dialog: prepared, the person is told
    with write_transaction(conn) as tx:
        transitions_ops.mark_submitted(tx, control["control_turn_id"], ctx.now())
    ctx.fault_point("after_submit_recorded")
    try:
        ctx.require_stage().paste_control(pane)
    except SwitchboardError as exc:
        now = ctx.now()
        with write_transaction(conn) as tx:
            transitions_ops.move_control(tx, control["control_turn_id"], ("submitted",),
                                         "uncertain", now, failure=str(exc)[:1024])
            recoveries_ops.open_recovery(
                tx, recovery_id=ctx.ids.new_id(), host_id=ctx.host_id,
                kind=RecoveryKind.CONTROL_SUBMIT_UNCERTAIN, subject_type="control_turn",
                subject_id=control["control_turn_id"], actionability=Actionability.OPEN_VIEW,
                explanation="The claim line may or may not have reached the parent agent "
                            f"“{frames_ops.get_frame(tx, row['target_frame_id'])['title']}”. "
                            "It will not be typed again; press Enter on this recovery to go "
                            "there and ask it to call transition_claim() if it did not.",
                now=now)
        return
    spawn_watchdog(ctx, control["control_turn_id"])
    ctx.fault_point("after_submit")


def spawn_watchdog(ctx: Context, control_turn_id: str) -> None:
    """The bounded settlement watchdog of one submitted turn, in its own process so it
    outlives this one (``python -m core.apps.workers watchdog``); reconcile is the
    backstop when even that process is gone."""
    import os
    import subprocess
    import sys

    home = getattr(ctx, "home", None)
    if home is None:
        return
    env = dict(os.environ)
    env["SWITCHBOARD_HOME"] = str(home.root)
    if getattr(home, "config_path", None) is not None:
        env["SWITCHBOARD_CONFIG"] = str(home.config_path)
    try:
        subprocess.Popen(  # noqa: S603 - our own module, argv only
            [sys.executable, "-m", "core.apps.workers", "watchdog", control_turn_id], env=env,
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True)
    except OSError:
        pass  # reconcile's watchdog pass still marks it uncertain and lifts the fence


def lift_fence(ctx: Context, control_turn_id: str) -> bool:
    """Re-enable input of a control turn's target once it is shown in main: after its
    exact UserPromptSubmit or its watchdog, never while parked (the saga fenced it
    before typing the line; the hook and ``core.reconcile.settlement``'s watchdog lift it)."""
    if ctx.stage is None:
        return False
    control = ctx.conn.execute("SELECT * FROM control_turns WHERE control_turn_id = ?",
                                  (control_turn_id,)).fetchone()
    if control is None or control["transport"] != "live_input":
        return False
    surface_id, pane = live_pane(ctx.conn, control["target_frame_id"])
    if surface_id is None or pane is None:
        return False
    return ctx.stage.lift_fence(pane, surface_id)


def submit_after_stop(ctx: Context, transition_id: str) -> bool:
    """Type the held-back claim line into a shown parent after its trusted Stop.

    The return was presented while the parent was not proven idle, so its turn
    stayed prepared (and a recovery said so). The Stop proves it idle: the pane
    in main is fenced first (the control turn needs an input-off pane), the
    line goes in once, and its UserPromptSubmit or the watchdog lifts the
    fence. The recovery that said "not typed" is resolved by this evidence.
    """
    conn = ctx.conn
    control = transitions_ops.control_turn_of(conn, transition_id)
    row = transitions_ops.get_transition(conn, transition_id)
    if control is None or control["state"] != "prepared" or \
            control["transport"] != ControlTransport.LIVE_INPUT or \
            row["state"] != T.AWAITING_CLAIM or ctx.stage is None:
        return False
    surface_id, pane = live_pane(conn, row["target_frame_id"])
    key = frames_ops.get_frame(conn, row["target_frame_id"])["current_session_key"]
    if pane is None or surface_id is None or not _proven_idle(conn, key):
        return False
    try:
        ctx.stage.fence(pane, surface_id)
    except SwitchboardError:
        return False  # nothing typed; the recovery still explains the wait
    with write_transaction(conn) as tx:
        if control["target_session_key"] != key:
            transitions_ops.retarget_prepared(tx, control["control_turn_id"], key)
    _submit_control_turn(ctx, transition_id)
    if _control_state(conn, transition_id) == "prepared":
        # not typed (its CLI shows a dialog): the person needs the keyboard to answer
        # it, and the recovery that says the line waits stays open
        ctx.stage.lift_fence(pane, surface_id)
        return True
    with write_transaction(conn) as tx:
        recoveries_ops.resolve_for_subject(tx, RecoveryKind.TRANSITION_INTERRUPTED, "view",
                                           row["view_id"], ctx.now())
    return True


def launch(ctx: Context, launch_id: str, *, present: bool = True,
           initial_prompt_for: str | None = None) -> None:
    """Drive a planned launch to started with its exact pane placed (see core.runtime.launcher)."""
    from core.runtime import launcher
    launcher.run(ctx, launch_id, present=present, initial_prompt_for=initial_prompt_for)
    _resolve_gone_runtimes(ctx, launch_id)


def _resolve_gone_runtimes(ctx: Context, launch_id: str) -> None:
    """The frame runs again: the recoveries that said "press n" about its earlier
    runtimes (pane gone, start interrupted) are resolved by that evidence."""
    now = ctx.now()
    with write_transaction(ctx.conn) as conn:
        launch = conn.execute("SELECT frame_id, state FROM launch_intents WHERE launch_id = ?",
                              (launch_id,)).fetchone()
        if launch is None or launch["state"] not in ("started", "bound"):
            return
        rows = conn.execute(
            "SELECT r.recovery_id FROM recoveries r WHERE r.state = 'open' AND ("
            " (r.subject_type = 'surface' AND r.kind IN ('pane_vanished', 'server_restarted')"
            "  AND r.subject_id IN (SELECT s.surface_id FROM surfaces s JOIN launch_intents l"
            "   ON l.launch_id = s.launch_id WHERE l.frame_id = ? AND l.launch_id <> ?))"
            " OR (r.subject_type = 'launch' AND r.kind = 'launch_uncertain'"
            "  AND r.subject_id IN (SELECT launch_id FROM launch_intents WHERE frame_id = ?"
            "   AND launch_id <> ?)))",
            (launch["frame_id"], launch_id, launch["frame_id"], launch_id)).fetchall()
        for row in rows:
            recoveries_ops.close_recovery(conn, row["recovery_id"], RecoveryState.RESOLVED, now)


__all__ = ["execute", "commit", "resume", "waits_for_stop", "launch", "lift_fence",
           "live_pane", "stop_runtime"]
