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

from core.broker.membership import person_send
from core.config.home import Home
from core.engine.engine import Engine
from core.model.enums import Activity, ActivityReason
from core.model.notice_line import managed_line
from core.providers import agent_http
from core.server.main import serve, stop_server
from core.server.start import ensure_running
from storage.connection import write_transaction
from storage.operations import sessions as sessions_ops
from tests.integration.journey_env import tmux, type_line
from tests.integration.test_chaos import Chaos
from tests.integration.transitions_env import (
    build_world,
    home_of,
    open_stage_engine,
    pane_of,
    screen,
)
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
    is stopped first. An agent's turn-start hook may start one at the same moment
    (as it does after a kill): then that one is this round's. A stopping server
    holds its lock a moment after its port file went: the probe then waits."""
    stop_server(home.run_dir)
    found: list[agent_http.ServerInfo] = []

    def up() -> bool:
        info = ensure_running(home) or agent_http.running(home.run_dir)
        found[:] = [info] if info is not None else []
        return bool(found)

    assert retry_until(up, 20)
    return found[0]


def _killed(home: Home, info: agent_http.ServerInfo) -> None:
    """kill -9 of the server process alone, as an OOM killer or a crash would; the tmux
    client a pass may have running finishes its batch (it is not the server)."""
    os.kill(info.pid, signal.SIGKILL)

    def gone() -> bool:
        found = agent_http.running(home.run_dir)  # an agent's hook may start the next one
        return found is None or found.pid != info.pid

    assert retry_until(gone, 10)
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
        # A server running now (a launch's or a heal's, passing every 0.2 s) would find
        # the fault before the first kill, or while it stops in the first `_started`:
        # then no kill could land before the fault is written.
        stop_server(home.run_dir)
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
    # The kills are spread over the measured pass time, so about half land before the
    # fault is written; how many depends on the machine's load (3 of 12 on a quiet
    # one): at least one must have, or the test exercised nothing mid-pass.
    assert landed >= 1


def _activity(engine: Engine, frame_id: str, activity: Activity) -> None:
    """What the frame's hooks would record (``working`` at a prompt, ``ready`` at a Stop)."""
    conn = engine.conn
    key = conn.execute("SELECT current_session_key FROM frames WHERE frame_id = ?",
                       (frame_id,)).fetchone()[0]
    reason = ActivityReason.TURN_COMPLETE if activity is Activity.READY \
        else ActivityReason.UNKNOWN
    with write_transaction(conn) as tx:
        sessions_ops.record_activity(tx, key, activity=activity, reason=reason,
                                     runtime_presence="live", turn_id=None,
                                     provider_version=None, now=engine.now())


def _messages(broker: Path, ids: list[int]) -> dict[int, tuple[str, str | None]]:
    """message id -> (status, notified_at)."""
    import sqlite3

    conn = sqlite3.connect(f"file:{broker}?mode=ro", uri=True)
    try:
        return {i: tuple(conn.execute(  # type: ignore[misc]
            "SELECT status_state, notified_at FROM messages WHERE message_id = ?",
            (i,)).fetchone()) for i in ids}
    finally:
        conn.close()


def _undelivered(broker: Path, ids: list[int]) -> list[int]:
    """Never typed and not read: an agent that reads its messages after the first line
    takes the others with it (they complete without a line of their own)."""
    return [i for i, (state, notified) in _messages(broker, ids).items()
            if state != "completed" and notified is None]


def _typing(locks: Path) -> bool:
    """Whether a typist is between typing a line and stamping it (an attempt record)."""
    return any(f.is_file() and f.stat().st_size for f in locks.glob("*")) \
        if locks.is_dir() else False


@pytest.mark.timeout(400)
def test_kill_9_of_the_server_during_message_delivery_types_each_line_once(
        tmp_path: Path, tmux_socket: Path, fast_server: list[Home],
        capsys: pytest.CaptureFixture[str]) -> None:
    """The person's messages wait while the shown agent works; its Stop is recorded but
    its delivery worker is lost, so the server's pass types them. The server is killed
    with -9 at seeded random moments of its passes (an agent's turn-start hook starts
    the next one as it would); in the end every message reached the agent (read by
    it), no line was typed twice, and the one the server typed is stamped."""
    engine, world = build_world(tmp_path, tmux_socket, with_child=False, quiet=False)
    home = home_of(tmp_path)
    fast_server.append(home)
    child = world.workspace_id
    pane = str(pane_of(engine, child))
    type_line(tmux_socket, pane, "hello")  # a turn: its Stop makes the agent ready
    query = ("SELECT activity FROM provider_sessions WHERE session_key = (SELECT"
             " current_session_key FROM frames WHERE frame_id = ?)")
    assert retry_until(lambda: engine.conn.execute(query, (child,)).fetchone()[0] == "ready",
                       30)
    stop_server(home.run_dir)  # a launch's server: from here on, this test's servers
    _activity(engine, child, Activity.WORKING)
    sent = [person_send(engine, child, f"note number {n}") for n in range(3)]
    assert all(s.delivery.startswith("pending: its agent is working") for s in sent), sent
    ids = [s.message_id for s in sent]
    _activity(engine, child, Activity.READY)  # a Stop whose kick never ran
    broker = home.broker_path
    locks = broker.with_name(broker.name + ".locks")
    rng = random.Random(SEED)
    kills = mid_typing = before_done = 0
    for round_ in range(12):
        if not _undelivered(broker, ids):
            break
        left = _typing(locks)
        info = _started(home)
        # The first kill comes before a first pass can have typed (it imports the whole
        # reconcile and tmux stack first); the others anywhere in the next passes.
        time.sleep(rng.uniform(0.0, 0.2 if round_ == 0 else 2.5))
        typing, waiting = _typing(locks), bool(_undelivered(broker, ids))
        _killed(home, info)
        kills += 1
        mid_typing += typing and not left
        before_done += waiting
    _started(home)
    assert retry_until(lambda: not _undelivered(broker, ids), 60), (
        _undelivered(broker, ids), engine.conn.execute(query, (child,)).fetchone()[0],
        (home.run_dir / "server" / "server.log").read_text()[-2000:], screen(tmux_socket, pane))
    stop_server(home.run_dir)
    assert retry_until(lambda: all(state == "completed" for state, _ in
                                   _messages(broker, ids).values()), 60), _messages(broker, ids)
    shown = screen(tmux_socket, pane)
    found = _messages(broker, ids)
    assert found[ids[0]][1] is not None  # the first line was typed, and stamped
    for message_id in ids:
        lines = shown.count(managed_line(message_id, "person"))
        # A stamped message's line was typed exactly once. An unstamped one's at most
        # once: a typist killed between typing and stamping (the server's pass, or the
        # kick it runs for the agent's Stop) leaves its attempt record, so none types it
        # again, and a line that reached an agent which had already read the message
        # has nothing left to stamp (``storage.broker_witness``).
        assert lines == 1 if found[message_id][1] is not None else lines <= 1, \
            (message_id, shown)
    with capsys.disabled():
        print(f"\nserver kill -9 during delivery (seed {SEED}): {kills} kills, {before_done} "
              f"while lines still waited, {mid_typing} between typing a line and stamping it")
    assert before_done >= 1
