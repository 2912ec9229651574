"""What a live follower of a remote host records beyond a refresh's writes
(``storage.operations.remotes``): a document it refused."""

from __future__ import annotations

import sqlite3

from storage.operations.remotes import MAX_ERROR_CHARS


def note_refused(conn: sqlite3.Connection, remote_name: str, error: str, now: int) -> bool:
    """A document the follower refused: the cached state and reachability stay as they
    were (the refused bytes change nothing shown); only the bounded error and the
    attempt time say it happened. A remote never reached keeps having no row."""
    cur = conn.execute(
        "UPDATE host_state_cache SET last_attempt_at = ?, bounded_error = ?"
        " WHERE remote_name = ?", (now, error[:MAX_ERROR_CHARS], remote_name))
    return cur.rowcount == 1
