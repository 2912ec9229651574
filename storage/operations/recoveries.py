"""Durable recoveries: one stable row per uncertain external outcome."""

from __future__ import annotations

import sqlite3

from core.model.enums import Actionability, RecoveryKind, RecoveryState, ViewState
from storage.operations import views as views_ops
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
    if subject_type == "view":
        sync_view_health(conn, subject_id, now)
    return recovery_id


def sync_view_health(conn: sqlite3.Connection, view_id: str, now: int) -> None:
    """A view is degraded exactly while a recovery about it is open: ready <-> degraded,
    as a committed view mutation (revision bumped); other states are left alone."""
    view = conn.execute("SELECT state, revision FROM user_views WHERE view_id = ?",
                        (view_id,)).fetchone()
    if view is None:
        return
    open_ = conn.execute("SELECT EXISTS (SELECT 1 FROM recoveries WHERE subject_type = 'view'"
                         " AND subject_id = ? AND state = 'open')", (view_id,)).fetchone()[0]
    wanted = {(ViewState.READY.value, 1): ViewState.DEGRADED,
              (ViewState.DEGRADED.value, 0): ViewState.READY}.get((view["state"], open_))
    if wanted is not None:
        views_ops.mutate_view(conn, view_id, view["revision"], state=wanted, now=now)


def close_recovery(conn: sqlite3.Connection, recovery_id: str, to_state: RecoveryState,
                   now: int) -> None:
    cas(conn, "UPDATE recoveries SET state = ?, updated_at = ? WHERE recovery_id = ?"
        " AND state = 'open'", (to_state.value, now, recovery_id), f"recovery {recovery_id}")
    row = get_recovery(conn, recovery_id)
    if row["subject_type"] == "view":
        sync_view_health(conn, row["subject_id"], now)


def get_recovery(conn: sqlite3.Connection, recovery_id: str) -> sqlite3.Row:
    return one(conn, "SELECT * FROM recoveries WHERE recovery_id = ?", (recovery_id,),
               f"recovery {recovery_id}")


def resolve_for_subject(conn: sqlite3.Connection, kind: RecoveryKind, subject_type: str,
                        subject_id: str, now: int) -> int:
    cur = conn.execute(
        "UPDATE recoveries SET state = 'resolved', updated_at = ? WHERE kind = ?"
        " AND subject_type = ? AND subject_id = ? AND state = 'open'",
        (now, kind.value, subject_type, subject_id))
    if subject_type == "view" and cur.rowcount:
        sync_view_health(conn, subject_id, now)
    return cur.rowcount
