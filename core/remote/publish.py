"""``switchboard state host --follow --json``: this host's HostState, once per change.

What a remote host runs at the far end of a follower's ssh (``core.remote.follower``).
The first document goes out at once; after that the registry's own files are
watched (``core.state.change_watch``, inotify) and a document is written only
when the state differs from the last one sent, ignoring ``generatedAt`` (an idle
host sends nothing but heartbeats). Between documents an empty line goes out
every ``heartbeat_s``: the follower tells a quiet host from a gone one by it, and
a write to a closed channel is how this process learns the follower left (it
exits on a broken pipe, so no process outlives its ssh session by more than a
heartbeat). Every ``refresh_s`` the full document goes out even unchanged, so the
follower's cached copy never ages into "stale" on a host that is merely idle.

A registry reset (a new generation) ends the stream; the follower reconnects and
the next process serves the new generation.
"""

from __future__ import annotations

import os
import select
import time
from dataclasses import dataclass, replace
from typing import BinaryIO

from core.context.reader import RegistryReader
from core.model.files import file_stamps
from core.platform.file_watch import ChangeWatch
from core.state.envelope import encode_canonical
from core.state.state_builder import build_host_state

#: Seconds between heartbeats (empty lines) while nothing changes.
HEARTBEAT_S = 2.0
#: Seconds after which the document is sent again even when nothing changed.
REFRESH_S = 60.0
#: Seconds between state rebuilds when no file event came (activity ageing, a missed
#: event); a watched commit rebuilds at once.
REBUILD_S = 10.0
#: Seconds a woken rebuild waits for the rest of a commit's events.
SETTLE_S = 0.03
#: The least time between two builds: a storm of hook commits (several a second on a
#: busy host) costs at most four builds a second, its last change still sent.
MIN_GAP_S = 0.25
#: Seconds between polls of the files where inotify is unavailable.
POLL_S = 0.5


@dataclass
class _Sent:
    """The last document sent, without its timestamp (what a change is measured on)."""

    key: bytes = b""
    at: float = 0.0


def _key(reader: RegistryReader) -> tuple[bytes, bytes]:
    state = build_host_state(reader)
    return encode_canonical(replace(state, generated_at=0)), encode_canonical(state)


def follow(reader: RegistryReader, out: BinaryIO, *, heartbeat_s: float = HEARTBEAT_S,
           refresh_s: float = REFRESH_S, rebuild_s: float = REBUILD_S,
           max_seconds: float | None = None) -> int:
    """Write documents and heartbeats to ``out`` until the reader goes away (a broken
    pipe), the registry's generation changes, or ``max_seconds`` pass (tests)."""
    assert reader.home is not None, "a follow stream needs the home it serves"
    home = reader.home
    registry = os.fspath(home.registry_path(reader.generation_id))
    files = (registry, f"{registry}-wal", os.fspath(home.current_pointer))
    watch = ChangeWatch.open(files)
    sent = _Sent()
    started = last_build = last_write = time.monotonic()
    stamp = file_stamps(files)
    try:
        dirty = True
        while True:
            now = time.monotonic()
            if max_seconds is not None and now - started >= max_seconds:
                return 0
            if dirty or now - last_build >= rebuild_s:
                if home.read_current_generation() != reader.generation_id:
                    return 0  # a reset: the follower reconnects to the new generation
                key, document = _key(reader)
                last_build = now
                dirty = False
                if key != sent.key or now - sent.at >= refresh_s:
                    if not _write(out, document + b"\n"):
                        return 0
                    sent.key, sent.at, last_write = key, now, now
            if now - last_write >= heartbeat_s:
                if not _write(out, b"\n"):
                    return 0
                last_write = now
            wait = max(0.0, min(heartbeat_s - (now - last_write),
                                rebuild_s - (now - last_build)))
            if watch is not None:
                ready, _, _ = select.select([watch.fd], [], [], wait)
                if ready and watch.drain():
                    time.sleep(max(SETTLE_S, MIN_GAP_S - (time.monotonic() - last_build)))
                    watch.drain()
                    dirty = True
            else:
                time.sleep(min(wait, POLL_S))
                moved = file_stamps(files)
                dirty = moved != stamp
                stamp = moved
    finally:
        if watch is not None:
            watch.close()


def _write(out: BinaryIO, data: bytes) -> bool:
    """False once the reader is gone (ssh closed the channel)."""
    try:
        out.write(data)
        out.flush()
    except (BrokenPipeError, ValueError, OSError):
        return False
    return True
