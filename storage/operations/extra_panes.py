"""Extra panes: panes someone split into a view's window, moved out and kept running.

Reconcile (``core.reconcile.foreign``) moves a pane an agent, a plugin or the
person split into a view's window to the holding session and records it here,
under the frame the view showed, so the navigator lists it. The row follows
tmux: it is written when the move is observed and deleted when the pane is
gone (it exited, or its server restarted). These are the only writes.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Collection

MAX_COMMAND = 64
"""Longest command name recorded (tmux's ``pane_current_command`` is a process name)."""


def record_extra_pane(conn: sqlite3.Connection, *, extra_pane_id: str, host_id: str,
                      view_id: str, frame_id: str, tmux_server_id: str, pane_id: str,
                      command: str, now: int) -> str:
    """Record a moved pane, or return the id of its existing record (stable per pane)."""
    row = conn.execute("SELECT extra_pane_id FROM extra_panes WHERE tmux_server_id = ?"
                       " AND pane_id = ?", (tmux_server_id, pane_id)).fetchone()
    if row is not None:
        return str(row["extra_pane_id"])
    conn.execute(
        "INSERT INTO extra_panes (extra_pane_id, host_id, view_id, frame_id, tmux_server_id,"
        " pane_id, command, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (extra_pane_id, host_id, view_id, frame_id, tmux_server_id, pane_id,
         command[:MAX_COMMAND], now))
    return extra_pane_id


def forget_gone_extra_panes(conn: sqlite3.Connection, tmux_server_id: str | None,
                            alive: Collection[str]) -> int:
    """Delete the records whose pane is not in ``alive`` on the live server
    ``tmux_server_id`` (every record of another server: its locators are invalid)."""
    removed = 0
    for row in conn.execute("SELECT extra_pane_id, tmux_server_id, pane_id"
                            " FROM extra_panes").fetchall():
        if row["tmux_server_id"] == tmux_server_id and row["pane_id"] in alive:
            continue
        conn.execute("DELETE FROM extra_panes WHERE extra_pane_id = ?",
                     (row["extra_pane_id"],))
        removed += 1
    return removed


def forget_extra_pane(conn: sqlite3.Connection, extra_pane_id: str) -> int:
    """Delete one record (its pane was closed by the person); 0 when it was gone already."""
    return conn.execute("DELETE FROM extra_panes WHERE extra_pane_id = ?",
                        (extra_pane_id,)).rowcount
