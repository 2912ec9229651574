"""How many subagents each live session runs now, from the sessions' own evidence files.

SubagentStart and SubagentStop (Claude Code; Codex 0.166 to 0.171) move one ``agents``
row per subagent in the session's file (``storage.session_db.record_subagent``); the
navigator tree shows the running ones under the frame ("2 subagents") and ``i`` lists
them. The count lives there, not in the registry: it is evidence of what the CLI said,
not state Switchboard acts on, and the registry would need a schema step for it.

The tree is rebuilt on every registry change, so a file is read again only when it
changed (its and its ``-wal``'s size and mtime), and only for sessions that are live.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterable
from pathlib import Path

from core.model.errors import RegistryUnavailable

_Stamp = tuple[int, int, int, int]
_CACHE: dict[str, tuple[_Stamp, int]] = {}
_CACHE_LIMIT = 4096


def _stamp(path: Path) -> _Stamp | None:
    try:
        main = os.stat(path)
    except OSError:
        return None
    try:
        wal = os.stat(f"{path}-wal")
        return (main.st_mtime_ns, main.st_size, wal.st_mtime_ns, wal.st_size)
    except OSError:
        return (main.st_mtime_ns, main.st_size, 0, 0)


def running_count(root: Path, session_key: str) -> int:
    """The session's running subagents; 0 without an evidence file or when it cannot
    be read (a count shown is evidence; a refused file shows none rather than failing
    the whole tree)."""
    from storage import session_db

    path = session_db.session_db_path(root, session_key)
    stamp = _stamp(path)
    if stamp is None:
        return 0
    cached = _CACHE.get(str(path))
    if cached is not None and cached[0] == stamp:
        return cached[1]
    try:
        conn = session_db.open_session_db_readonly(path)
    except (RegistryUnavailable, sqlite3.Error, OSError):
        return 0
    try:
        count = session_db.running_subagents(conn, session_key)
    except sqlite3.Error:
        count = 0
    finally:
        conn.close()
    if len(_CACHE) >= _CACHE_LIMIT:
        _CACHE.clear()
    _CACHE[str(path)] = (stamp, count)
    return count


def running_counts(root: Path, session_keys: Iterable[str]) -> dict[str, int]:
    """Running subagents per session key, only for those that have any."""
    counts = {key: running_count(root, key) for key in session_keys}
    return {key: n for key, n in counts.items() if n > 0}
