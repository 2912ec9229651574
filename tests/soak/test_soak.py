"""The short soak in `make test`: a seeded mix of work and faults over three views.

Three projects with live fake agents and real navigators; three phases of drawn
operations, each kind at least once (hooks, focus/back/push, messages, navigator
kills, navigator park and wake, kill -9 of a CLI engine and of an agent), and a
`tmux kill-server` followed by `switchboard restore` in the second phase. Every
phase must end with every view ready or with a runnable recovery, the registry
agreeing with tmux, no message typed twice and no process of the home without an
owner (the agent-tool host and the home's server, one of each at most, are the
home's own); at the end every message was delivered. The long run (30 minutes, flat
fds and navigator RSS) is ``tests.bench.bench_soak``.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.soak.driver import DRAWN, HOST_SERVICES, Soak

pytestmark = pytest.mark.tmux

SEED = 2025


@pytest.fixture
def soak(monkeypatch: pytest.MonkeyPatch) -> Iterator[Soak]:
    folder = Path(tempfile.mkdtemp(prefix="sbsoak-", dir="/tmp"))  # a short socket path
    monkeypatch.setenv("SWITCHBOARD_HOME", str(folder / "home"))
    monkeypatch.setenv("SWITCHBOARD_CONFIG", str(folder / "home" / "config.toml"))
    for name in ("TMUX", "TMUX_PANE", "SWITCHBOARD_VIEW_ID"):
        monkeypatch.delenv(name, raising=False)
    world = Soak(folder, SEED, views=3)
    try:
        yield world
    finally:
        world.close()
        shutil.rmtree(folder, ignore_errors=True)


def test_a_short_seeded_soak_leaves_nothing_behind(soak: Soak) -> None:
    soak.setup()
    report = soak.run(phases=3, seconds=None, ops_per_phase=5, server_kill_phases={2},
                      every_kind=True)
    assert report.problems == []
    assert report.restores == 1 and report.ops["server_kill"] == 1
    assert {kind for kind in DRAWN if report.ops[kind]} == set(DRAWN)  # each kind ran
    assert sum(report.ops[kind] for kind in set(DRAWN)) == 15
    assert report.messages_sent >= 1
    assert report.messages_delivered == report.messages_sent and report.typed_twice == 0
    for sample in report.samples:
        assert sample.orphans == (), sample.orphans
        for service in HOST_SERVICES:  # the home's server, one at most
            assert sum(service in p for p in sample.services) <= 1, sample.services
        assert sample.clients == 0
        assert len(sample.navigator_fds) + sample.navigators_asleep == 3  # running or parked
        assert all(fds > 0 for fds in sample.navigator_fds)
        assert sample.wal_bytes < 64 * 1024 * 1024
