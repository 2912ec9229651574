"""One reconciler per host: the turn goes to one caller per interval, never two at once."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from core.reconcile.reconcile_turn import DUE_FRACTION, LOCK_NAME, STAMP_NAME, host_turn


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
