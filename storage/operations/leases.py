"""Desktop attachment leases: at most one unexpired offer per view."""

from __future__ import annotations

import sqlite3


def expire_overdue(conn: sqlite3.Connection, view_id: str, now: int) -> None:
    conn.execute("UPDATE desktop_attachment_leases SET state = 'expired'"
                 " WHERE view_id = ? AND state = 'offered' AND expires_at <= ?", (view_id, now))


def offered(conn: sqlite3.Connection, view_id: str) -> sqlite3.Row | None:
    return conn.execute("SELECT * FROM desktop_attachment_leases WHERE view_id = ?"
                        " AND state = 'offered'", (view_id,)).fetchone()


def offer(conn: sqlite3.Connection, *, lease_id: str, view_id: str, request_id: str,
          expires_at: int) -> None:
    conn.execute("INSERT INTO desktop_attachment_leases (lease_id, view_id, request_id, state,"
                 " expires_at) VALUES (?, ?, ?, 'offered', ?)",
                 (lease_id, view_id, request_id, expires_at))


def claim(conn: sqlite3.Connection, lease_id: str) -> bool:
    cur = conn.execute("UPDATE desktop_attachment_leases SET state = 'claimed'"
                       " WHERE lease_id = ? AND state = 'offered'", (lease_id,))
    return cur.rowcount == 1
