"""Reconcile's view checks: a view's window against what its registry row commits.

A view is one tmux window: main shows the active frame's pane (or the
placeholder) beside the navigator. Reconcile restores a main that was killed,
commits a mode or zoom tmux shows but the registry lost, and opens a safe_auto
view recovery for what it cannot prove (a restarted server, a vanished
window, another pane in main); running that recovery is
``core.reconcile.recover_view``. A ``placement_orphaned`` whose cause is gone
(main shows the committed placement again, nothing in flight) closes by
itself. A pane someone split into the window is never "another pane in main"
(``ServerSnapshot.view`` leaves untagged panes out; ``foreign`` moves them).
Views with a transition or start at work (``busy``) are left to it. Every view
recovery's sentence is built here.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

from core.model.enums import Actionability, RecoveryKind
from core.model.errors import TmuxError
from core.runtime.pane_evidence import expected_main, shows
from core.tmux.panes import PaneRole, ServerSnapshot, ViewLayout
from storage.operations import recoveries as recoveries_ops
from storage.operations import transitions as transitions_ops
from storage.operations import views as views_ops

if TYPE_CHECKING:
    from core.context.context import Context


def restore_mains(ctx: Context, conn: sqlite3.Connection, snap: ServerSnapshot | None,
                  server_id: str | None, busy: set[str], now: int) -> int:
    """Views whose window holds only the navigator (the pane in main was killed): a
    placeholder is split in as main, so the view shows its (now empty) active frame."""
    if snap is None or server_id is None:
        return 0
    restored = 0
    for view in conn.execute("SELECT * FROM user_views WHERE state <> 'retired'"
                             " AND tmux_server_id = ? AND tmux_window_id IS NOT NULL",
                             (server_id,)).fetchall():
        if view["view_id"] in busy:
            continue
        try:
            layout = snap.view(view["view_id"])
        except TmuxError:
            continue
        if layout is None or layout.main is not None or layout.extra_panes:
            continue
        try:
            pane = ctx.require_stage().restore_main(view)
        except TmuxError:
            continue  # nothing moved: check_views opens the view's recovery
        if pane is not None:
            views_ops.set_main_pane(conn, view["view_id"], pane, now)
            restored += 1
    return restored


def check_views(ctx: Context, conn: sqlite3.Connection, snap: ServerSnapshot | None,
                server_id: str | None, busy: set[str], now: int) -> int:
    """Restarted servers, stale main locators, mode drift and a wrong pane in main."""
    repaired = 0
    for view in conn.execute("SELECT * FROM user_views WHERE state <> 'retired'"
                             " AND tmux_window_id IS NOT NULL").fetchall():
        view_id = view["view_id"]
        if view["tmux_server_id"] != server_id or snap is None:
            open_view_recovery(
                ctx, conn, RecoveryKind.SERVER_RESTARTED, view_id, Actionability.SAFE_AUTO,
                "The tmux server of this view restarted or stopped, so its window and pane "
                "locators are invalid and nothing was acted on. Running this recovery (or "
                "opening the project) builds the view on the running server; agents resume "
                "with n.", now)
            continue
        if view_id in busy:
            continue  # an executing transition owns the view; handled below once expired
        layout = snap.view(view_id)
        if layout is None:
            open_view_recovery(
                ctx, conn, RecoveryKind.PLACEMENT_ORPHANED, view_id,
                Actionability.SAFE_AUTO, "The view's tmux window is gone. Running this "
                "recovery builds it again and shows the active frame.", now)
            continue
        repaired += _commit_observed(conn, view, layout, now)
        if shows_own_extra(view, layout):
            continue  # the person showed one of the active frame's extra panes (Enter)
        if not shows(layout, expected_main(conn, view_id, server_id, snap)):
            open_view_recovery(
                ctx, conn, RecoveryKind.PLACEMENT_ORPHANED, view_id,
                Actionability.SAFE_AUTO, "Main shows another pane than the view's active "
                "frame. Running this recovery presents the active frame again.", now)
        elif transitions_ops.pending_for_view(conn, view_id) is None:
            # Main shows exactly the committed placement and nothing is in flight: what
            # an open placement_orphaned asked for holds, so it closes by itself rather
            # than staying open until someone presses R on a view that is fine.
            recoveries_ops.resolve_for_subject(conn, RecoveryKind.PLACEMENT_ORPHANED,
                                               "view", view_id, now)
    return repaired


def shows_own_extra(view: sqlite3.Row, layout: ViewLayout | None) -> bool:
    """Main shows an extra pane of the view's active frame: the person chose it (Enter on
    its row, ``core.reconcile.foreign``), so the view is as committed."""
    main = layout.main if layout is not None else None
    return main is not None and main.role is PaneRole.EXTRA and \
        main.frame_id is not None and main.frame_id == view["active_frame_id"]


def _commit_observed(conn: sqlite3.Connection, view: sqlite3.Row, layout: ViewLayout,
                     now: int) -> int:
    """Main's locator, mode and zoom as tmux shows them; 1 when mode or zoom drifted."""
    view_id = view["view_id"]
    if layout.main is not None and layout.main.pane_id != view["main_pane_id"]:
        views_ops.set_main_pane(conn, view_id, layout.main.pane_id, now)
    if layout.mode == view["mode"] and bool(layout.zoomed) == bool(view["zoomed"]):
        return 0
    # A mode toggle whose registry write was lost: tmux is the physical truth
    # and mode is model-free, so the observed layout is committed.
    if layout.mode != view["mode"]:
        views_ops.mutate_view(conn, view_id, view["revision"], mode=layout.mode, now=now)
    views_ops.set_zoom(conn, view_id, layout.zoomed)
    return 1


def open_view_recovery(ctx: Context, conn: sqlite3.Connection, kind: RecoveryKind,
                       view_id: str, actionability: Actionability, explanation: str,
                       now: int) -> str:
    """Record a recovery about a view, its sentence ending with the frame and the key."""
    return recoveries_ops.open_recovery(
        conn, recovery_id=ctx.ids.new_id(), host_id=ctx.host_id, kind=kind,
        subject_type="view", subject_id=view_id, actionability=actionability,
        explanation=_with_way_out(conn, view_id, actionability, explanation), now=now)


def _with_way_out(conn: sqlite3.Connection, view_id: str, actionability: Actionability,
                  explanation: str) -> str:
    """A view recovery names the frame it is about and the key that acts on it."""
    row = conn.execute("SELECT f.title FROM user_views v JOIN frames f"
                       " ON f.frame_id = v.active_frame_id WHERE v.view_id = ?",
                       (view_id,)).fetchone()
    frame = f"“{row['title']}”" if row is not None else "its active frame"
    action = "Press Enter (or R) on this recovery to run it" \
        if actionability is Actionability.SAFE_AUTO else \
        "Press Enter on this recovery to go to the view"
    return f"{explanation[:700]} The view shows {frame}. {action}."
