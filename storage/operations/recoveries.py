"""Durable recoveries: one stable row per uncertain external outcome."""

from __future__ import annotations

import sqlite3

from core.enums import Actionability, RecoveryKind, RecoveryState
from storage.operations.common import cas, one


def open_recovery(conn: sqlite3.Connection, *, recovery_id: str, host_id: str,
                  kind: RecoveryKind, subject_type: str, subject_id: str,
                  actionability: Actionability, explanation: str, now: int) -> str:
    """Open a recovery, or return the id of the equivalent one already open (stable id)."""
    row = conn.execute(
        "SELECT recovery_id FROM recoveries WHERE host_id = ? AND kind = ? AND subject_type = ?"
        " AND subject_id = ? AND state = 'open'",
        (host_id, kind.value, subject_type, subject_id)).fetchone()
    if row is not None:
        return row["recovery_id"]
    conn.execute(
        "INSERT INTO recoveries (recovery_id, host_id, kind, subject_type, subject_id,"
        " actionability, state, bounded_explanation, created_at, updated_at)"
        " VALUES (?, ?, ?, ?, ?, ?, 'open', ?, ?, ?)",
        (recovery_id, host_id, kind.value, subject_type, subject_id, actionability.value,
         explanation[:1024], now, now))
    return recovery_id


def close_recovery(conn: sqlite3.Connection, recovery_id: str, to_state: RecoveryState,
                   now: int) -> None:
    cas(conn, "UPDATE recoveries SET state = ?, updated_at = ? WHERE recovery_id = ?"
        " AND state = 'open'", (to_state.value, now, recovery_id), f"recovery {recovery_id}")


def get_recovery(conn: sqlite3.Connection, recovery_id: str) -> sqlite3.Row:
    return one(conn, "SELECT * FROM recoveries WHERE recovery_id = ?", (recovery_id,),
               f"recovery {recovery_id}")


def resolve_for_subject(conn: sqlite3.Connection, kind: RecoveryKind, subject_type: str,
                        subject_id: str, now: int) -> int:
    cur = conn.execute(
        "UPDATE recoveries SET state = 'resolved', updated_at = ? WHERE kind = ?"
        " AND subject_type = ? AND subject_id = ? AND state = 'open'",
        (now, kind.value, subject_type, subject_id))
    return cur.rowcount
