"""Opening Switchboard's host-level side files (the review file, the search index).

Both are derived or person-owned data beside the registry, never part of its
schema: a review's comments and each frame's changed files (``review.db``), and
the full-text index over every session's evidence (``search.db``). They share
one opener so each gets the same guarantees as the other evidence files:

- owner-only: created 0600 in a 0700 folder before SQLite first opens it
  (``-wal``/``-shm`` take the file's mode), because both hold prompts, commands
  and the person's review words;
- identified: ``PRAGMA application_id`` says which file it is; a foreign or
  newer file is refused from its 100-byte header, before SQLite opens (and
  could change) it, and left byte-identical;
- WAL with synchronous NORMAL and a busy timeout, like the session files, so a
  hook's write and a navigator's read never wait on each other for long.

The schema is created with ``IF NOT EXISTS`` statements under the file's
``user_version``: a version bump adds statements, never rewrites the file.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from core.model.errors import RegistryUnavailable
from core.model.files import create_private_file, private_dir
from storage import held_files
from storage.uri import sqlite_uri

BUSY_TIMEOUT_MS = 2000
SQLITE_MAGIC = b"SQLite format 3\x00"


class SideFileRefused(RegistryUnavailable):
    """The side file is not ours (or is newer); nothing was written to it."""

    code = "side_file_refused"


def _check_header(path: Path, application_id: int, version: int, what: str) -> bool:
    """True when the file is ours (or empty: a fresh file SQLite has not written yet)."""
    header = held_files.read_header(path)
    if header is None:
        return True  # held through SQLite by this process: diagnosed when opened
    if not header:
        return False
    if len(header) < 100 or not header.startswith(SQLITE_MAGIC):
        raise SideFileRefused(f"{path} is not a SQLite {what} file; it was left unchanged. "
                              "Move it away and Switchboard makes a new one")
    app_id = int.from_bytes(header[68:72], "big", signed=True)
    user_version = int.from_bytes(header[60:64], "big", signed=True)
    if app_id != application_id:
        raise SideFileRefused(f"{path} belongs to another application (application_id "
                              f"{app_id}); it was left unchanged. Move it away and "
                              "Switchboard makes a new one")
    if user_version > version:
        raise SideFileRefused(f"{path} has {what} schema v{user_version}, newer than this "
                              f"Switchboard (v{version}); upgrade Switchboard. The file was "
                              "left unchanged")
    return True


def open_side_file(path: Path, *, application_id: int, version: int, ddl: tuple[str, ...],
                   what: str, create: bool = True) -> sqlite3.Connection:
    """A read-write connection (autocommit; callers use ``BEGIN IMMEDIATE``)."""
    path = Path(path)
    if not path.exists():
        if not create:
            raise SideFileRefused(f"no {what} file at {path}", code="side_file_missing")
        private_dir(path.parent)
        create_private_file(path)
    ours = _check_header(path, application_id, version, what)
    conn = held_files.connect(path, sqlite_uri(path, mode="rw"), uri=True, isolation_level=None,
                           check_same_thread=False)
    try:
        conn.row_factory = sqlite3.Row
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA synchronous = NORMAL")
        current = conn.execute("PRAGMA user_version").fetchone()[0] if ours else 0
        if current < version:
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("BEGIN IMMEDIATE")
            for statement in ddl:
                conn.execute(statement)
            conn.execute(f"PRAGMA application_id = {application_id}")
            conn.execute(f"PRAGMA user_version = {version}")
            conn.execute("COMMIT")
    except BaseException:
        conn.close()
        raise
    return conn


def open_side_file_readonly(path: Path, *, application_id: int, version: int,
                            what: str) -> sqlite3.Connection | None:
    """A read-only connection, or None when the file does not exist yet (nothing to read)."""
    path = Path(path)
    if not path.exists() or not _check_header(path, application_id, version, what):
        return None
    conn = held_files.connect(path, sqlite_uri(path, mode="ro"), uri=True, isolation_level=None,
                           check_same_thread=False)
    conn.row_factory = sqlite3.Row
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    return conn


def file_mode(path: Path) -> int:
    """The permission bits (tests and doctor-style checks)."""
    return os.stat(path).st_mode & 0o777
