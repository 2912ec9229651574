"""Reconcile's foreign-pane rule: a pane split into a view's window is moved out, kept.

An agent, a plugin or the person may split a pane into a view's window. Such a
pane carries none of Switchboard's tags (``@sb_role``/``@sb_surface``), so it
is neither the navigator nor main: ``ServerSnapshot.view`` already leaves it
out of main (a split never makes main look like "another pane"), and this
step moves it out of the window into its own holding window, still running,
tagged as an extra pane of the frame the view showed (``@sb_role extra``,
``@sb_serves``, ``@sb_frame``). Every view of the live server is handled in
one identity-guarded tmux process, including views with a transition in
flight (the move touches neither main nor the navigator).

The registry follows what tmux shows (``record_extra_panes``, inside
reconcile's write transaction): a tagged extra pane gets an ``extra_panes``
row under its frame, which NavigatorState lists; its exit
(``remain-on-exit off`` makes the pane vanish) or its server's restart
deletes the row on the next pass.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import TYPE_CHECKING

from core.model.errors import TmuxError
from core.tmux.panes import PaneRole, ServerSnapshot
from storage.operations import extra_panes as extra_ops

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


def record_extra_panes(ctx: Context, conn: sqlite3.Connection, snap: ServerSnapshot | None,
                       server_id: str | None, now: int) -> int:
    """Registry rows for the extra panes ``snap`` shows; rows of gone panes deleted.

    A pane whose tags name a view or frame the registry does not have is not
    recorded (only reconcile tags panes, but tags are not authority). Returns
    how many records changed (added or deleted).
    """
    alive: set[str] = set()
    added = 0
    if server_id is not None:
        views = {row[0] for row in conn.execute(
            "SELECT view_id FROM user_views WHERE tmux_server_id = ?", (server_id,))}
        for extra in extra_panes(snap):
            if extra.dead or extra.view_id not in views or conn.execute(
                    "SELECT 1 FROM frames WHERE frame_id = ?",
                    (extra.frame_id,)).fetchone() is None:
                continue
            alive.add(extra.pane_id)
            known = conn.execute("SELECT 1 FROM extra_panes WHERE tmux_server_id = ?"
                                 " AND pane_id = ?", (server_id, extra.pane_id)).fetchone()
            if known is None:
                extra_ops.record_extra_pane(
                    conn, extra_pane_id=ctx.ids.new_id(), host_id=ctx.host_id,
                    view_id=extra.view_id, frame_id=extra.frame_id, tmux_server_id=server_id,
                    pane_id=extra.pane_id, command=extra.command, now=now)
                added += 1
    return added + extra_ops.forget_gone_extra_panes(conn, server_id, alive)
