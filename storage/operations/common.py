"""Small helpers shared by the named operations."""

from __future__ import annotations

import sqlite3
from typing import Any

from core.model.errors import Conflict, NotFound


def one(conn: sqlite3.Connection, sql: str, args: tuple[Any, ...], what: str) -> sqlite3.Row:
    row = conn.execute(sql, args).fetchone()
    if row is None:
        raise NotFound(f"{what} not found")
    return row


def cas(conn: sqlite3.Connection, sql: str, args: tuple[Any, ...], what: str) -> None:
    """Run a guarded UPDATE; zero rows means another writer moved the row first."""
    cur = conn.execute(sql, args)
    if cur.rowcount != 1:
        raise Conflict(f"{what} changed concurrently; reload and retry", code="stale_revision")
