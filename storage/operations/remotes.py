"""The cached HostState of remote hosts (``host_state_cache``): projection evidence only."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence

from core.model.digest import sha256_hex

MAX_ERROR_CHARS = 1024


def store_state(conn: sqlite3.Connection, *, remote_name: str, host_id: str,
                canonical: bytes, observed_at: int, now: int) -> None:
    """A validated refresh: the remote's canonical state replaces the cached one and
    the host is online again (any earlier error cleared), in one upsert so a reader
    never sees a new state with an old reachability."""
    conn.execute(
        "INSERT INTO host_state_cache (remote_name, host_id, state_json, content_hash,"
        " observed_at, received_at, last_attempt_at, reachability, bounded_error)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, 'online', NULL)"
        " ON CONFLICT(remote_name) DO UPDATE SET host_id = excluded.host_id,"
        " state_json = excluded.state_json, content_hash = excluded.content_hash,"
        " observed_at = excluded.observed_at, received_at = excluded.received_at,"
        " last_attempt_at = excluded.last_attempt_at, reachability = 'online',"
        " bounded_error = NULL",
        (remote_name, host_id, canonical.decode("utf-8"), sha256_hex(canonical),
         observed_at, now, now))


def mark_offline(conn: sqlite3.Connection, remote_name: str, error: str, now: int) -> bool:
    """A failed refresh: the last good state is kept, the host marked offline with a
    bounded error. A remote never reached has no row and gets none (no state is
    invented); returns whether a cached row was marked."""
    cur = conn.execute(
        "UPDATE host_state_cache SET last_attempt_at = ?, reachability = 'offline',"
        " bounded_error = ? WHERE remote_name = ?", (now, error[:MAX_ERROR_CHARS], remote_name))
    return cur.rowcount == 1


def drop_unconfigured(conn: sqlite3.Connection, configured: Sequence[tuple[str, str]]) -> int:
    """Delete the cached state of every remote not in ``configured`` ((name, host id)
    pairs): a removed ``[[remotes]]`` entry, or one whose host id changed, leaves no
    evidence behind. Returns how many rows were deleted."""
    wanted = json.dumps([[name, host_id] for name, host_id in configured])
    cur = conn.execute(
        "DELETE FROM host_state_cache WHERE NOT EXISTS (SELECT 1 FROM json_each(?) w"
        " WHERE w.value ->> 0 = host_state_cache.remote_name"
        " AND w.value ->> 1 = host_state_cache.host_id)", (wanted,))
    return cur.rowcount
