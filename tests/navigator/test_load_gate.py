"""Coalescing: a burst of registry changes costs one load per gap, never loses the last.

The Refresher runs here against a recording host and a hand-moved clock: no
Textual, no threads, so the order of loads and timers is exact.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from navigator.jobs import Group, Job
from navigator.loading import Loaded, LoadGate, Refresher


def test_gate_waits_for_a_commit_to_settle() -> None:
    gate = LoadGate(gap=0.4, settle=0.03)
    gate.mark(10.0)
    gate.mark(10.01)  # without settle_max, a later event does not push the load back
    assert gate.delay(10.01) == 10.03 - 10.01


def test_gate_waits_for_a_requests_commits_to_stop_but_not_for_ever() -> None:
    gate = LoadGate(gap=0.4, settle=0.03, settle_max=0.15)
    gate.mark(10.0)
    gate.mark(10.02)  # a focus commits again 20 ms later: wait for quiet after it
    assert gate.delay(10.02) == pytest.approx(0.03)
    for moment in (10.04, 10.06, 10.08, 10.1, 10.12, 10.14):  # a steady stream
        gate.mark(moment)
    assert gate.delay(10.14) == pytest.approx(0.01)  # 150 ms after the first at most


def test_gate_loads_at_once_then_waits_out_the_gap() -> None:
    gate = LoadGate(gap=0.4)
    assert gate.delay(0.0) is None  # nothing wanted
    gate.mark(0.0)
    assert gate.delay(0.0) == 0.0
    gate.started(0.0)
    gate.mark(0.05)  # a change while the load runs
    assert gate.delay(0.1) is None  # one load at a time
    gate.ended()
    assert gate.delay(0.1) == 0.4 - 0.1
    assert gate.delay(0.5) == 0.0


def _stream(gate: LoadGate, until: float, every: float) -> list[float]:
    """Changes every ``every`` s until ``until``; each load takes 10 ms. Load starts."""
    starts: list[float] = []
    now, next_change = 0.0, 0.0
    while now <= until:
        if next_change <= now:
            gate.mark(now)
            next_change += every
        delay = gate.delay(now)
        if delay == 0.0:
            gate.started(now)
            starts.append(round(now, 3))
            gate.ended()
        now = round(now + 0.01, 3)
    return starts


def test_a_sustained_stream_spaces_loads_out_to_the_longest_gap() -> None:
    gate = LoadGate(gap=0.4, max_gap=1.2)
    starts = _stream(gate, until=6.0, every=0.2)  # 5 changes a second, as the storm
    gaps = [round(b - a, 3) for a, b in zip(starts, starts[1:], strict=False)]
    # a burst's first loads keep the short gap (the loop steps 10 ms) ...
    assert gaps[:3] == pytest.approx([0.4, 0.4, 0.4], abs=0.011)
    # ... then the stream has gone on for three loads: the longest gap from there on
    assert gaps[3:] and all(1.19 <= gap <= 1.211 for gap in gaps[3:])
    assert starts[0] == 0.0  # the first change of the stream loads at once


def test_a_change_after_a_quiet_spell_loads_at_once_with_the_short_gap_again() -> None:
    gate = LoadGate(gap=0.4, settle=0.03, max_gap=1.2)
    _stream(gate, until=3.0, every=0.2)
    assert gate.current_gap == pytest.approx(1.2)
    gate.started(gate.last_start + 1.2)  # the stream's trailing load
    gate.ended()
    gate.mark(10.0)  # quiet since 3 s
    assert gate.delay(10.0) == pytest.approx(0.03)  # only the settle: no gap left to wait out
    gate.started(10.03)
    gate.ended()
    gate.mark(10.1)  # a second change soon after is held by the short gap only
    assert abs(gate.delay(10.1) - (10.03 + 0.4 - 10.1)) < 1e-9


def test_a_storm_that_stopped_shows_its_last_change_after_a_quiet_spell() -> None:
    gate = LoadGate(gap=0.4, max_gap=1.2, quiet=0.25)
    starts = _stream(gate, until=6.0, every=0.2)  # the storm: loads 1.2 s apart, as above
    assert all(1.19 <= b - a <= 1.211 for a, b in zip(starts[3:], starts[4:], strict=False))
    t0 = gate.last_start + 1.2
    gate.started(t0)  # the storm's load, taken at its gap
    gate.ended()
    assert gate.current_gap == pytest.approx(1.2)
    gate.mark(t0 + 0.3)  # changes go on ...
    assert gate.delay(t0 + 0.3) == pytest.approx(0.25)  # ... so the next check is 0.25 s on
    gate.mark(t0 + 0.5)
    assert gate.delay(t0 + 0.5) == pytest.approx(0.25)
    # ... the storm stops: quiet for 0.25 s loads, 0.45 s before its gap would have
    assert gate.delay(t0 + 0.75) == 0.0
    # a storm that never pauses still loads at its gap
    gate.mark(t0 + 1.1)
    assert gate.delay(t0 + 1.1) == pytest.approx(0.1)


def test_without_quiet_a_storms_last_change_waits_out_the_storm_gap() -> None:
    gate = LoadGate(gap=0.4, max_gap=1.2)
    _stream(gate, until=6.0, every=0.2)
    assert gate.delay(6.0) == pytest.approx(gate.last_start + 1.2 - 6.0)


@dataclass
class _Timer:
    delay: float
    callback: Callable[[], Any]

    def cancel(self) -> None:
        raise AssertionError("no timer is cancelled while the app runs")


@dataclass
class _Client:
    stamp: tuple[tuple[int, int], ...] = ((1, 1),)

    def change_stamp(self) -> tuple[tuple[int, int], ...]:
        return self.stamp


@dataclass
class _Host:
    """Records the jobs and timers the refresher asks for; runs nothing by itself."""

    client: _Client = field(default_factory=_Client)
    reconcile_interval: float = 0
    jobs: list[tuple[Callable[[], Any], Job[Any]]] = field(default_factory=list)
    timers: list[_Timer] = field(default_factory=list)
    shown: list[Loaded] = field(default_factory=list)

    def start_job(self, work: Callable[[], Any], group: Group, job: Job[Any], *,
                  exclusive: bool = False, name: str = "") -> None:
        assert group is Group.LOAD
        self.jobs.append((work, job))

    def group_busy(self, group: Group) -> bool:
        return False

    def inbox_wanted(self) -> str | None:
        return None

    def show_loaded(self, loaded: Loaded, layout: object) -> None:
        self.shown.append(loaded)

    def warn(self, text: str, title: str, *, error: bool = False) -> None:
        raise AssertionError(text)

    def start_load(self, work: Callable[[], Any], job: Job[Any]) -> None:
        self.jobs.append((work, job))

    def after(self, delay: float, callback: Callable[[], object]) -> _Timer:
        timer = _Timer(delay, callback)
        self.timers.append(timer)
        return timer


def _finish(host: _Host, version: int) -> None:
    """The oldest load's worker ends with a state of this version."""
    _work, job = host.jobs.pop(0)
    job.done((None, Loaded(state=None, version=version, inbox=[],  # type: ignore[arg-type]
                           inbox_problem=None)))


def test_a_burst_costs_two_loads_and_the_last_change_is_shown() -> None:
    now = [0.0]
    host = _Host()
    refresher = Refresher(host, gap=0.4, settle=0, clock=lambda: now[0])  # type: ignore[arg-type]
    refresher.changed()  # the first commit of a burst loads at once
    assert len(host.jobs) == 1
    for moment in (0.05, 0.1, 0.15):  # three more while it runs
        now[0] = moment
        refresher.changed()
    assert len(host.jobs) == 1 and not host.timers
    now[0] = 0.2
    _finish(host, version=1)
    assert [loaded.version for loaded in host.shown] == [1]
    # the trailing load waits out the gap from the first load's start, then runs
    assert len(host.timers) == 1 and abs(host.timers[0].delay - 0.2) < 1e-9
    assert not host.jobs
    now[0] = 0.4
    host.timers.pop().callback()
    assert len(host.jobs) == 1
    _finish(host, version=2)
    assert [loaded.version for loaded in host.shown] == [1, 2]
    assert refresher.loads == 2 and not host.timers and not host.jobs


def test_a_change_after_a_quiet_spell_loads_at_once() -> None:
    now = [0.0]
    host = _Host()
    refresher = Refresher(host, gap=0.4, settle=0, clock=lambda: now[0])  # type: ignore[arg-type]
    refresher.changed()
    _finish(host, version=1)
    now[0] = 5.0
    refresher.changed()
    assert len(host.jobs) == 1 and not host.timers


def test_the_tick_loads_only_when_the_stamp_moved() -> None:
    now = [0.0]
    host = _Host()
    refresher = Refresher(host, gap=0.4, settle=0, clock=lambda: now[0])  # type: ignore[arg-type]
    refresher.poll()  # the first tick reads
    _finish(host, version=1)
    for tick in range(1, 5):
        now[0] = tick
        refresher.poll()
    assert not host.jobs  # the stamp stood still
    host.client.stamp = ((2, 2),)
    now[0] = 10.0
    refresher.poll()
    assert len(host.jobs) == 1


@dataclass
class _WatchedClient(_Client):
    files: tuple[str, ...] = ()

    def change_files(self) -> tuple[str, ...]:
        return self.files


async def test_a_pending_load_stops_reading_the_watch_until_it_starts(tmp_path: Path) -> None:
    """One wake per load: every WAL page a commit appends is an event, and a navigator
    woken by each ran ahead of the writer (issue 12); while a load is pending the
    events are left in the kernel's queue and looked at only when a timer fires."""
    wal = tmp_path / "registry.sqlite3-wal"
    wal.write_bytes(b"")
    now = [0.0]
    host = _Host(client=_WatchedClient(files=(str(wal),)))
    refresher = Refresher(host, gap=0.4, settle=0.03, clock=lambda: now[0])  # type: ignore[arg-type]

    async def commit() -> None:
        with wal.open("ab") as handle:
            handle.write(b"page")
        await asyncio.sleep(0.05)  # the event loop reads the watch if it is reading

    assert refresher.watch()
    try:
        refresher.changed()  # a first load, after the settle
        now[0] = 0.03
        host.timers.pop().callback()
        _finish(host, version=1)
        now[0] = 0.1
        await commit()  # wakes: a load is due once the gap from the first one ends
        assert refresher.wakes == 1 and len(host.timers) == 1
        for _ in range(5):  # the rest of the commit's pages, and more commits
            await commit()
        assert refresher.wakes == 1  # left in the queue while the load is pending
        now[0] = 0.45
        host.timers.pop().callback()  # the gap ended: the load starts
        assert len(host.jobs) == 1 and refresher.loads == 2
        await commit()  # during the load: wakes again, once
        await commit()
        assert refresher.wakes == 2
        now[0] = 0.55
        _finish(host, version=2)
        assert len(host.timers) == 1  # the change during the load gets its own load
    finally:
        refresher.stop_watching()
