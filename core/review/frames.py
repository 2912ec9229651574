"""Where a frame's change lives: its checkout, repository and base ref.

The checkout is the frame's project checkout (a worktree is its own project).
The base ref is the commit the frame's first recorded attempt started from
(``workspaces.base_ref`` in its earliest session file, written by the first
hook of that session): the frame's change is everything since then, across
restarts. A frame with no recorded attempt (no agent ever worked in it) falls
back to HEAD, so only uncommitted changes show.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import TYPE_CHECKING

from core.model.errors import NotFound

if TYPE_CHECKING:
    from core.config.home import Home


@dataclass(frozen=True)
class FramePlace:
    frame_id: str
    title: str
    role: str
    project_id: str
    lifecycle_state: str
    checkout: str
    repository_id: str | None
    session_keys: tuple[str, ...]


_PLACE_SQL = (
    "SELECT f.frame_id, f.title, f.role, f.project_id, f.lifecycle_state, c.path,"
    " c.repository_id FROM frames f JOIN projects p ON p.project_id = f.project_id"
    " JOIN checkouts c ON c.checkout_id = p.checkout_id")


def _place(conn: sqlite3.Connection, row: sqlite3.Row | tuple) -> FramePlace:
    keys = tuple(r[0] for r in conn.execute(
        "SELECT session_key FROM frame_sessions WHERE frame_id = ? ORDER BY ordinal",
        (row[0],)))
    return FramePlace(row[0], row[1], row[2], row[3], row[4], row[5], row[6], keys)


def frame_place(conn: sqlite3.Connection, frame_id: str) -> FramePlace:
    """The frame's checkout from the registry (read-only)."""
    row = conn.execute(_PLACE_SQL + " WHERE f.frame_id = ?", (frame_id,)).fetchone()
    if row is None:
        raise NotFound(f"no frame {frame_id!r}; `switchboard frame list` shows the frames",
                       code="frame_unknown")
    return _place(conn, row)


def open_places(conn: sqlite3.Connection) -> list[FramePlace]:
    """Every open frame of this host with its checkout (what conflicts compare)."""
    rows = conn.execute(_PLACE_SQL + " WHERE f.lifecycle_state = 'open'").fetchall()
    return [_place(conn, r) for r in rows]


def recorded_base(home: Home, session_keys: tuple[str, ...]) -> str | None:
    """The base ref of the frame's earliest session that recorded one."""
    from storage import session_db

    for key in session_keys:
        with session_db.reading(home.root, key) as conn:
            if conn is None:
                continue
            row = conn.execute("SELECT base_ref FROM workspaces WHERE base_ref IS NOT NULL"
                               " ORDER BY created_at, rowid LIMIT 1").fetchone()
        if row is not None:
            return str(row[0])
    return None


def open_registry(home: Home) -> sqlite3.Connection:
    """A read-only connection to the current registry (reads only; no engine needed)."""
    from core.model.errors import RegistryUnavailable
    from storage.uri import open_uri

    generation = home.read_current_generation()
    if not generation:
        from core.config.registry import not_initialized_message

        raise RegistryUnavailable(not_initialized_message(home), code="registry_missing")
    conn = open_uri(home.registry_path(generation), "ro", check_same_thread=False)
    conn.row_factory = sqlite3.Row
    conn.execute("PRAGMA busy_timeout = 2000")
    return conn
