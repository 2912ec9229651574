"""What running a view's safe_auto recovery does: present its committed frame again.

Reconcile opens a view recovery when it cannot prove what main shows (a
restarted server, a vanished window, another pane in main, an interrupted
transition). Running it (``core.reconcile.recovery.execute``) comes here: the
window is rebuilt on the live server when the old one is gone, a transition
still in flight is settled or run first, and a ``recover`` ViewTransition,
run through the same saga as every other transition, presents the view's
active frame.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

from core.model.enums import TransitionKind
from core.model.errors import Conflict, InvariantViolation
from core.reconcile import settlement
from core.runtime.pane_evidence import live_server_id, pane_alive
from core.tmux.panes import ServerSnapshot, ViewLayout
from storage.connection import write_transaction
from storage.operations import frames as frames_ops
from storage.operations import sessions as sessions_ops
from storage.operations import transitions as transitions_ops
from storage.operations import views as views_ops

if TYPE_CHECKING:
    from core.context.context import Context


def recover_view(ctx: Context, request_id: str, recovery_id: str, view_id: str) -> None:
    """Present the view's committed active frame; refused by name when it cannot be."""
    from core.runtime import sagas

    view = views_ops.get_view(ctx.conn, view_id)
    if view["active_frame_id"] is None:
        raise Conflict(f"view {view_id} shows no frame; enter its project again")
    snap = _on_live_server(ctx, view)
    if _settle_pending(ctx, view_id):
        return  # a waiting push/return ran: it presented its target itself
    layout = _main_as_recorded(ctx, view_id, snap)
    transition_id = _record_recover(ctx, request_id, recovery_id, view_id, layout)
    sagas.execute(ctx, transition_id)
    row = transitions_ops.get_transition(ctx.conn, transition_id)
    if row["state"] != "completed":
        raise Conflict(f"the recover transition ended {row['state']}: {row['failure']}; "
                       "the recovery stays open", code="recover_failed")


def _on_live_server(ctx: Context, view: sqlite3.Row) -> ServerSnapshot | None:
    """A reading of the live server, the view's window rebuilt there first when the
    view was recorded on another server or its window is gone."""
    stage = ctx.require_stage()
    view_id = view["view_id"]
    snap = stage.snapshot()
    live_id = live_server_id(ctx, snap)
    if view["tmux_server_id"] != live_id or snap is None or snap.view(view_id) is None:
        _rebind_view(ctx, view)
        snap = stage.snapshot()
    return snap


def _main_as_recorded(ctx: Context, view_id: str,
                      snap: ServerSnapshot | None) -> ViewLayout | None:
    """The view's layout, a placeholder split in first when main was killed; the pane
    main holds is recorded as the view's main."""
    stage = ctx.require_stage()
    view = views_ops.get_view(ctx.conn, view_id)
    layout = snap.view(view_id) if snap is not None else None
    if layout is not None and layout.main is None and not layout.extra_panes and \
            stage.restore_main(view) is not None:
        snap = stage.snapshot()  # main was killed: the placeholder is main again
        layout = snap.view(view_id) if snap is not None else None
        view = views_ops.get_view(ctx.conn, view_id)
    if layout is not None and layout.main is not None and \
            layout.main.pane_id != view["main_pane_id"]:
        with write_transaction(ctx.conn) as conn:
            views_ops.set_main_pane(conn, view_id, layout.main.pane_id, ctx.now())
    return layout


def _record_recover(ctx: Context, request_id: str, recovery_id: str, view_id: str,
                    layout: ViewLayout | None) -> str:
    """Record (idempotently, by request) the ``recover`` transition to the active frame."""

    def body(conn: sqlite3.Connection, fp: str, now: int) -> tuple[str, str | None]:
        current = views_ops.get_view(conn, view_id)
        pending = transitions_ops.pending_for_view(conn, view_id)
        if pending is not None:
            raise Conflict(f"a {pending['kind']} transition is {pending['state']} in this "
                           "view; reconcile it or let it settle first",
                           code="transition_in_flight")
        target = frames_ops.get_frame(conn, current["active_frame_id"])
        context = frames_ops.get_context(conn, target["work_context_id"])
        shown = layout.main.surface_id if layout is not None and layout.main else None
        source = conn.execute(
            "SELECT p.frame_id FROM frame_placements p WHERE p.surface_id = ?"
            " AND p.state <> 'orphaned'", (shown,)).fetchone() if shown else None
        transition_id = ctx.ids.new_id()
        transitions_ops.insert_transition(
            conn, transition_id=transition_id, request_id=request_id, fingerprint=fp,
            host_id=ctx.host_id, view_id=view_id, kind=TransitionKind.RECOVER,
            source_frame_id=source["frame_id"] if source else None,
            target_frame_id=target["frame_id"], work_context_id=target["work_context_id"],
            expected_view_revision=current["revision"],
            expected_claim_generation=context["claim_generation"], now=now)
        return "transition", transition_id

    transition_id = ctx.run_request(request_id, "recovery.execute",
                                       {"recovery_id": recovery_id}, body,
                                    lambda tid: tid, lambda tid: tid)
    if transition_id is None:  # body always records the recover transition's id
        raise InvariantViolation(f"request {request_id} recorded no transition")
    return transition_id


def _settle_pending(ctx: Context, view_id: str) -> bool:
    """What a view recovery does first with the view's transition in flight.

    An unclaimed or unsettled presentation settles (``core.reconcile.settlement``: the
    brief or handoff stays claimable); a prepared push/return that no longer
    waits for a Stop runs now; one that still waits is refused by name, with
    the key that withdraws it. An executing one belongs to its executor until
    its lease expires (reconcile then decides from pane evidence).
    """
    from core.runtime import sagas

    pending = transitions_ops.pending_for_view(ctx.conn, view_id)
    if pending is None:
        return False
    if pending["state"] in ("presented", "awaiting_claim", "settling"):
        for pane in settlement.settle_unclaimed(ctx, view_id):
            ctx.require_stage().kill(pane)
        return False
    if pending["state"] != "prepared":
        return False
    if sagas.waits_for_stop(ctx, pending["transition_id"]):
        raise _still_waits(ctx, pending)
    sagas.execute(ctx, pending["transition_id"])
    row = transitions_ops.get_transition(ctx.conn, pending["transition_id"])
    if row["state"] == "failed":
        raise Conflict(f"the waiting {row['kind']} failed: {row['failure']}",
                       code="recover_failed")
    return True


def _still_waits(ctx: Context, pending: sqlite3.Row) -> Conflict:
    """The refusal for a prepared push/return still waiting for a Stop, with its way out."""
    from core.runtime.sagas import agent_working

    who = pending["source_frame_id"] if agent_working(
        ctx.conn, pending["source_frame_id"]) else pending["target_frame_id"]
    title = frames_ops.get_frame(ctx.conn, who)["title"]
    way_out = "press w (Withdraw) to cancel it" if pending["kind"] == "push" else \
        f"select “{title}” and press s to stop that agent so it runs now"
    return Conflict(f"the {pending['kind']} still waits for “{title}” to finish its "
                    f"turn; {way_out}, or run this again after that Stop",
                    code="transition_in_flight")


def _rebind_view(ctx: Context, view: sqlite3.Row) -> None:
    """Build the view's window on the live server; frames whose panes are gone become
    empty (stopped_affinity), so `n` resumes their sessions."""
    from core.runtime.sagas import stop_runtime

    stage = ctx.require_stage()
    stage.ensure_server(refresh=True)
    frame = frames_ops.get_frame(ctx.conn, view["active_frame_id"])
    with stage.view_lock():
        window_id, main_pane, nav_pane = stage.ensure_view(view, frame["title"], rebind=True)
    snap = stage.snapshot()
    now = ctx.now()
    with write_transaction(ctx.conn) as conn:
        server_id = stage.server_row(conn)
        views_ops.bind_view_tmux(conn, view["view_id"], tmux_server_id=server_id,
                                 window_id=window_id, main_pane_id=main_pane,
                                 navigator_pane_id=nav_pane, now=now)
        for placement in conn.execute(
                "SELECT * FROM frame_placements WHERE view_id = ? AND state IN"
                " ('active', 'parked', 'staged') AND surface_id IS NOT NULL",
                (view["view_id"],)).fetchall():
            surface = sessions_ops.get_surface(conn, placement["surface_id"])
            if surface["lifecycle_state"] == "live" and \
                    pane_alive(snap, surface, server_id) is not None:
                continue
            if surface["lifecycle_state"] == "live":
                sessions_ops.move_surface(conn, surface["surface_id"], "orphaned", now)
            stop_runtime(conn, placement["frame_id"], now)
