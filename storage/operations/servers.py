"""Recorded tmux servers: the identity every stored pane locator is relative to."""

from __future__ import annotations

import sqlite3


def insert_tmux_server(conn: sqlite3.Connection, *, tmux_server_id: str, host_id: str,
                       socket_path: str, server_pid: int, server_start_time: int,
                       now: int) -> None:
    """Record a tmux server identity seen for the first time (socket, pid and start
    time together: a restarted server on the same socket is a new row, so locators
    recorded against the old one are never trusted against the new)."""
    conn.execute(
        "INSERT INTO tmux_servers (tmux_server_id, host_id, socket_path, server_pid,"
        " server_start_time, observed_at) VALUES (?, ?, ?, ?, ?, ?)",
        (tmux_server_id, host_id, socket_path, server_pid, server_start_time, now))


def tmux_server_id_of(conn: sqlite3.Connection, *, socket_path: str, server_pid: int,
                      server_start_time: int) -> str | None:
    """The recorded row of exactly this server generation, if it was seen before."""
    row = conn.execute(
        "SELECT tmux_server_id FROM tmux_servers WHERE socket_path = ? AND server_pid = ?"
        " AND server_start_time = ?",
        (socket_path, server_pid, server_start_time)).fetchone()
    return None if row is None else str(row[0])


def tmux_server_generation(conn: sqlite3.Connection,
                           tmux_server_id: str) -> tuple[str, int, int] | None:
    """(socket path, server pid, server start time) recorded for ``tmux_server_id``."""
    row = conn.execute(
        "SELECT socket_path, server_pid, server_start_time FROM tmux_servers"
        " WHERE tmux_server_id = ?", (tmux_server_id,)).fetchone()
    return None if row is None else (row[0], int(row[1]), int(row[2]))
