"""Reconcile's last tmux step: panes that should not run any more, or should again.

After the registry is settled, two things are left to do in tmux alone: kill
a parked pane whose surface a committed stop already retired (the stop's own
kill was lost), and respawn, in place, navigator panes that crashed or were
quit (remain-on-exit keeps them). Both read the pass's latest snapshot.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.model.errors import TmuxError
from core.tmux.panes import ServerSnapshot

if TYPE_CHECKING:
    from core.context.context import Context


def stop_stray_panes(ctx: Context, snap: ServerSnapshot, server_id: str | None) -> int:
    """Finish committed stops: a retired/dead surface's parked pane that still runs."""
    stopped = 0
    rows = ctx.conn.execute(
        "SELECT surface_id, pane_id FROM surfaces WHERE lifecycle_state IN ('retired', 'dead')"
        " AND tmux_server_id = ? AND pane_id IS NOT NULL", (server_id,)).fetchall()
    for row in rows:
        pane = snap.pane(row["pane_id"])
        if pane is None or pane.surface_id != row["surface_id"] or not pane.parked:
            continue
        stopped += ctx.require_stage().kill(row["pane_id"], surface_id=row["surface_id"])
    return stopped


def revive_navigators(ctx: Context, snap: ServerSnapshot, server_id: str | None) -> int:
    """Navigator panes that crashed or were quit run again, in place (remain-on-exit
    keeps them): views of the live server only, one tmux process for all of them."""
    if server_id is None:
        return 0
    views = {row[0] for row in ctx.conn.execute(
        "SELECT view_id FROM user_views WHERE state <> 'retired' AND tmux_server_id = ?",
        (server_id,))}
    try:
        return ctx.require_stage().revive_navigators(snap, server_id, views)
    except TmuxError:
        return 0  # nothing was respawned; the next pass reads the panes again
