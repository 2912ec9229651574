"""Reconcile's surface checks: live surfaces whose pane is gone, orphans found again.

A surface is the registry's record of one agent pane. When the pane vanished
(or its whole server did) the runtime is over: the surface is orphaned, its
frame becomes empty and a manual recovery says how to resume. A later reading
that finds the exact tagged pane again makes the surface live and resolves
that recovery. Both run inside reconcile's write transaction, on its one
tmux reading.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

from core.model.enums import Actionability, RecoveryKind
from core.runtime.pane_evidence import own_pane, pane_alive
from core.tmux.panes import ServerSnapshot
from storage.operations import frames as frames_ops
from storage.operations import recoveries as recoveries_ops
from storage.operations import sessions as sessions_ops

if TYPE_CHECKING:
    from core.context.context import Context


def lost_surfaces(ctx: Context, conn: sqlite3.Connection, snap: ServerSnapshot | None,
                  server_id: str | None, now: int) -> int:
    """Live surfaces whose own pane is not on the live server: orphaned, with a recovery."""
    lost = 0
    for s in conn.execute("SELECT * FROM surfaces WHERE lifecycle_state = 'live'").fetchall():
        if own_pane(snap, s, server_id) is not None:
            continue  # alive, or exited: runtimes.exited_providers (next pass if its view was busy)
        same_server = server_id is not None and s["tmux_server_id"] == server_id
        lost += 1
        sessions_ops.move_surface(conn, s["surface_id"], "orphaned", now)
        title = _stop_placed_runtime(conn, s["surface_id"], now)
        recoveries_ops.open_recovery(
            conn, recovery_id=ctx.ids.new_id(), host_id=ctx.host_id,
            kind=RecoveryKind.PANE_VANISHED if same_server else RecoveryKind.SERVER_RESTARTED,
            subject_type="surface", subject_id=s["surface_id"],
            actionability=Actionability.MANUAL,
            explanation=(f"The agent pane of {title} is gone; its runtime is stopped and the "
                         f"session kept" if same_server else
                         f"The tmux server of {title} restarted; old pane locators are invalid")
            + f". Select {title} and press n to resume its session (this closes when it "
              "runs again).", now=now)
    return lost


def _stop_placed_runtime(conn: sqlite3.Connection, surface_id: str, now: int) -> str:
    """The lost surface's frame becomes empty; returns its title for the recovery."""
    placement = conn.execute(
        "SELECT * FROM frame_placements WHERE surface_id = ? AND state IN"
        " ('active', 'parked', 'staged')", (surface_id,)).fetchone()
    if placement is None:
        return "the frame"
    row = frames_ops.get_frame(conn, placement["frame_id"])
    # The pane is gone from the server that runs, or its server is gone (one
    # socket, one server: another identity answering means the old one died):
    # the runtime is over. The frame becomes empty (stopped), so its badge no
    # longer says live and n resumes its session by exact id.
    from core.runtime.sagas import stop_runtime
    stop_runtime(conn, placement["frame_id"], now)
    return f"“{row['title']}”"


def found_surfaces(conn: sqlite3.Connection, snap: ServerSnapshot | None,
                   server_id: str | None, now: int) -> int:
    """Orphaned surfaces whose exact tagged pane runs on the live server: live again.

    Only an earlier reading can have missed such a pane (a server restart
    changes the server identity, so its old locators never match here); the
    ``pane_vanished`` recovery it opened is resolved in the same commit.
    """
    found = 0
    for s in conn.execute("SELECT * FROM surfaces WHERE lifecycle_state = 'orphaned'"
                          " AND tmux_server_id = ?", (server_id,)).fetchall():
        if pane_alive(snap, s, server_id) is None:
            continue
        sessions_ops.move_surface(conn, s["surface_id"], "live", now)
        recoveries_ops.resolve_for_subject(conn, RecoveryKind.PANE_VANISHED, "surface",
                                           s["surface_id"], now)
        found += 1
    return found
