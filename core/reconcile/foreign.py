"""Reconcile's foreign-pane rule: a pane split into a view's window is moved out, kept.

An agent, a plugin or the person may split a pane into a view's window. Such a
pane carries none of Switchboard's tags (``@sb_role``/``@sb_surface``), so it
is neither the navigator nor main: ``ServerSnapshot.view`` already leaves it
out of main (a split never makes main look like "another pane"), and this
step moves it out of the window into its own holding window, still running,
tagged as an extra pane of the frame the view showed (``@sb_role extra``,
``@sb_serves``, ``@sb_frame``); the navigator then gets its configured width back
(a split's author may have laid the window out again: Claude Code's tmux teammates
set its first pane to 30%). Every view of the live server is handled in
one identity-guarded tmux process, including views with a transition in
flight (the move touches neither main nor the navigator).

The registry follows what tmux shows (``record_extra_panes``, inside
reconcile's write transaction): a tagged extra pane gets an ``extra_panes``
row under its frame, which NavigatorState lists; its exit
(``remain-on-exit off`` makes the pane vanish) or its server's restart
deletes the row on the next pass.

What a person does with one (the navigator's Enter and x on its row):
``show_extra_pane`` swaps it into main (Enter on it again shows the frame's
own pane again) and ``close_extra_pane`` kills exactly that pane, gated on
its tags, and forgets its record.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import TYPE_CHECKING

from core.model.errors import Conflict, NotFound, TmuxError
from core.runtime.pane_evidence import expected_main
from core.tmux.panes import PaneRole, ServerSnapshot
from storage.connection import write_transaction
from storage.operations import extra_panes as extra_ops
from storage.operations import frames as frames_ops
from storage.operations import transitions as transitions_ops
from storage.operations import views as views_ops

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
    windows: list[str] = []
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
        if layout.foreign:
            windows.append(layout.window_id)
    if not moves:
        return 0
    try:
        moved = ctx.require_stage().adapter_for(server_id).evict_foreign(moves, windows)
    except TmuxError:
        return 0
    return sum(pane is not None for pane in moved.values())


def extra_panes(snap: ServerSnapshot | None) -> list[ExtraPane]:
    """The extra panes one reading shows, in snapshot order: parked, or shown in main."""
    if snap is None:
        return []
    return [ExtraPane(p.pane_id, p.serves_view, p.frame_id, p.current_command, p.dead)
            for p in snap if p.role is PaneRole.EXTRA
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


def show_extra_pane(ctx: Context, extra_pane_id: str) -> str:
    """Enter on an extra pane: show it in main, or, when it is shown, the frame's own
    pane again. Returns ``"extra"`` or ``"frame"`` (what main shows now).

    Only while its frame is the one its view shows and no transition is in flight;
    every move is one guarded tmux process, refused (nothing moved) when a pane
    changed meanwhile.
    """
    row, view = _record_and_view(ctx, extra_pane_id)
    stage = ctx.require_stage()
    adapter = stage.adapter_for(row["tmux_server_id"])
    snap = adapter.checked_snapshot()
    layout = snap.view(view["view_id"])
    if layout is None or layout.main is None:
        raise Conflict("the view has no single main pane; run its recovery (R) first",
                       code="view_not_whole")
    if layout.main.pane_id == row["pane_id"]:
        stage.present(view, expected_main(ctx.conn, view["view_id"], row["tmux_server_id"],
                                          snap))
        return "frame"
    shown = adapter.show_extra(view_id=view["view_id"], frame_id=row["frame_id"],
                               extra_pane=row["pane_id"], main_pane=layout.main.pane_id)
    if shown is None:
        raise Conflict("the extra pane or main changed meanwhile; nothing moved",
                       code="extra_pane_moved")
    with write_transaction(ctx.conn) as conn:
        views_ops.set_main_pane(conn, view["view_id"], shown.pane_id, ctx.now())
    return "extra"


def close_extra_pane(ctx: Context, extra_pane_id: str) -> bool:
    """x on an extra pane: the frame's own pane is shown again if the extra one was in
    main, then exactly that pane is killed (gated on its tags, parked, alone in its
    window) and its record forgotten. False when the pane had ended already."""
    row, view = _record_and_view(ctx, extra_pane_id, must_be_shown=False)
    stage = ctx.require_stage()
    adapter = stage.adapter_for(row["tmux_server_id"])
    snap = adapter.checked_snapshot()
    pane = snap.pane(row["pane_id"])
    killed = False
    if pane is not None and pane.role is PaneRole.EXTRA and pane.frame_id == row["frame_id"]:
        if not pane.parked:
            if transitions_ops.pending_for_view(ctx.conn, view["view_id"]) is not None:
                raise Conflict("a transition is in flight in this view; close the extra "
                               "pane after it settles", code="transition_in_flight")
            stage.present(view, expected_main(ctx.conn, view["view_id"],
                                              row["tmux_server_id"], snap))
        killed = adapter.kill_extra(frame_id=row["frame_id"], extra_pane=row["pane_id"])
        if not killed:
            raise Conflict("the extra pane changed meanwhile; nothing was closed",
                           code="extra_pane_moved")
    with write_transaction(ctx.conn) as conn:
        extra_ops.forget_extra_pane(conn, extra_pane_id)
    return killed


def _record_and_view(ctx: Context, extra_pane_id: str, *,
                     must_be_shown: bool = True) -> tuple[sqlite3.Row, sqlite3.Row]:
    """The extra pane's record and its view, refused by name when it cannot be acted on."""
    row = ctx.conn.execute("SELECT * FROM extra_panes WHERE extra_pane_id = ?",
                           (extra_pane_id,)).fetchone()
    if row is None:
        raise NotFound(f"extra pane {extra_pane_id} is not recorded (it ended or was "
                       "closed); nothing changed")
    view = views_ops.get_view(ctx.conn, row["view_id"])
    if view["tmux_server_id"] != row["tmux_server_id"]:
        raise Conflict("the extra pane's tmux server is not the view's any more; the next "
                       "reconcile forgets it", code="extra_pane_gone")
    if must_be_shown:
        if view["active_frame_id"] != row["frame_id"]:
            title = frames_ops.get_frame(ctx.conn, row["frame_id"])["title"]
            raise Conflict(f"“{title}” is not the frame its view shows; press Enter on it "
                           "first, then on its extra pane", code="frame_not_shown")
        if transitions_ops.pending_for_view(ctx.conn, view["view_id"]) is not None:
            raise Conflict("a transition is in flight in this view; show the extra pane "
                           "after it settles", code="transition_in_flight")
    return row, view
