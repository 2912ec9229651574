"""Remote hosts followed live: real sshd on loopback, several homes as hosts.

Each remote host is a Switchboard home behind its own sshd (``remote_hosts``);
the local home follows them as the navigator does (``ensure_followers`` while
an interest lock is held): one long-lived ssh per host streaming HostState.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.config.home import Home
from core.hooks.attention_counts import read_counts
from core.model.session_enums import Activity, ActivityReason
from core.remote.follower import NOT_FOLLOWED, OFFLINE_AFTER_S
from core.remote.interest import ensure_followers, follower_running, hold_interest
from core.state.state_builder import build_navigator_state
from tests.integration.journey_env import make_live_engine, tmux
from tests.integration.remote_hosts import (
    Hosts,
    add_agents,
    descendants,
    make_hosts,
    plain_home,
    set_activity,
)
from tests.integration.test_attention import PtyClient
from tests.waiting import retry_until


def _cache(engine, name: str) -> tuple | None:
    row = engine.conn.execute("SELECT reachability, bounded_error, content_hash FROM"
                              " host_state_cache WHERE remote_name = ?", (name,)).fetchone()
    return tuple(row) if row is not None else None


def _frame_activity(engine, frame_id: str) -> str | None:
    state = build_navigator_state(engine)
    for project in state.projects:
        for frame in project.frames:
            if frame.frame_id == frame_id:
                return frame.activity.value
    return None


def _ssh_children(pid: int) -> list[int]:
    found = []
    for child in descendants(pid):
        try:
            with open(f"/proc/{child}/cmdline", "rb") as handle:
                argv = handle.read().split(b"\0")
        except OSError:
            continue
        if any(word.endswith(b"ssh") for word in argv[:2]):
            found.append(child)
    return found


def _reap(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    for pid in pids:
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass


@pytest.fixture
def two_hosts() -> Iterator[Hosts]:
    def build(index: int, host) -> None:
        plain_home(("gamma", "delta"))(index, host)
    hosts = make_hosts(2, build)
    try:
        yield hosts
    finally:
        hosts.close()


def _local(tmp_path: Path, tmux_socket: Path, hosts: Hosts, monkeypatch):
    monkeypatch.setenv("SWITCHBOARD_SSH", str(hosts.wrapper))
    root = tmp_path / "local"
    monkeypatch.setenv("SWITCHBOARD_HOME", str(root))
    monkeypatch.setenv("SWITCHBOARD_CONFIG", str(root / "config.toml"))
    engine = make_live_engine(root, tmux_socket,
                              remotes=tuple(h.remote for h in hosts.hosts))
    return engine, Home(root=root, config_path=root / "config.toml")


def test_remote_badges_attention_and_bell_follow_the_remote_live(
        two_hosts: Hosts, tmp_path: Path, tmux_socket: Path, monkeypatch) -> None:
    h0, h1 = two_hosts.hosts
    agents = {h.name: add_agents(h, 2) for h in two_hosts.hosts}
    engine, home = _local(tmp_path, tmux_socket, two_hosts, monkeypatch)
    from core.context.requests import new_request_id

    engine.project_enter(new_request_id(), "alpha")  # a local view for a client to look at
    window = engine.conn.execute("SELECT tmux_window_id FROM user_views").fetchone()[0]
    client = PtyClient(tmux_socket, window)
    hold_interest(home)
    started = ensure_followers(home, engine.config)
    pids = [pid for _, pid in started]
    try:
        assert sorted(name for name, _ in started) == ["h0", "h1"]
        assert retry_until(lambda: all(follower_running(home, h.remote)
                                       for h in two_hosts.hosts), 10)
        assert ensure_followers(home, engine.config) == []  # one follower per host
        assert retry_until(lambda: all((_cache(engine, h.name) or ("",))[0] == "online"
                                       for h in two_hosts.hosts), 30)
        # one long-lived ssh per host, whatever the number of agents
        assert retry_until(lambda: all(len(_ssh_children(p)) == 1 for p in pids), 10)
        frame, key = agents["h0"][1]
        assert _frame_activity(engine, frame) == "working"
        counts = read_counts(engine.conn)
        assert {r.host: r.working for r in counts.remote} == {"h0": 2, "h1": 2}

        client.read(0.5)
        client.output = b""
        set_activity(h0, key, Activity.NEEDS_INPUT, ActivityReason.PERMISSION)
        # the badge, the count, the status segment (with the host's name) and the bell
        assert retry_until(lambda: _frame_activity(engine, frame) == "needs_input", 10)
        counts = read_counts(engine.conn)
        assert [(r.host, r.needs_input, r.working) for r in counts.remote] == \
            [("h0", 1, 1), ("h1", 0, 2)]
        assert retry_until(lambda: "h0: #[fg=yellow,bold]! 1 input" in tmux(
            tmux_socket, "show-options", "-gqv", "@sb_attention"), 10)
        assert retry_until(lambda: b"]9;Switchboard: h0: " in client.read(0.2), 10), \
            client.output[-400:]
        assert b"needs input\x07" in client.output
        # `switchboard attention` counts them too
        import subprocess
        import sys
        done = subprocess.run([sys.executable, "-m", "navigator.cli", "attention"],
                              capture_output=True, text=True, timeout=60)
        assert "h0: needs input 1, ready 0, working 1" in done.stdout, done.stderr
    finally:
        client.close()
        _reap(pids)
    # a killed follower leaves no ssh behind (the kernel ends it with its parent)
    assert retry_until(lambda: not any(follower_running(home, h.remote)
                                       for h in two_hosts.hosts), 10)


def test_a_host_that_goes_away_is_offline_and_comes_back_by_itself(
        two_hosts: Hosts, tmp_path: Path, tmux_socket: Path, monkeypatch) -> None:
    h0, _ = two_hosts.hosts
    agents = add_agents(h0, 1)
    engine, home = _local(tmp_path, tmux_socket, two_hosts, monkeypatch)
    fd = hold_interest(home)
    pids = [pid for _, pid in ensure_followers(home, engine.config)]
    try:
        assert retry_until(lambda: (_cache(engine, "h0") or ("",))[0] == "online", 30)
        h0.stop()
        gone = time.monotonic()
        assert retry_until(lambda: _cache(engine, "h0")[0] == "offline", 12)
        assert time.monotonic() - gone < 10
        state = build_navigator_state(engine)
        row = next(h for h in state.hosts if h.host_id == h0.host_id)
        assert row.reachability == "offline"  # shown offline, last state kept
        assert any(f.frame_id == agents[0][0] for p in state.projects for f in p.frames)
        assert read_counts(engine.conn).remote == tuple(
            r for r in read_counts(engine.conn).remote if r.host != "h0")
        h0.start()
        assert retry_until(lambda: _cache(engine, "h0")[0] == "online", 20)
        assert _cache(engine, "h0")[1] is None
        # nobody interested any more: the followers end by themselves, hosts "not followed"
        os.close(fd)
        from core.remote import interest
        interest._HELD.clear()
        assert retry_until(lambda: not any(follower_running(home, h.remote)
                                           for h in two_hosts.hosts), 20)
        assert NOT_FOLLOWED in (_cache(engine, "h0")[1] or "")
        assert OFFLINE_AFTER_S < 10
    finally:
        _reap(pids)
