"""Reconcile's exited providers: a live surface whose agent process ended.

Agent panes keep remain-on-exit, so an exited provider leaves a dead pane the
tmux reading shows (``pane_dead``). Its runtime is over: the registry records
it stopped and the frame empty (``n`` resumes the session), main shows the
placeholder if it showed that pane, and the dead pane is killed.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

from core.model.enums import PlacementState, RuntimePresence
from core.model.errors import TmuxError
from core.runtime.pane_evidence import own_pane
from core.tmux.panes import ServerSnapshot
from storage.connection import write_transaction
from storage.operations import sessions as sessions_ops
from storage.operations import views as views_ops

if TYPE_CHECKING:
    from core.context.context import Context


def exited_providers(ctx: Context, snap: ServerSnapshot | None, server_id: str | None,
                     busy: set[str], now: int) -> int:
    """Live surfaces whose provider exited (``pane_dead``; panes keep remain-on-exit).

    The surface becomes dead and its session's runtime stopped; the frame is
    empty (``stopped_affinity``), so the view shows its placeholder if the
    dead pane was in main; the dead pane is then killed, which the adapter
    allows only for the launch-owned pane alone in its holding window (never
    the last pane of a view window). Views with a transition in flight are
    left to it; the next pass sees the pane again.
    """
    if snap is None:
        return 0
    conn = ctx.conn
    exited = 0
    for s in conn.execute("SELECT * FROM surfaces WHERE lifecycle_state = 'live'"
                          " AND tmux_server_id = ?", (server_id,)).fetchall():
        pane = own_pane(snap, s, server_id)
        if pane is None or not pane.dead:
            continue
        placement = conn.execute(
            "SELECT * FROM frame_placements WHERE surface_id = ? AND state <> 'orphaned'",
            (s["surface_id"],)).fetchone()
        if placement is not None and placement["view_id"] in busy:
            continue
        status = "" if pane.dead_status is None else f" (exit status {pane.dead_status})"
        with write_transaction(conn) as tx:
            _runtime_exited(ctx, tx, s, placement, f"the provider exited{status}", now)
        exited += 1
        if placement is not None:
            layout = snap.view(placement["view_id"])
            if layout is not None and layout.main is not None and \
                    layout.main.pane_id == pane.pane_id:
                try:
                    ctx.require_stage().present(
                        views_ops.get_view(conn, placement["view_id"]), None)
                except TmuxError:
                    continue  # main keeps the dead pane; views.check_views opens a recovery
        ctx.require_stage().kill(pane.pane_id, surface_id=s["surface_id"])
    return exited


def _runtime_exited(ctx: Context, conn: sqlite3.Connection, surface: sqlite3.Row,
                    placement: sqlite3.Row | None, why: str, now: int) -> None:
    """Registry side of an exited provider: surface dead, runtime stopped, frame empty."""
    surface_id = surface["surface_id"]
    sessions_ops.move_surface(conn, surface_id, "dead", now)
    sessions_ops.revoke_capabilities(conn, surface_id, now)
    if surface["session_key"]:
        sessions_ops.set_runtime_presence(conn, surface["session_key"],
                                          RuntimePresence.STOPPED, now)
    launch = conn.execute("SELECT state FROM launch_intents WHERE launch_id = ?",
                          (surface["launch_id"],)).fetchone()
    if launch is not None and launch["state"] == "started":
        sessions_ops.move_launch(conn, surface["launch_id"], "started", "failed", now,
                                 failure=f"{why} before any hook bound it")
    if placement is None:
        return
    if placement["state"] in (PlacementState.ACTIVE, PlacementState.PARKED):
        views_ops.move_placement(conn, placement["placement_id"], placement["generation"],
                                 PlacementState.STOPPED_AFFINITY, now)
    elif placement["state"] == PlacementState.STAGED:
        views_ops.move_placement(conn, placement["placement_id"], placement["generation"],
                                 PlacementState.ORPHANED, now)
        views_ops.insert_placement(conn, placement_id=ctx.ids.new_id(),
                                   host_id=placement["host_id"], view_id=placement["view_id"],
                                   frame_id=placement["frame_id"],
                                   state=PlacementState.STOPPED_AFFINITY, surface_id=None,
                                   now=now)
