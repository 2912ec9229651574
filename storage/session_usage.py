"""Per-turn token usage in a session's evidence file (schema V2, issue 26).

One named write: ``advance_usage`` reads the reader's cursor for a source file
(Claude Code's transcript or Codex's rollout), lets the caller parse what was
appended since, and stores the turn rows and the new cursor in the same
``BEGIN IMMEDIATE`` transaction. Two readers of one session (the Stop's
detached worker and a reconcile) are serialized by it: the second finds the
cursor already moved and counts nothing twice.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from typing import NamedTuple

from storage.session_db import _transaction, has_usage_tables, new_id


class UsageRow(NamedTuple):
    """One turn's usage for one model, as stored."""

    turn_id: str | None
    provider: str
    model_id: str | None
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    reasoning_tokens: int
    requests: int
    limit_kind: str | None = None
    limit_message: str | None = None
    limit_reset_at: str | None = None
    ended_at: str = ""


class Advance(NamedTuple):
    """What the caller's parse of the new bytes found."""

    rows: list[UsageRow]
    offset: int
    state: dict[str, object]


def cursor(conn: sqlite3.Connection, session_id: str, source_path: str
           ) -> tuple[int, dict[str, object]]:
    row = conn.execute("SELECT byte_offset, state_json FROM usage_cursors WHERE session_id = ?"
                       " AND source_path = ?", (session_id, source_path)).fetchone()
    if row is None:
        return 0, {}
    try:
        state = json.loads(row[1])
    except ValueError:
        state = {}
    return int(row[0]), state if isinstance(state, dict) else {}


def advance_usage(conn: sqlite3.Connection, session_id: str, source_path: str,
                  parse: Callable[[int, dict[str, object]], Advance], now_iso: str
                  ) -> list[UsageRow]:
    """Parse from the stored cursor and store the rows and the new cursor atomically."""
    with _transaction(conn):
        offset, state = cursor(conn, session_id, source_path)
        found = parse(offset, state)
        for row in found.rows:
            conn.execute(
                "INSERT INTO turn_usage (id, session_id, turn_id, provider, model_id,"
                " input_tokens, output_tokens, cache_read_tokens, cache_write_tokens,"
                " reasoning_tokens, requests, limit_kind, limit_message, limit_reset_at,"
                " ended_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (new_id(), session_id, row.turn_id, row.provider, row.model_id,
                 row.input_tokens, row.output_tokens, row.cache_read_tokens,
                 row.cache_write_tokens, row.reasoning_tokens, row.requests, row.limit_kind,
                 row.limit_message, row.limit_reset_at, row.ended_at or now_iso))
        conn.execute(
            "INSERT INTO usage_cursors (session_id, source_path, byte_offset, state_json,"
            " updated_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (session_id, source_path)"
            " DO UPDATE SET byte_offset = excluded.byte_offset,"
            " state_json = excluded.state_json, updated_at = excluded.updated_at",
            (session_id, source_path, found.offset, json.dumps(found.state), now_iso))
    return found.rows


def turn_usage(conn: sqlite3.Connection, session_id: str | None = None) -> list[UsageRow]:
    """Every stored turn row (of one session, or of the file), oldest first; [] for a
    V1 file read as it is."""
    if not has_usage_tables(conn):
        return []
    sql = ("SELECT turn_id, provider, model_id, input_tokens, output_tokens,"
           " cache_read_tokens, cache_write_tokens, reasoning_tokens, requests, limit_kind,"
           " limit_message, limit_reset_at, ended_at FROM turn_usage")
    args: tuple[str, ...] = ()
    if session_id is not None:
        sql += " WHERE session_id = ?"
        args = (session_id,)
    return [UsageRow(*tuple(r)) for r in conn.execute(sql + " ORDER BY ended_at, rowid", args)]


def newest_turn(conn: sqlite3.Connection, session_id: str) -> UsageRow | None:
    """The session's newest turn row (None in a V1 file or before any)."""
    if not has_usage_tables(conn):
        return None
    row = conn.execute(
        "SELECT turn_id, provider, model_id, input_tokens, output_tokens,"
        " cache_read_tokens, cache_write_tokens, reasoning_tokens, requests, limit_kind,"
        " limit_message, limit_reset_at, ended_at FROM turn_usage WHERE session_id = ?"
        " ORDER BY ended_at DESC, rowid DESC LIMIT 1", (session_id,)).fetchone()
    return None if row is None else UsageRow(*tuple(row))


def skipped_lines(conn: sqlite3.Connection, session_id: str | None = None) -> int:
    """How many unreadable lines the usage reader skipped in the session's source files
    (of the whole file when ``session_id`` is None): the ``bad_lines`` its cursors keep."""
    if not has_usage_tables(conn):
        return 0
    sql = "SELECT state_json FROM usage_cursors"
    args: tuple[str, ...] = ()
    if session_id is not None:
        sql += " WHERE session_id = ?"
        args = (session_id,)
    found = 0
    for (text,) in conn.execute(sql, args):
        try:
            state = json.loads(text)
        except ValueError:
            continue
        count = state.get("bad_lines") if isinstance(state, dict) else None
        if isinstance(count, int) and not isinstance(count, bool) and count > 0:
            found += count
    return found
