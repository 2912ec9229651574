"""Wake on a registry or broker commit instead of polling for one (Linux: inotify).

A navigator used to stat the registry's files four times a second; with 20
views that polling alone was a steady share of a core while nothing changed.
Here the kernel tells us when a watched file is written, created, replaced or
removed: the directories holding the files are watched (a WAL file comes and
goes, a registry reset swaps the generation's pointer) and only events that
name one of the files count. ctypes on libc, no dependency; where inotify is
missing (macOS, a sandbox, out of watches) ``ChangeWatch.open`` gives None
and the caller keeps polling (a stat of the files). SQLite writes ``-shm``
through mmap, which inotify never reports, so it is not among the files; every commit appends to
``-wal`` (or, after a checkpoint, writes the database file) anyway.
"""

from __future__ import annotations

import ctypes
import os
import struct
from collections.abc import Iterable
from dataclasses import dataclass

from core.platform import LINUX, system_name

IN_MODIFY = 0x002
IN_CLOSE_WRITE = 0x008
IN_MOVED_TO = 0x080
IN_CREATE = 0x100
IN_DELETE = 0x200
IN_Q_OVERFLOW = 0x4000
#: What a commit, a checkpoint, a reset or a deleted WAL does to a watched file.
WATCH_MASK = IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_DELETE
IN_NONBLOCK = os.O_NONBLOCK
IN_CLOEXEC = 0o2000000
_HEADER = struct.Struct("iIII")  # wd, mask, cookie, len of the name that follows


@dataclass
class ChangeWatch:
    """An inotify descriptor watching the directories of ``files``; ``drain`` says
    whether any event since the last drain named one of them."""

    fd: int
    files: tuple[str, ...]
    _names: dict[int, frozenset[bytes]]

    @classmethod
    def open(cls, files: Iterable[str], system: str | None = None) -> ChangeWatch | None:
        """A watch on ``files`` (absolute paths), or None where inotify is unavailable
        (``system``: ``sys.platform`` unless a test names another)."""
        files = tuple(files)
        libc = _libc() if system_name(system) == LINUX else None
        if libc is None:
            return None
        fd = libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        if fd < 0:
            return None
        by_dir: dict[str, set[bytes]] = {}
        for path in files:
            folder, name = os.path.split(path)
            by_dir.setdefault(folder, set()).add(os.fsencode(name))
        names: dict[int, frozenset[bytes]] = {}
        for folder, wanted in by_dir.items():
            wd = libc.inotify_add_watch(fd, os.fsencode(folder), WATCH_MASK)
            if wd < 0:  # a missing folder or no watches left: poll instead
                os.close(fd)
                return None
            names[wd] = frozenset(wanted)
        return cls(fd, files, names)

    def fileno(self) -> int:
        return self.fd

    def drain(self) -> bool:
        """Read every pending event; True when one named a watched file (or the
        kernel's queue overflowed, so one may have been lost)."""
        moved = False
        while True:
            try:
                data = os.read(self.fd, 65536)
            except BlockingIOError:
                return moved
            except OSError:
                return True  # a broken watch: let the caller read and find out
            if not data:
                return moved
            offset = 0
            while offset + _HEADER.size <= len(data):
                wd, mask, _cookie, length = _HEADER.unpack_from(data, offset)
                name = data[offset + _HEADER.size:offset + _HEADER.size + length]
                offset += _HEADER.size + length
                if mask & IN_Q_OVERFLOW or name.rstrip(b"\0") in self._names.get(wd, ()):
                    moved = True

    def close(self) -> None:
        try:
            os.close(self.fd)
        except OSError:
            pass


_LIBC: list[ctypes.CDLL | None] = []


def _libc() -> ctypes.CDLL | None:
    """libc with the inotify calls, looked up once; None off Linux or without them."""
    if not _LIBC:
        found = None
        if system_name() == LINUX:
            try:
                lib = ctypes.CDLL(None, use_errno=True)  # the running libc; no ldconfig run
                lib.inotify_init1.argtypes = [ctypes.c_int]
                lib.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p,
                                                  ctypes.c_uint32]
                found = lib
            except (OSError, AttributeError):
                found = None
        _LIBC.append(found)
    return _LIBC[0]
