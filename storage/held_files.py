"""Database files this process holds open through SQLite, and a header read that
never breaks their locks.

SQLite's locks on a file are POSIX advisory locks: they belong to the process and
the file, and closing *any* descriptor of that file drops every one of them, the
ones SQLite's own connections hold included. A raw read of a header (the
diagnosis every ``open_*`` does before SQLite touches a file) that opens and
closes the file while this process has a connection to it therefore drops that
connection's locks: another process closing its own connection then sees no
reader left, checkpoints, deletes the -wal and -shm files, and the first
connection never sees a later commit again.

So every on-disk connection storage opens is a ``HeldConnection``, remembered by
the file's identity (device, inode) until it is closed or collected; a header is
read raw only while no such connection holds the file. A held file was
diagnosed when this process opened it, and SQLite guards its own connections.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import weakref
from pathlib import Path
from typing import Any

HEADER_BYTES = 100


class HeldConnection(sqlite3.Connection):
    """A connection that says when it lets its file go (weakly referenced, too)."""

    def close(self) -> None:
        _forget(self)
        super().close()


_HELD: dict[tuple[int, int], weakref.WeakSet[HeldConnection]] = {}
_LOCK = threading.Lock()


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        found = os.stat(path)
    except OSError:
        return None
    return found.st_dev, found.st_ino


def connect(path: Path, database: str, **options: Any) -> HeldConnection:
    """``sqlite3.connect(database, **options)`` for the file at ``path``, remembered
    while it is open."""
    conn = sqlite3.connect(database, factory=HeldConnection, **options)
    identity = _identity(path)
    if identity is not None:
        with _LOCK:
            _HELD.setdefault(identity, weakref.WeakSet()).add(conn)
    return conn


def _forget(conn: HeldConnection) -> None:
    with _LOCK:
        for identity, held in list(_HELD.items()):
            held.discard(conn)
            if not held:
                del _HELD[identity]


def held(path: Path) -> bool:
    """True while a connection of this process has the file at ``path`` open."""
    identity = _identity(path)
    if identity is None:
        return False
    with _LOCK:
        return bool(_HELD.get(identity))


def read_header(path: Path) -> bytes | None:
    """The file's first 100 bytes (fewer if it is shorter), or None when this process
    already holds the file through SQLite (reading it raw would drop those locks)."""
    if held(path):
        return None
    with open(path, "rb") as handle:
        return handle.read(HEADER_BYTES)
