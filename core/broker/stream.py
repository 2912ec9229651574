"""A read-only stream of one member's pending messages (``switchboard inbox --stream``).

It selects pending records regardless of ``notified_at`` and never changes
notification or consumption state: the connection is opened read-only
(``mode=ro`` plus ``query_only``), and which ids were already shown is kept in
this process only (no schema, no durable consumer state).

Latency without busy-polling the database: ``ChangeWatcher`` stats the broker
file and its WAL every 50 ms (a kernel call that takes no SQLite lock and reads
no pages) and the pending query runs only when a commit was seen, plus a
``PRAGMA data_version`` safety check once a second. A send therefore shows up
within roughly 50-100 ms, while an idle stream costs ~20 stats a second.
Alternatives rejected: inotify is Linux-only and needs a dependency; a fifo
would need every writer to know about every reader (durable consumer state).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from core.broker.broker import Broker, Message, open_broker
from storage.broker_store import ChangeWatcher

STAT_INTERVAL_S = 0.05


def follow_inbox(path: str | os.PathLike[str], member_id: int, *,
                 stop: threading.Event | None = None, max_seconds: float | None = None,
                 include_existing: bool = True,
                 interval: float = STAT_INTERVAL_S) -> Iterator[Message]:
    """Yield each pending message for ``member_id`` once, as it appears.

    Runs until ``stop`` is set or ``max_seconds`` pass (forever if neither).
    ``include_existing`` also yields messages already pending at start.
    """
    path = Path(path)
    store = open_broker(path, create=False, readonly=True)
    try:
        broker = Broker(store)
        broker.get_member(member_id)  # an unknown member is an error, not an empty stream
        watcher = ChangeWatcher(path, data_version=store.data_version, interval=interval)
        deadline = None if max_seconds is None else time.monotonic() + max_seconds
        shown: set[int] = set()
        if not include_existing:
            shown = {m.message_id for m in broker.poll(member_id)}
        dirty = True
        while True:
            if dirty:
                pending = broker.poll(member_id)
                for message in pending:
                    if message.message_id not in shown:
                        shown.add(message.message_id)
                        yield message
                # ACKed ids never return to pending, so forget them: memory stays bounded.
                shown &= {m.message_id for m in pending}
            if stop is not None and stop.is_set():
                return
            if deadline is not None and time.monotonic() >= deadline:
                return
            time.sleep(interval)
            dirty = watcher.changed()
    finally:
        store.close()
