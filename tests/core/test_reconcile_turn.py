"""One reconciler per host: the turn goes to one caller per interval, never two at once."""

from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path

from core.reconcile.reconcile_turn import (
    DUE_FRACTION,
    HANDOVER_FRACTION,
    LOCK_NAME,
    STAMP_NAME,
    host_turn,
)


def test_one_turn_per_interval(tmp_path: Path) -> None:
    now = [1_000.0]
    clock = lambda: now[0]  # noqa: E731
    with host_turn(tmp_path, 10, clock=clock) as mine:
        assert mine
    with host_turn(tmp_path, 10, clock=clock) as mine:
        assert not mine  # just taken
    now[0] += 10 * DUE_FRACTION - 0.5
    with host_turn(tmp_path, 10, clock=clock) as mine:
        assert not mine
    now[0] += 1
    with host_turn(tmp_path, 10, clock=clock) as mine:
        assert mine
    assert os.stat(tmp_path / STAMP_NAME).st_mtime == now[0]
    assert oct(os.stat(tmp_path / LOCK_NAME).st_mode & 0o777) == "0o600"


def test_a_turn_in_progress_is_not_shared(tmp_path: Path) -> None:
    with host_turn(tmp_path, 0, clock=lambda: 0.0) as first:
        assert first
        with host_turn(tmp_path, 0, clock=lambda: 100.0) as second:
            assert not second  # due by time, but the first still reconciles
    with host_turn(tmp_path, 0, clock=lambda: 100.0) as third:
        assert third  # released on exit


def test_a_clock_that_went_back_does_not_stop_reconciling(tmp_path: Path) -> None:
    with host_turn(tmp_path, 10, clock=lambda: 5_000.0) as mine:
        assert mine
    with host_turn(tmp_path, 10, clock=lambda: 1_000.0) as mine:
        assert mine


def test_twenty_navigators_ticking_reconcile_once(tmp_path: Path) -> None:
    """20 threads (each its own open file, as 20 processes would) tick at once."""
    taken: list[int] = []
    start = threading.Barrier(20)

    def tick(index: int) -> None:
        start.wait()
        with host_turn(tmp_path / "run", 10) as mine:
            if mine:
                taken.append(index)

    threads = [threading.Thread(target=tick, args=(i,)) for i in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert len(taken) == 1


def test_the_turn_stays_with_a_live_holder_until_it_misses_one(tmp_path: Path) -> None:
    """So one navigator reconciles (and carries the tmux adapter), not each in turn."""
    now = [1_000.0]
    clock = lambda: now[0]  # noqa: E731
    other = subprocess.Popen(["sleep", "60"])
    try:
        with host_turn(tmp_path, 10, clock=clock, owner=other.pid) as mine:
            assert mine  # the other process's turn
        now[0] += 10  # due for its holder, not for this process
        with host_turn(tmp_path, 10, clock=clock) as mine:
            assert not mine
        with host_turn(tmp_path, 10, clock=clock, owner=other.pid) as mine:
            assert mine
        now[0] += 10 * HANDOVER_FRACTION  # the holder missed a turn by half an interval
        with host_turn(tmp_path, 10, clock=clock) as mine:
            assert mine
        assert (tmp_path / STAMP_NAME).read_text() == str(os.getpid())
        now[0] += 10
        with host_turn(tmp_path, 10, clock=clock, owner=other.pid) as mine:
            assert not mine  # now this process holds it
    finally:
        other.kill()
        other.wait()


def test_a_holder_that_exited_hands_the_turn_on_at_once(tmp_path: Path) -> None:
    gone = subprocess.Popen(["true"])
    gone.wait()
    now = [1_000.0]
    clock = lambda: now[0]  # noqa: E731
    with host_turn(tmp_path, 10, clock=clock, owner=gone.pid) as mine:
        assert mine
    now[0] += 10 * DUE_FRACTION
    with host_turn(tmp_path, 10, clock=clock) as mine:
        assert mine
