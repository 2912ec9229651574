"""Request records: idempotency of every mutation by (host, request UUID)."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from core.model.enums import RequestState
from core.model.errors import RequestConflict


@dataclass(frozen=True)
class StoredRequest:
    operation: str
    fingerprint: str
    state: RequestState
    result_type: str | None
    result_id: str | None


def lookup(conn: sqlite3.Connection, host_id: str, request_id: str,
           operation: str, fingerprint: str) -> StoredRequest | None:
    """Return the stored request, refusing reuse of its id for another meaning."""
    row = conn.execute(
        "SELECT operation, semantic_fingerprint, state, result_type, result_id"
        " FROM request_records WHERE host_id = ? AND request_id = ?",
        (host_id, request_id)).fetchone()
    if row is None:
        return None
    if row["operation"] != operation or row["semantic_fingerprint"] != fingerprint:
        raise RequestConflict(
            f"request {request_id} was already used for a different {row['operation']} "
            "request; use a fresh request id")
    return StoredRequest(row["operation"], row["semantic_fingerprint"],
                         RequestState(row["state"]), row["result_type"], row["result_id"])


def record(conn: sqlite3.Connection, host_id: str, request_id: str, operation: str,
           fingerprint: str, now: int) -> None:
    conn.execute(
        "INSERT INTO request_records (host_id, request_id, operation, semantic_fingerprint,"
        " state, created_at) VALUES (?, ?, ?, ?, 'prepared', ?)",
        (host_id, request_id, operation, fingerprint, now))


def complete(conn: sqlite3.Connection, host_id: str, request_id: str, result_type: str,
             result_id: str | None, now: int) -> None:
    conn.execute(
        "UPDATE request_records SET state = 'completed', result_type = ?, result_id = ?,"
        " completed_at = ? WHERE host_id = ? AND request_id = ? AND state = 'prepared'",
        (result_type, result_id, now, host_id, request_id))
