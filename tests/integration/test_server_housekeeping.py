"""The home's server does what navigators used to: with no navigator running it finds a
dead agent pane, and it exits once the home's tmux server is gone. kill -9 of the server
in the middle of its reconcile loses nothing and types nothing twice: the next pass
(or any reconcile) finishes what it left, and the chaos checks hold.

Each server here is a real process of the test's own home (``core.server.start``), or
``serve`` on a thread where the test must watch it end; each test stops what it
started.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.config.home import Home
from core.providers import agent_http
from core.server.main import serve, stop_server
from core.server.start import ensure_running
from tests.integration.journey_env import tmux
from tests.integration.test_chaos import Chaos
from tests.integration.transitions_env import home_of, open_stage_engine, pane_of
from tests.waiting import retry_until

pytestmark = pytest.mark.tmux

SEED = int(os.environ.get("SWITCHBOARD_CHAOS_SEED", "20261206"))
KILLS_PER_FAULT = 4


@pytest.fixture
def fast_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Home]]:
    """Servers started here pass every 0.2 s; every home listed is stopped at the end."""
    monkeypatch.setenv("SWITCHBOARD_RECONCILE_INTERVAL", "0.2")
    monkeypatch.setenv("SWITCHBOARD_PARK_AFTER", "off")
    homes: list[Home] = []
    yield homes
    for home in homes:
        with contextlib.suppress(Exception):
            stop_server(home.run_dir)


def _live(engine_root: Path, frame_id: str) -> bool:
    """Whether the registry still has a live pane for the frame (a fresh read)."""
    engine = open_stage_engine(engine_root)
    try:
        return pane_of(engine, frame_id) is not None
    finally:
        engine.conn.close()


def _started(home: Home) -> agent_http.ServerInfo:
    """A server of this test's knobs: one a launch started (agents' tools over HTTP)
    is stopped first."""
    stop_server(home.run_dir)
    info = ensure_running(home)
    assert info is not None, "a server was started behind the test's back"
    return info


def _killed(home: Home, info: agent_http.ServerInfo) -> None:
    """kill -9 of the server process alone, as an OOM killer or a crash would; the tmux
    client a pass may have running finishes its batch (it is not the server)."""
    os.kill(info.pid, signal.SIGKILL)
    assert retry_until(lambda: not agent_http.lock_held(home.run_dir), 10)
    time.sleep(0.3)


def test_the_server_finds_a_dead_agent_with_no_navigator(
        tmp_path: Path, tmux_socket: Path, fast_server: list[Home]) -> None:
    chaos = Chaos(tmp_path, tmux_socket)
    home = home_of(tmp_path)
    fast_server.append(home)
    stop_server(home.run_dir)  # a launch's server (the agent tools over HTTP)
    shown = chaos.active()
    pane = pane_of(chaos.engine, shown)
    tmux(tmux_socket, "kill-pane", "-t", str(pane))
    time.sleep(1.0)
    assert _live(tmp_path, shown)  # nothing reconciles: no navigator, no server
    _started(home)
    assert retry_until(lambda: not _live(tmp_path, shown), 30)
    chaos.check("found_by_the_server", counted=False)


def test_the_server_exits_once_the_homes_tmux_server_is_gone(
        tmp_path: Path, tmux_socket: Path, fast_server: list[Home]) -> None:
    chaos = Chaos(tmp_path, tmux_socket)
    chaos.engine.conn.close()
    home = home_of(tmp_path)
    stop_server(home.run_dir)  # a launch's server (the agent tools over HTTP)
    passes: list[object] = []
    ended: list[int] = []
    thread = threading.Thread(target=lambda: ended.append(serve(
        home.run_dir, home=home, interval=0.2, tmux_gone_s=1.0, on_pass=passes.append)),
        daemon=True)
    thread.start()
    assert retry_until(lambda: len(passes) >= 3, 30)
    time.sleep(3.0)
    assert thread.is_alive()  # tmux is up: it stays
    tmux(tmux_socket, "kill-server")
    assert retry_until(lambda: not thread.is_alive(), 15)
    assert ended == [0]
    log = (home.run_dir / "server" / "server.log").read_text()
    assert "the home's tmux server has been gone for 1 s: exiting" in log


@pytest.mark.timeout(400)
def test_kill_9_of_the_server_during_reconcile_loses_nothing(
        tmp_path: Path, tmux_socket: Path, fast_server: list[Home],
        capsys: pytest.CaptureFixture[str]) -> None:
    """For each runtime fault, the server is killed with -9 at seeded random moments of
    its first pass, ``KILLS_PER_FAULT`` times; a kill counts as landed when the
    fault was not yet written (the pass had not reached its commit). Then one server
    runs to the end and writes it, and the chaos checks hold: a later reconcile
    finds the view ready or with a recovery that names its way out, tmux and the
    registry agree, no line was typed twice."""
    chaos = Chaos(tmp_path, tmux_socket)
    home = home_of(tmp_path)
    fast_server.append(home)
    rng = random.Random(SEED)
    window = 1.5  # seconds from the port file over which kills spread; then measured
    landed = total = 0
    for fault in ("pane_killed_in_main", "pane_killed_parked", "pane_killed_in_main"):
        engine = chaos.engine
        active = chaos.active()
        victim = active if fault == "pane_killed_in_main" else (
            chaos.world.workspace_id if active != chaos.world.workspace_id
            else str(chaos.world.child_id))
        tmux(tmux_socket, "kill-pane", "-t", str(pane_of(engine, victim)))
        for _ in range(KILLS_PER_FAULT):
            info = _started(home)
            time.sleep(rng.uniform(0.0, window))
            still = _live(tmp_path, victim)
            _killed(home, info)
            total += 1
            landed += still
        started = time.monotonic()
        _started(home)
        assert retry_until(lambda v=victim: not _live(tmp_path, v), 30)  # type: ignore[misc]
        window = max(0.2, time.monotonic() - started)
        stop_server(home.run_dir)
        chaos.check(f"server_kill9:{fault}")
        chaos.heal()
    with capsys.disabled():
        print(f"\nserver kill -9 (seed {SEED}): {total} kills, {landed} before the pass "
              f"wrote the fault; {chaos.tally.consistent} faults consistent")
    assert chaos.tally.failures == [] and chaos.tally.blocked == 0
    assert chaos.tally.consistent == 3
    assert landed >= KILLS_PER_FAULT  # at least a third of them landed mid-pass
