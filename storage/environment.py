"""Name the environment failure behind a SQLite error: full disk, read-only, busy.

SQLite reports these as ``OperationalError`` with the primary result code
in ``sqlite_errorcode``; the person should read one sentence naming the file,
the cause and what to do, not ``database or disk is full`` in a traceback.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from core.model.errors import EnvironmentFailure

SQLITE_BUSY, SQLITE_LOCKED, SQLITE_READONLY, SQLITE_IOERR = 5, 6, 8, 10
SQLITE_FULL, SQLITE_CANTOPEN, SQLITE_PERM, SQLITE_AUTH = 13, 14, 3, 23

_WHAT = {
    SQLITE_FULL: ("disk_full", "disk full while writing {path}: free space and retry"),
    SQLITE_READONLY: ("read_only", "{path} is read-only (file, folder or file system): "
                                   "make it writable and retry"),
    SQLITE_BUSY: ("busy", "{path} stayed locked by another process past the timeout: "
                          "retry in a moment"),
    SQLITE_LOCKED: ("busy", "{path} is locked: retry in a moment"),
    SQLITE_IOERR: ("io_error", "the disk failed while writing {path}: check the disk "
                               "and free space, then retry"),
    SQLITE_CANTOPEN: ("cannot_open", "cannot open {path} or its -wal/-shm files: check that "
                                     "the folder exists and is writable, then retry"),
    SQLITE_PERM: ("permission_denied", "permission denied on {path}: fix its permissions "
                                       "and retry"),
}


def database_path(conn: sqlite3.Connection | None) -> str:
    """The main database file of ``conn`` (for the message), or a neutral phrase."""
    if conn is not None:
        try:
            for _, name, file in conn.execute("PRAGMA database_list"):
                if name == "main" and file:
                    return file
        except sqlite3.Error:
            pass
    return "the Switchboard database"


# Less than this free for an unprivileged writer counts as full: SQLite grows
# its files by pages, so a few KiB left is as good as none.
FULL_BELOW_BYTES = 64 * 1024


def _disk_is_full(where: str) -> bool:
    folder = os.path.dirname(where) or "."
    try:
        stats = os.statvfs(folder)
    except OSError:
        return False
    return stats.f_bavail * stats.f_frsize < FULL_BELOW_BYTES


def _read_only_fs(where: str) -> bool:
    try:
        return bool(os.statvfs(os.path.dirname(where) or ".").f_flag & os.ST_RDONLY)
    except OSError:
        return False


def environment_failure(exc: BaseException, path: str | Path | None = None,
                        conn: sqlite3.Connection | None = None, *,
                        tail: str = "; nothing was changed") -> EnvironmentFailure | None:
    """The EnvironmentFailure ``exc`` stands for, or None when it is something else.

    The default ``tail`` is for a failure inside a transaction (rolled back);
    a catch-all that cannot know passes its own.
    """
    if not isinstance(exc, sqlite3.OperationalError | sqlite3.DatabaseError):
        return None
    primary = (getattr(exc, "sqlite_errorcode", 0) or 0) & 0xFF
    if primary not in _WHAT:
        text = str(exc)
        primary = (SQLITE_FULL if "disk is full" in text
                   else SQLITE_READONLY if "readonly database" in text
                   else SQLITE_BUSY if "database is locked" in text
                   else SQLITE_IOERR if "disk I/O error" in text else 0)
        if not primary:
            return None
    where = str(path) if path is not None else database_path(conn)
    if primary in (SQLITE_CANTOPEN, SQLITE_IOERR, SQLITE_READONLY) and _read_only_fs(where):
        # SQLite cannot make -shm/-wal on a read-only mount and says "unable to open".
        primary = SQLITE_READONLY
    elif primary == SQLITE_IOERR and _disk_is_full(where):
        # A full disk often surfaces as an I/O error (growing the -shm or -wal
        # file failed): the free space tells the person the real cause.
        primary = SQLITE_FULL
    code, template = _WHAT[primary]
    return EnvironmentFailure(template.format(path=where) + tail, code=code)
