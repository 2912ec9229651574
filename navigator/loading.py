"""What the navigator shows, kept current: one read of the state, its data_version
and the inbox (``read_state_async``: the registry's rows awaited on the event loop
through aiosqlite, the lock-taking checks in a thread), the
``LoadGate`` that coalesces bursts of commits, and the ``Refresher`` that decides
when to read (woken by a ``ChangeWatch``, or by its stat tick). It never reconciles:
the home's server does (``core.server.housekeeping``), and the navigator shows it.

The inbox is read for one view and may be unavailable without the state being
so: a missing or refusing broker becomes the panel's own line, never a failed load.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from core.apps.client import EngineClient
from core.model.errors import SwitchboardError
from core.platform.file_watch import ChangeWatch
from core.state.state_types import NavigatorState
from navigator.jobs import Group, Job, problem_text
from navigator.targeting import inbox_view_id
from navigator.ui_state import PaneLayout, UiStateStore

_T = TypeVar("_T")
#: Every this many poll ticks the navigator reads data_version even when no file moved
#: (a backstop against a commit that left size and mtime as they were: 5 s at 4/s).
FULL_CHECK_TICKS = 20
#: Seconds between two loads' starts when a change follows a load closely: the
#: second change of a burst is shown at most this long after it landed.
LOAD_GAP = 0.4
#: The gap once changes have kept coming for a while (``LoadGate.stream_loads`` loads
#: in a row each waited for the gap). A storm of hooks (5 a second across 200 agents,
#: each changing some badge every navigator shows) then costs every navigator about
#: one load a second instead of 2.5; a change after a quiet spell still loads at once.
LOAD_GAP_MAX = 1.2
#: Seconds without a change after which a storm's last change loads without waiting
#: out the rest of ``LOAD_GAP_MAX`` (never sooner than ``LOAD_GAP`` after the last
#: load): a storm that stopped shows its end within about twice this, not 1.2 s later.
STORM_QUIET = 0.25
#: Seconds a woken load waits after the latest file event: the rest of a commit's
#: events, and the next commits of a request that commits a few times in a row (a
#: focus commits four times within a few ms), arrive before the load instead of after it.
WAKE_SETTLE = 0.03
#: The longest a woken load waits for events to stop (a steady stream never starves it).
WAKE_SETTLE_MAX = 0.15
#: Seconds between stat ticks when a ``ChangeWatch`` wakes the navigator on change:
#: the tick is only the backstop then (a missed event, a registry reset).
WATCH_TICK = 2.0
#: Ticks between ``data_version`` reads with nothing seen moving, when watching (10 s).
WATCH_FULL_CHECK_TICKS = 5


@dataclass(frozen=True)
class Loaded:
    """A new NavigatorState and the inbox of the view it was read for."""

    state: NavigatorState
    version: int
    inbox: list[Any] | None
    inbox_problem: str | None


async def read_state_async(client: EngineClient, wanted_view: str | None, *,
                           known: int | None = None) -> Loaded | None:
    """The state, or None when the client's data_version still equals ``known``; read
    on the navigator's event loop: the change check and the inbox (which take the
    client's lock, or read the broker) in a thread, the registry's rows awaited
    through aiosqlite (``EngineClient.state_async``)."""
    version = await asyncio.to_thread(client.data_version)
    if known is not None and version == known:
        return None
    state = await client.state_async()
    inbox, problem = await asyncio.to_thread(read_inbox, client, state, wanted_view)
    return Loaded(state, version, inbox, problem)


def read_inbox(client: EngineClient, state: NavigatorState,
               wanted_view: str | None) -> tuple[list[Any] | None, str | None]:
    """The messages for the wanted view (else the first live one), or why there are none."""
    view_id = inbox_view_id(state, wanted_view)
    if view_id is None:
        return [], None
    try:
        return list(client.inbox(view_id)), None
    except (NotImplementedError, ImportError, AttributeError):
        return None, "inbox unavailable: the broker is not set up"
    except SwitchboardError as exc:
        return None, f"inbox unavailable: {exc.message}"


@dataclass
class LoadGate:
    """Turns change signals into loads: one at a time, starts at least a gap apart.

    A signal while a load runs, or within the gap of the last start, is kept
    (``dirty``) and served by one later load, so a burst of commits costs one
    load per gap and its last change is never dropped (the trailing edge). A
    woken load also waits until signals have stopped for ``settle`` (at most
    ``settle_max`` after the first): one commit's WAL writes arrive as several
    events, and a request commits a few times in a row; a load between them
    reads twice.

    The gap adapts: it is ``gap`` while changes come in short bursts (a person's
    push or focus commits a few times within a second, and each step shows within
    ``gap``), and becomes ``max_gap`` once ``stream_loads`` loads in a row had to
    wait for it, i.e. changes have kept arriving faster than loads for a while (a
    storm of hooks). One change after a quiet spell loads after ``settle`` and
    puts the gap back to ``gap``. Within ``max_gap``, a storm that stopped (no
    signal for ``quiet``) loads once ``gap`` has passed: its last change is not
    held for the whole storm gap.
    """

    gap: float
    settle: float = 0.0
    max_gap: float | None = None
    settle_max: float | None = None  # None: ``settle`` after the first signal only
    quiet: float | None = None  # None: a storm's last change waits out ``max_gap``
    dirty: bool = False
    busy: bool = False
    last_start: float = -math.inf
    dirty_since: float = -math.inf
    last_signal: float = -math.inf
    stream_loads: int = 3
    held: int = 0  # loads in a row that waited for the gap

    @property
    def current_gap(self) -> float:
        if self.max_gap is not None and self.held >= self.stream_loads:
            return max(self.gap, self.max_gap)
        return self.gap

    def mark(self, now: float) -> None:
        """A change was signalled; the first since the last load starts the settle time,
        and each one restarts it (up to ``settle_max`` after the first)."""
        if not self.dirty:
            self.dirty, self.dirty_since = True, now
        self.last_signal = now

    def delay(self, now: float) -> float | None:
        """Seconds until the next load may start; None when none is wanted or one runs."""
        if not self.dirty or self.busy:
            return None
        settled = self.dirty_since + self.settle
        if self.settle_max is not None:  # quiet for ``settle``, within ``settle_max``
            settled = max(settled, min(self.last_signal + self.settle,
                                       self.dirty_since + self.settle_max))
        gap_end = self.last_start + self.current_gap
        if self.quiet is not None and self.current_gap > self.gap:
            gap_end = min(gap_end, max(self.last_start + self.gap, self.last_signal + self.quiet))
        return max(0.0, gap_end - now, settled - now)

    def started(self, now: float) -> None:
        # held back by the gap (its change came inside it): the stream goes on; a
        # change after a quiet spell starts the count again
        waited = self.dirty and self.dirty_since < self.last_start + self.current_gap
        self.held = self.held + 1 if waited else 0
        self.dirty, self.busy, self.last_start = False, True, now

    def ended(self) -> None:
        self.busy = False


@dataclass
class NewRecoveries:
    """Counts the open recoveries a state has that the last shown one did not.

    The home's server reconciles (``core.server.housekeeping``); a navigator only
    reads what it wrote, so every navigator can say it and none has to run anything.
    The first state sets what is known without a word (those were there before)."""

    known: set[tuple[str, str]] | None = None

    def count(self, state: NavigatorState) -> int:
        opened = {(r.host_id, r.recovery_id) for r in state.recoveries if r.state == "open"}
        known, self.known = self.known, opened
        return 0 if known is None else len(opened - known)


class RefreshHost(Protocol):
    """What the refresher needs from the app (narrow: the app imports this module)."""

    client: EngineClient

    def start_job(self, work: Callable[[], _T] | Callable[[], Coroutine[Any, Any, _T]],
                  group: Group, job: Job[_T], *,
                  exclusive: bool = False, name: str = "") -> None: ...

    def group_busy(self, group: Group) -> bool: ...

    def inbox_wanted(self) -> str | None: ...

    def memory_store(self) -> UiStateStore: ...

    def show_loaded(self, loaded: Loaded, layout: PaneLayout | None) -> None: ...

    def warn(self, text: str, title: str, *, error: bool = False) -> None: ...

    def start_load(self, work: Callable[[], _T] | Callable[[], Coroutine[Any, Any, _T]],
                   job: Job[_T]) -> None: ...

    def after(self, delay: float, callback: Callable[[], object]) -> Cancellable: ...


class Cancellable(Protocol):
    """A pending call (``asyncio.TimerHandle``)."""

    def cancel(self) -> None: ...


class Refresher:
    """Keeps the shown state current: a load worker only when a registry or broker file
    moved (the home's server reconciles tmux with the registry; this shows what it
    wrote, and says when new recoveries appear). A ``ChangeWatch``
    (``watch``) wakes it on change; without one, a few stats per tick notice it. Either
    way the ``LoadGate`` coalesces bursts, and every ``full_check_ticks`` ticks the
    data_version is read even when no file seemed to move (the backstop). Failures are
    said once per distinct problem."""

    def __init__(self, host: RefreshHost, *, gap: float = LOAD_GAP,
                 max_gap: float | None = LOAD_GAP_MAX, settle: float = WAKE_SETTLE,
                 settle_max: float | None = WAKE_SETTLE_MAX, quiet: float | None = STORM_QUIET,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._host = host
        self.data_version: int | None = None
        self.ticks = 0
        self.loads = 0
        self.full_check_ticks = FULL_CHECK_TICKS
        self.gate = LoadGate(gap, settle, max_gap, settle_max, quiet)
        self._clock = clock
        self._timer: Cancellable | None = None
        self._stopped = False
        self._watch: ChangeWatch | None = None
        self._reading = False  # the watch's descriptor is on the event loop
        self.wakes = 0  # times the watch woke this navigator (the tests count them)
        self._stamp: tuple[tuple[int, int], ...] | None = None
        self._load_problem: str | None = None

    # ------------------------------------------------------------------ waking

    def watch(self) -> bool:
        """Wake on change (on the running event loop); False where no watch can be set
        up, and the caller keeps its stat tick as the only way to notice."""
        try:
            files = self._host.client.change_files()
        except Exception:  # a client without files (a stub): poll instead
            return False
        watch = ChangeWatch.open(files)
        if watch is None:
            return False
        self._watch = watch
        self._read_watch()
        self.full_check_ticks = WATCH_FULL_CHECK_TICKS
        return True

    def stop(self) -> None:
        """The app is closing: no more loads, timers or wakes."""
        self._stopped = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self.stop_watching()

    def stop_watching(self) -> None:
        self._pause_watch()
        watch, self._watch = self._watch, None
        if watch is not None:
            watch.close()

    def _read_watch(self) -> None:
        if self._watch is not None and not self._reading and not self._stopped:
            asyncio.get_running_loop().add_reader(self._watch.fileno(), self._woken)
            self._reading = True

    def _pause_watch(self) -> None:
        """Stop reading the watch until the pending load starts.

        Every page SQLite appends to the WAL is an inotify event, and every event
        woke every navigator, each of which then ran ahead of the writer on two
        cores: a focus's commits waited ~8 ms in the run queue at 20 views,
        a hook's commit likewise. One wake per load is all a navigator needs: the
        events that come while a load is pending only say again that it is.
        """
        if self._watch is not None and self._reading:
            asyncio.get_running_loop().remove_reader(self._watch.fileno())
            self._reading = False

    def _resume_watch(self) -> None:
        """A load starts: what the paused watch holds is older than the load's read
        (which sees it), so it is dropped; later events wake the navigator again."""
        if self._watch is not None and not self._reading:
            self._watch.drain()
            self._read_watch()

    @property
    def watching(self) -> bool:
        return self._watch is not None

    def _woken(self) -> None:
        self.wakes += 1
        if self._watch is not None and self._watch.drain():
            self.changed()
        if self.gate.dirty:
            self._pause_watch()

    def _rewatch_if_moved(self) -> None:
        """A registry reset moves the files to a new generation: watch those instead."""
        watch = self._watch
        try:
            moved = watch is not None and self._host.client.change_files() != watch.files
        except Exception:
            return
        if moved:
            self.stop_watching()
            self.watch()

    # ------------------------------------------------------------------ loads

    def poll(self) -> None:
        """The stat tick: the only notice without a watch, the backstop with one."""
        self.ticks += 1
        self._rewatch_if_moved()
        if self.gate.dirty:
            self._schedule()  # a failed load's retry
        stamp = self._change_stamp()
        if (stamp is not None and stamp == self._stamp and self.data_version is not None
                and self.ticks % self.full_check_ticks):
            return
        self._stamp = stamp
        self.changed()

    def changed(self) -> None:
        """Something may have changed: load now, or once the gate allows."""
        self.gate.mark(self._clock())
        self._schedule()

    def reload_soon(self) -> None:
        """Read the state again even if data_version did not move (the inbox follows a
        newly chosen view)."""
        self.data_version = None
        self.changed()

    def _schedule(self) -> None:
        delay = self.gate.delay(self._clock())
        if delay is None or self._timer is not None or self._stopped:
            return
        if delay > 0:
            self._timer = self._host.after(delay, self._timer_fired)
        else:
            self.load(first=False)

    def _timer_fired(self) -> None:
        self._timer = None
        if self._watch is not None and not self._reading and self._watch.drain():
            # events while paused: the settle restarts from now (up to its longest)
            self.gate.mark(self._clock())
        self._schedule()

    def _change_stamp(self) -> tuple[tuple[int, int], ...] | None:
        """The client's file stamp; None (always load) when it cannot be read."""
        try:
            return self._host.client.change_stamp()
        except Exception:  # a broken stamp must never stop loading
            return None

    def load(self, first: bool) -> None:
        """Rebuild state only when the registry (or broker) changed; the first load also
        reads what the pane remembers."""
        host = self._host
        self.gate.started(self._clock())
        self.loads += 1
        self._resume_watch()
        # what this load will see: the next tick compares against it, so a woken load
        # is not followed by a tick's load of the same commit
        self._stamp = self._change_stamp()

        async def load() -> tuple[PaneLayout | None, Loaded | None]:
            layout = host.memory_store().read_layout() if first else None
            known = None if first else self.data_version
            return layout, await read_state_async(host.client, host.inbox_wanted(),
                                                  known=known)

        job = Job(self._loaded, self._load_failed)
        if first:  # a Textual worker, which a test (or the app's exit) can wait for
            host.start_job(load, Group.LOAD, job)
        else:  # every later load: the lean path (no Worker, no state messages)
            host.start_load(load, job)

    def _loaded(self, outcome: tuple[PaneLayout | None, Loaded | None]) -> None:
        self.gate.ended()
        if self._stopped:
            return
        layout, loaded = outcome
        if loaded is not None:
            self.show(loaded, layout)
        self._schedule()  # what moved while it ran

    def show(self, loaded: Loaded, layout: PaneLayout | None = None) -> None:
        """A load's (or a request's) new state goes on screen."""
        self.data_version = loaded.version
        self._load_problem = None
        self._host.show_loaded(loaded, layout)

    def _load_failed(self, error: Exception) -> None:
        self.gate.ended()
        if self._stopped:
            return
        self.gate.mark(self._clock())  # the next tick retries (not at once: no busy loop)
        problem = problem_text(error)
        if problem == self._load_problem:
            return  # the poll retries every tick; say it once per distinct problem
        self._load_problem = problem
        self._host.warn(f"Could not read the registry: {problem}. The navigator keeps "
                        "the last state and retries; check `switchboard state navigator "
                        "--json`.", "Refresh failed", error=True)
