"""Reconcile's foreign-pane rule: a pane split into a view's window is moved out, kept.

An agent, a plugin or the person may split a pane into a view's window. Such a
pane carries none of Switchboard's tags (``@sb_role``/``@sb_surface``), so it
is neither the navigator nor main: ``ServerSnapshot.view`` already leaves it
out of main (a split never makes main look like "another pane"), and this
step moves it out of the window into its own holding window, still running,
tagged as an extra pane of the frame the view showed (``@sb_role extra``,
``@sb_serves``, ``@sb_frame``). The tag on the pane is its record: it
travels with the pane, and the pane's exit (``remain-on-exit off``) removes
record and pane together, so nothing is left to clean up. Every view of the
live server is handled in one identity-guarded tmux process, including views
with a transition in flight (the move touches neither main nor the navigator).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from core.model.errors import TmuxError
from core.tmux.panes import PaneRole, ServerSnapshot

if TYPE_CHECKING:
    from core.context.context import Context


@dataclass(frozen=True)
class ExtraPane:
    """A foreign pane reconcile moved out of a view's window: where it runs now."""

    pane_id: str
    view_id: str
    frame_id: str
    command: str
    """What runs in it as tmux names it (``pane_current_command``)."""
    dead: bool


def evict_foreign_panes(ctx: Context, snap: ServerSnapshot | None,
                        server_id: str | None) -> int:
    """Move every foreign pane out of the live server's view windows; how many moved.

    A view whose window tmux reports on more than one window (a topology
    conflict) or whose registry row names no active frame is left alone; its
    own checks report it. A refused or failed batch moves nothing more and the
    next pass reads the panes again.
    """
    if snap is None or server_id is None:
        return 0
    moves: list[tuple[str, str, str]] = []
    for view in ctx.conn.execute(
            "SELECT view_id, active_frame_id FROM user_views WHERE state <> 'retired'"
            " AND tmux_server_id = ? AND tmux_window_id IS NOT NULL"
            " AND active_frame_id IS NOT NULL", (server_id,)).fetchall():
        try:
            layout = snap.view(view["view_id"])
        except TmuxError:
            continue
        if layout is None:
            continue
        moves += [(pane.pane_id, view["view_id"], view["active_frame_id"])
                  for pane in layout.foreign]
    if not moves:
        return 0
    try:
        moved = ctx.require_stage().adapter_for(server_id).evict_foreign(moves)
    except TmuxError:
        return 0
    return sum(pane is not None for pane in moved.values())


def extra_panes(snap: ServerSnapshot | None) -> list[ExtraPane]:
    """The extra panes one reading shows, in snapshot order (their tags are their record)."""
    if snap is None:
        return []
    return [ExtraPane(p.pane_id, p.serves_view, p.frame_id, p.current_command, p.dead)
            for p in snap if p.role is PaneRole.EXTRA and p.parked
            and p.serves_view is not None and p.frame_id is not None]
