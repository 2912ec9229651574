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
