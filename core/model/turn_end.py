"""The hook's hand-off of turn-end work to the home's running server (issue 38).

A Stop used to start a fresh Python interpreter per piece of work (the usage read,
the attention publisher, a broker kick, the change worker, the evidence parser, a
waiting push): 50-100 ms of CPU each, most of a 200-agent storm's cost. When the
home's server runs, the hook instead drops one small private file per piece of work
into ``<run>/server/turn-end/`` and returns; the server drains that folder every
``POLL_S`` and does the work in its own process (``core.server.turn_end``).

Why a spool folder rather than a loopback request: a file is written in well under a
millisecond with nothing imported beyond ``json`` and ``os`` (no socket, no token, no
wait for an answer), and it survives the server: an item the server did not finish
(killed at any moment) is still on disk and done when the server starts again.

Coalescing is by name: an item is named after its kind and its subject (the frame, or
the session and the file it reads), so a second Stop of the same frame before the
server's next look replaces the first item (``os.replace``) instead of adding work.

The hand-off is only taken when the server holds its lock *and* its drain beat within
``ALIVE_S`` (a wedged or exiting server is not trusted with work); otherwise the
caller starts today's detached worker, so nothing depends on the server running.
``SWITCHBOARD_TURN_END=worker`` forces the workers (the storm bench's "before").

In ``core.model`` (beside ``core.model.spawn``, which it replaces on the hook path) so
the evidence and broker layers may call it. Lean on purpose: the hook imports this on
every Stop.
"""

from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path

from core.model.flocks import lock_is_held

SPOOL_FOLDER = "turn-end"
"""Under the server's private folder (``core.providers.agent_http.server_dir``)."""
SERVER_FOLDER = "server"
LOCK_NAME = "server.lock"
"""``core.providers.agent_http``'s names, spelled here so the hook imports nothing more."""
BEAT_NAME = ".alive"
"""Touched by the server's drain on every look; the hook trusts a beat this recent."""
ALIVE_S = 5.0
TAKEN = ".taken"
"""Suffix of an item the server claimed (renamed) and has not finished."""
ENV_MODE = "SWITCHBOARD_TURN_END"
WORKER_MODE = "worker"

USAGE = "usage"
STOP = "stop"
KICK = "kick"
CHANGES = "changes"
EVIDENCE = "evidence"
ATTENTION = "attention"
KINDS = (USAGE, STOP, KICK, CHANGES, EVIDENCE, ATTENTION)

def spool_dir(run_dir: Path) -> Path:
    return run_dir / SERVER_FOLDER / SPOOL_FOLDER


def path_key(subject: str, path: str) -> str:
    """``subject`` and a short stable digest of ``path`` (FNV-1a, no ``hashlib`` import):
    the usage reads of one session from two files are two pieces of work."""
    digest = 0xcbf29ce484222325
    for byte in path.encode("utf-8", "surrogateescape"):
        digest = ((digest ^ byte) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return f"{subject}-{digest:016x}"


def item_name(kind: str, key: str) -> str:
    """``kind.key`` with only name-safe characters: one item per kind and subject (the
    key's end is kept when it is long: ``path_key``'s digest is there)."""
    safe = "".join(c for c in key if c.isalnum() or c in "-_")[-160:] or "none"
    return f"{kind}.{safe}"


def server_takes_work(run_dir: Path) -> bool:
    """Whether the home's server runs (its lock is held) and its drain is alive: a stat
    and a lock probe, a few microseconds (asked per item, never cached: a long-lived
    caller must see a server that was killed a moment ago)."""
    if os.environ.get(ENV_MODE) == WORKER_MODE:
        return False
    folder = run_dir / SERVER_FOLDER
    try:
        beat = os.stat(folder / SPOOL_FOLDER / BEAT_NAME).st_mtime
    except OSError:
        beat = 0.0
    alive = time.time() - beat <= ALIVE_S
    return alive and lock_is_held(folder / LOCK_NAME)


def private_folder(path: Path) -> bool:
    """``core.model.files.check_own_dir``'s rule as a yes/no, without importing that module
    (its ``threading`` import is 1.7 ms of every Stop hook): a real folder (not a link)
    of this user, open to no one else. The server made it with ``own_dir``."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and \
        not info.st_mode & 0o077


def hand_off(run_dir: Path, kind: str, key: str, args: list[str]) -> bool:
    """Spool one piece of turn-end work for the server; False when the caller must
    start its worker instead (no live server, or the item could not be written)."""
    if not server_takes_work(run_dir):
        return False
    name = item_name(kind, key)
    folder = spool_dir(run_dir)
    if not private_folder(folder):
        return False
    try:
        data = json.dumps({"kind": kind, "args": args, "at": time.time()}).encode()
        tmp = folder / f".{name}.{os.getpid()}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC,
                     0o600)
        try:
            os.write(fd, data)  # no fsync: a machine crash ends the turn's agent too
        finally:
            os.close(fd)
        os.replace(tmp, folder / name)
    except OSError:
        return False
    return True


__all__ = ["ATTENTION", "CHANGES", "EVIDENCE", "KICK", "STOP", "USAGE", "hand_off",
           "item_name", "path_key", "server_takes_work", "spool_dir"]
