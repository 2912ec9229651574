"""One reconciler per host: a turn taken through a lock file, not one per navigator.

Every view's navigator used to reconcile on its own interval, so 20 views meant two
reconciles (and their tmux processes) per second. Now a navigator's tick asks for the
host's turn: an ``fcntl`` lock under the home's run folder (released by the kernel when
its holder exits, so a crashed navigator never blocks the others) plus a stamp file
whose mtime is when the last turn started. Whoever ticks first after the interval
reconciles; the rest skip and see its results through the registry as before.

The turn stays with its holder (the stamp names its pid): another navigator takes
it over only once the holder is gone or has missed its turn by half an interval.
Reconciling needs the tmux adapter (~30 modules), which a navigator otherwise never
imports, so a turn that went to whoever ticked first would make every navigator
carry them in time.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from core.model.files import PRIVATE_FILE_MODE, create_private_file, own_dir

LOCK_NAME = "reconcile.lock"
STAMP_NAME = "reconcile.stamp"

#: A turn is due once this share of the interval has passed since the last one started:
#: navigators tick at their own phase, so the first tick after most of an interval
#: takes it and the host reconciles about once per interval, never much less often.
DUE_FRACTION = 0.8
#: Another process's turn passes to the caller once this share of the interval has
#: passed since it started (its holder is alive but missed it: stopped, or too busy).
HANDOVER_FRACTION = 1.5


def _holder(stamp: Path) -> int | None:
    """The pid the stamp names, None when it names none (older stamps are empty)."""
    try:
        text = stamp.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return int(text) if text.isdigit() else None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, another user's: not ours to judge
    return True


@contextmanager
def host_turn(run_dir: Path, interval: float, *,
              clock: Callable[[], float] = time.time,
              owner: int | None = None) -> Iterator[bool]:
    """Yield True when the caller holds the host's reconcile turn and should reconcile.

    False while another process reconciles (the lock is held), when the caller's own
    turn started less than ``DUE_FRACTION x interval`` seconds ago, or when a live
    other ``owner`` (a pid; this process by default) holds it and started it less than
    ``HANDOVER_FRACTION x interval`` ago. A stamp from the future (the clock went
    back) counts as due, so a clock step never stops reconciling.
    """
    owner = os.getpid() if owner is None else owner
    own_dir(run_dir)
    fd = os.open(run_dir / LOCK_NAME, os.O_RDWR | os.O_CREAT, PRIVATE_FILE_MODE)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        stamp = run_dir / STAMP_NAME
        now = clock()
        try:
            age = now - os.stat(stamp).st_mtime
        except FileNotFoundError:
            age = None
        if age is not None and age >= 0:
            holder = _holder(stamp) if age < interval * HANDOVER_FRACTION else None
            mine = holder is None or holder == owner or not _alive(holder)
            if age < interval * (DUE_FRACTION if mine else HANDOVER_FRACTION):
                yield False
                return
        create_private_file(stamp)
        stamp.write_text(str(owner), encoding="ascii")
        os.utime(stamp, (now, now))
        yield True
    finally:
        os.close(fd)  # releases the lock


__all__ = ["DUE_FRACTION", "HANDOVER_FRACTION", "host_turn"]
