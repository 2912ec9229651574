"""The server's side of turn-end work: drain the hooks' spool, do the work in-process.

A Stop hook that finds the server running leaves one private file per piece of work
in ``<run>/server/turn-end/`` (``core.model.turn_end``) instead of starting a Python
worker; this drain looks every ``POLL_S``, claims each item by renaming it to
``NAME.taken`` and runs it on a small thread pool, in this process:

========== ============================================== ==============================
item       work (the worker it replaces)                  done twice?
========== ============================================== ==============================
usage      the turn's usage read, settled up to           never counted twice: the read
           ``core.usage.worker.SETTLE_S`` (usage worker)  is incremental by cursor
stop       the push/return that waited for the Stop       claimed in a write transaction
           (``core.hooks.stop_worker``)                   (``sagas.execute``)
kick       broker lines that waited for the Stop          attempt records and pane locks
           (``core.apps.workers kick``)                   type a line once
changes    the frame's review file (``core.review``)      recomputes the same file
evidence   a big output's diagnostics (evidence worker)   ``complete_parse`` once per run
attention  nudges (``switchboard attention --publish``)   removed *before* it runs: a kill
                                                          loses a nudge, never repeats one
========== ============================================== ==============================

Coalescing: items are named by kind and subject, so Stops of one frame (or session)
that arrive before the drain's next look are one item; while an item of a name runs,
a newer one of that name waits in the spool and is claimed once the first is done.

Nothing is lost to a kill: a claimed item is removed only once its work is done (the
nudge aside), so a server killed at any moment leaves ``NAME.taken`` files that the
next server runs first (at its first look), besides the backstops each piece of work
already had (reconcile for a waiting push, the housekeeping pass for broker lines,
the next turn end's read for usage).
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from core.config.home import Home
from core.model.files import own_dir
from core.model.text import shown
from core.model.turn_end import (
    ATTENTION,
    BEAT_NAME,
    CHANGES,
    EVIDENCE,
    KICK,
    KINDS,
    STOP,
    TAKEN,
    USAGE,
    spool_dir,
)

if TYPE_CHECKING:
    from storage.session_usage import UsageRow

POLL_S = 0.2
"""Seconds between two looks at the spool: a Stop's work starts within this (a listing
of an empty folder and one ``utime``, a few microseconds of CPU)."""
WORKERS = 3
"""Items run at once (a push or a kick may take seconds of tmux work; reads are short)."""
ITEM_MAX_BYTES = 16 * 1024
ATTENTION_STALE_S = 30.0
"""A nudge older than this (spooled before a server restart) is dropped unsent: it
would tell the person about a turn end long past."""
TMP_STALE_S = 60.0
"""A hook's temp file older than this was left by a hook killed mid-write."""
USAGE_RETRY_S = 0.25
"""A settling usage read looks again after this (``core.usage.worker.SETTLE_POLL_S``)."""


class BadItem(ValueError):
    """A spooled file that is not a well-formed item of this user's: removed, logged."""


@dataclass(frozen=True)
class Item:
    name: str
    kind: str
    args: tuple[str, ...]
    at: float


@dataclass
class _Settling:
    """A usage read waiting for its turn's lines (the CLI may append them after its Stop)."""

    item: Item
    size: int = -1
    due: float = 0.0
    unmarked: tuple[str, UsageRow, int] | None = None
    """A limit the read found whose registry write failed (busy): tried again first."""


def read_item(path: Path) -> Item:
    """The item in ``path``, checked as this user's private regular file, else BadItem."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        raise BadItem(f"unreadable ({exc.strerror})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid() or \
                info.st_mode & 0o077:
            raise BadItem("not a private file of this user")
        data = os.read(fd, ITEM_MAX_BYTES + 1)
    finally:
        os.close(fd)
    try:
        raw = json.loads(data)
        kind, args, at = raw["kind"], raw["args"], float(raw["at"])
    except (ValueError, KeyError, TypeError):
        raise BadItem("not a turn-end item") from None
    if kind not in KINDS or not isinstance(args, list) or \
            not all(isinstance(a, str) for a in args) or len(data) > ITEM_MAX_BYTES:
        raise BadItem("not a turn-end item")
    name = path.name.removesuffix(TAKEN)
    if not name.startswith(f"{kind}."):
        raise BadItem("its name does not match its kind")
    return Item(name, kind, tuple(args), at)


@dataclass
class TurnEndDrain:
    """The drain: ``tick`` once per ``POLL_S`` from ``run`` (the server's thread)."""

    home: Home
    log: Callable[[str], None]
    workers: int = WORKERS
    clock: Callable[[], float] = time.time
    _pool: ThreadPoolExecutor | None = None
    _running: dict[str, Future[bool]] = field(default_factory=dict)
    _settling: dict[str, _Settling] = field(default_factory=dict)
    done: int = 0
    """Items finished since the start (tests and the log read it)."""

    @property
    def folder(self) -> Path:
        return own_dir(spool_dir(self.home.run_dir))

    def run(self, stop: threading.Event, poll_s: float = POLL_S) -> None:
        """Look at once (what a killed predecessor left), then every ``poll_s``."""
        self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="turn-end")
        try:
            while True:
                try:
                    self.tick()
                except Exception as exc:  # never end the drain: the next look retries
                    self.log(f"turn-end drain: {shown(exc)}")
                if stop.wait(poll_s):
                    break
        finally:
            self._pool.shutdown(wait=False, cancel_futures=True)

    def tick(self) -> int:
        """One look: beat, finish what ended, claim and start what waits; returns the
        number of items started."""
        folder = self.folder
        beat = folder / BEAT_NAME
        try:
            os.utime(beat)
        except FileNotFoundError:
            os.close(os.open(beat, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600))
        self._reap(folder)
        started = 0
        names = sorted(os.listdir(folder))
        waiting = {n for n in names if not n.startswith(".") and not n.endswith(TAKEN)}
        for entry in names:
            if entry.startswith("."):
                if entry != BEAT_NAME:
                    self._sweep_tmp(folder / entry)
                continue
            name = entry.removesuffix(TAKEN)
            if name in self._running:
                continue
            if entry.endswith(TAKEN) and name in waiting:
                continue  # a newer item of this name replaces the one left claimed
            if name in self._settling and name not in waiting:
                self._retry(folder, name)
                continue
            self._settling.pop(name, None)
            taken = folder / (name + TAKEN)
            if not entry.endswith(TAKEN):
                try:
                    os.replace(folder / name, taken)
                except FileNotFoundError:
                    continue
            try:
                item = read_item(taken)
            except BadItem as exc:
                self.log(f"turn-end item {shown(name)} removed: {exc}")
                taken.unlink(missing_ok=True)
                continue
            self._start(folder, item)
            started += 1
        return started

    # ------------------------------------------------------------------ internals

    def _start(self, folder: Path, item: Item, settling: _Settling | None = None) -> None:
        if item.kind == ATTENTION:
            (folder / (item.name + TAKEN)).unlink(missing_ok=True)  # at most once
            if self.clock() - item.at > ATTENTION_STALE_S:
                return
        state = settling or _Settling(item)
        if self._pool is None:  # a test's single tick: run here
            future: Future[bool] = Future()
            try:
                future.set_result(self._work(state))
            except Exception as exc:
                future.set_exception(exc)
        else:
            future = self._pool.submit(self._work, state)
        self._running[item.name] = future
        self._settling[item.name] = state

    def _retry(self, folder: Path, name: str) -> None:
        state = self._settling[name]
        if self.clock() >= state.due:
            self._start(folder, state.item, state)

    def _reap(self, folder: Path) -> None:
        for name, future in list(self._running.items()):
            if not future.done():
                continue
            del self._running[name]
            state = self._settling[name]
            item = state.item
            try:
                finished = future.result()
            except Exception as exc:  # each piece of work's own backstop redoes it
                finished = True
                self.log(f"turn-end {item.kind} {shown(item.name)} failed: {shown(exc)}")
            if not finished:
                state.due = self.clock() + USAGE_RETRY_S
                continue
            del self._settling[name]
            if item.kind != ATTENTION:
                (folder / (name + TAKEN)).unlink(missing_ok=True)
            self.done += 1

    def _sweep_tmp(self, path: Path) -> None:
        with contextlib.suppress(OSError):
            if path.name.endswith(".tmp") and \
                    self.clock() - os.lstat(path).st_mtime > TMP_STALE_S:
                path.unlink()

    def _work(self, state: _Settling) -> bool:
        """Run one item; False: a usage read still settling (looked at again soon)."""
        item = state.item
        args = item.args
        if item.kind == USAGE:
            return self._usage(state)
        if item.kind == STOP and len(args) == 2:
            from core.hooks.stop_worker import run_waiting_work

            run_waiting_work(self.home, args[0], args[1])
        elif item.kind == KICK and len(args) == 1:
            self._kick(args[0])
        elif item.kind == CHANGES and len(args) == 1:
            from core.review.changes import refresh_frame

            refresh_frame(self.home, args[0])
        elif item.kind == EVIDENCE and len(args) == 4:
            from core.evidence.worker import run

            run(args[0], args[1], args[2], args[3] or None, home=self.home)
        elif item.kind == ATTENTION and len(args) == 2:
            self._attention(args[0], args[1])
        else:
            raise BadItem(f"{len(args)} argument(s) for a {item.kind} item")
        return True

    def _usage(self, state: _Settling) -> bool:
        """One read of the turn's usage; False while its turn's lines may still come."""
        from core.usage import worker

        args = state.item.args
        if len(args) not in (4, 5):
            raise BadItem(f"{len(args)} argument(s) for a usage item")
        key, provider, source, turn_id = args[:4]
        settle = args[4:] == (worker.SETTLE,) and bool(turn_id) and worker.usable_source(source)
        home = self.home

        def skipped(count: int, reason: str) -> None:
            self.log(f"usage of session {key}: skipped {count} unreadable line(s) of "
                     f"{shown(source)} (first: {reason}); the lines after them were read")

        def mark(session_key: str, row: UsageRow, now: int) -> None:
            # the rows are stored before this runs: a busy registry must not lose the
            # limit, so it is kept and written at the next look
            state.unmarked = (session_key, row, now)
            worker.mark_limited(home, session_key, row, now)
            state.unmarked = None

        def read() -> list[UsageRow]:
            return worker.read_usage(home.root, key, provider, source, turn_id or None,
                                     mark=mark, skipped=skipped)

        over = self.clock() >= state.item.at + worker.SETTLE_S
        if state.unmarked is not None:
            try:
                mark(*state.unmarked)
            except Exception:
                if over:
                    raise
                return False
            return True
        if not settle:
            try:
                read()
            except Exception:
                if over or state.unmarked is None:
                    raise
                return False
            return True
        try:
            size = os.stat(source).st_size
            if size != state.size:
                rows = read()
                state.size = size
                if rows:
                    return True
        except Exception:
            if over:
                raise
            return False
        return over or worker.turn_recorded(home.root, key, turn_id)

    def _kick(self, frame_id: str) -> None:
        deliver_for_frame(self.home, frame_id)

    def _attention(self, frame_id: str, event: str) -> None:
        from core.config.registry import open_current
        from core.hooks.attention import publish_change

        opened = open_current(self.home, readonly=True)
        try:
            publish_change(opened, frame_id, event)
        finally:
            opened.conn.close()


def deliver_for_frame(home: Home, frame_id: str) -> None:
    """Type the pending messages of the frame's project now that its agent stopped: the
    server's turn-end step, and the detached deliverer's when no server runs
    (``core.apps.workers kick``)."""
    from core.broker.membership import deliver_pending
    from core.engine.open import open_engine

    engine = open_engine(home, with_stage=True)
    try:
        row = engine.conn.execute("SELECT project_id FROM frames WHERE frame_id = ?",
                                  (frame_id,)).fetchone()
        if row is not None:
            deliver_pending(engine, row["project_id"])
    finally:
        engine.conn.close()


__all__ = ["BadItem", "Item", "POLL_S", "TurnEndDrain", "deliver_for_frame", "read_item"]
