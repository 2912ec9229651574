"""What one tmux snapshot proves about a surface or a view, shared by every detector.

Reconcile and the view recovery read tmux once and then ask the same few
questions of that reading: which ``tmux_servers`` row answers now, is this
surface's exact tagged pane there (alive, or at all), and does a view's main
show the pane its committed placement puts there. They live here so each
detector module asks them the same way.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

from core.tmux.panes import PaneRole, PaneSnapshot, ServerSnapshot, ViewLayout
from storage.connection import write_transaction
from storage.operations import sessions as sessions_ops
from storage.operations import views as views_ops

if TYPE_CHECKING:
    from core.context.context import Context


def live_server_id(ctx: Context, snap: ServerSnapshot | None) -> str | None:
    """The tmux_servers row of whoever answers now (the stage rebinds to it)."""
    if snap is None or ctx.stage is None:
        return None
    ctx.stage.adopt(snap.identity)
    with write_transaction(ctx.conn) as conn:
        return ctx.stage.server_row(conn, snap.identity)


def pane_alive(snap: ServerSnapshot | None, surface: sqlite3.Row,
               server_id: str | None) -> PaneSnapshot | None:
    """The surface's exact pane, if it is on the live server, tagged with it and alive."""
    if snap is None or surface["tmux_server_id"] != server_id or not surface["pane_id"]:
        return None
    pane = snap.pane(surface["pane_id"])
    if pane is None or pane.surface_id != surface["surface_id"] or pane.dead:
        return None
    return pane


def own_pane(snap: ServerSnapshot | None, surface: sqlite3.Row,
             server_id: str | None) -> PaneSnapshot | None:
    """The surface's exact pane on the live server, alive or dead."""
    if snap is None or surface["tmux_server_id"] != server_id or not surface["pane_id"]:
        return None
    pane = snap.pane(surface["pane_id"])
    return pane if pane is not None and pane.surface_id == surface["surface_id"] else None


def expected_main(conn: sqlite3.Connection, view_id: str, server_id: str | None,
                  snap: ServerSnapshot) -> str | None:
    """The pane the committed placement puts in main; None means the placeholder."""
    active = views_ops.active_placement(conn, view_id)
    if active is None or active["surface_id"] is None:
        return None
    surface = sessions_ops.get_surface(conn, active["surface_id"])
    pane = pane_alive(snap, surface, server_id)
    return pane.pane_id if pane is not None else None


def swap_landed(snap: ServerSnapshot, view_id: str, old_main: str | None, target_pane: str,
                target_surface_id: str | None, *, target_input: bool) -> bool:
    """Whether a present batch from ``old_main`` to ``target_pane`` ran, whoever ran it.

    The batch swaps the target into main, parks and fences the old main and sets
    the target's input (on, or left off for a fenced control turn) in one tmux
    command group, so the target (its own surface's live pane) alone in main with
    that input, and the old main parked and input-off, prove the whole group
    happened. A swap by hand leaves both fences as they were, so it proves nothing.
    """
    if old_main is None or target_surface_id is None:
        return False
    layout = snap.view(view_id)
    if layout is None or layout.main is None or not shows(layout, target_pane):
        return False
    main = layout.main
    if main.surface_id != target_surface_id or main.dead or main.input_off == target_input:
        return False
    parked = snap.pane(old_main)
    return parked is not None and parked.parked and parked.input_off


def shows(layout: ViewLayout | None, pane_id: str | None) -> bool:
    """Whether main holds exactly ``pane_id`` (None: the view's placeholder)."""
    if layout is None or layout.main is None:
        return False
    if pane_id is None:
        return layout.main.role is PaneRole.PLACEHOLDER
    return layout.main.pane_id == pane_id
