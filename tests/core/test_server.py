"""`switchboard server`: one per home by its lock, --status, --stop, started on demand.

Every server here is a real process on 127.0.0.1 in a test's own home; each test
stops what it started (by pid, from the server's own port file).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.config.home import Home
from core.providers import agent_http
from core.server.main import stop_server
from tests.waiting import retry_until

CLI = (sys.executable, "-m", "navigator.cli", "server")


def _cli(*args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout,
                          check=False)


@pytest.fixture
def run_dir(sb_home: Path) -> Iterator[Path]:
    """This test's home's run folder; any server of it is stopped at the end."""
    folder = Home.from_env().run_dir
    yield folder
    with contextlib.suppress(Exception):
        stop_server(folder)


def _ping(info: agent_http.ServerInfo, token: str) -> dict:
    request = urllib.request.Request(
        info.url, method="POST", data=b'{"jsonrpc":"2.0","id":7,"method":"ping"}',
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310
        return json.loads(response.read())


def test_status_stop_and_a_second_server_refused(run_dir: Path) -> None:
    not_running = _cli("--status")
    assert (not_running.returncode, not_running.stdout.strip()) == \
        (3, "switchboard server: not running")

    first = subprocess.Popen([*CLI], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert retry_until(lambda: agent_http.running(run_dir) is not None, 15)
        info = agent_http.running(run_dir)
        assert info is not None and info.pid == first.pid
        folder = run_dir / "server"
        assert os.stat(folder).st_mode & 0o777 == 0o700
        assert os.stat(folder / "server.json").st_mode & 0o777 == 0o600

        status = _cli("--status")
        assert status.returncode == 0
        assert status.stdout.startswith(
            f"switchboard server: running, pid {first.pid}, port {info.port}, up ")

        second = _cli()
        assert second.returncode != 0
        lines = second.stderr.strip().splitlines()
        assert len(lines) == 1 and "already runs for this home" in lines[0] and \
            f"pid {first.pid}" in lines[0], second.stderr
        assert agent_http.running(run_dir) == info  # the first one is untouched

        stopped = _cli("--stop")
        assert (stopped.returncode, stopped.stdout.strip()) == \
            (0, f"switchboard server: stopped (pid {first.pid})")
        assert first.wait(timeout=10) == 0
        assert _cli("--status").returncode == 3
        assert not (folder / "server.json").exists()
        again = _cli("--stop")
        assert (again.returncode, again.stdout.strip()) == \
            (0, "switchboard server: not running (nothing to stop)")
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()


def test_killed_server_is_replaced_by_the_next_launch(run_dir: Path) -> None:
    home_env = Home.from_env().child_env()
    info = agent_http.ensure_server(run_dir, home_env)
    session = run_dir / "s1"
    session.mkdir(mode=0o700)
    token = agent_http.register_token(run_dir, session, {})
    assert _ping(info, token)["result"] == {}
    # Detached: another session than this front end's, and not its child (no zombie).
    assert os.getsid(info.pid) != os.getsid(0)
    parent = subprocess.run(["ps", "-o", "ppid=", "-p", str(info.pid)], capture_output=True,
                            text=True, check=True).stdout.strip()
    assert parent != str(os.getpid())

    os.kill(info.pid, signal.SIGKILL)
    assert retry_until(lambda: agent_http.running(run_dir) is None, 10)
    assert agent_http.read_info(run_dir) == info  # its stale port file is still there

    replaced = agent_http.ensure_server(run_dir, home_env)
    assert replaced.pid != info.pid
    # Its port again: agents launched before the kill have that URL in their config.
    assert replaced.port == info.port
    # The tokens are files: the launch's token works at the new server too.
    assert _ping(replaced, token)["id"] == 7
    assert agent_http.running(run_dir) == replaced


BACKGROUND_MACHINERY = ("core.memory", "core.tmux", "core.engine", "core.reconcile",
                        "core.server.turn_end", "core.broker", "libtmux")


def test_the_endpoint_loads_without_the_background_machinery() -> None:
    """What the server imports before it writes its port file (the launch waits for that
    file) is the endpoint alone: the housekeeping, parking-on-leave and turn-end
    machinery (the tmux layer, parking, the engine) load in their threads afterwards."""
    code = ("import sys, core.server.main, core.server.http\n"
            f"print(sorted(m for m in sys.modules if m.startswith({BACKGROUND_MACHINERY!r})))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=True)
    assert done.stdout.strip() == "[]"


def test_front_ends_starting_it_at_once_share_one_server(run_dir: Path) -> None:
    home_env = Home.from_env().child_env()
    found: list[agent_http.ServerInfo] = []

    def start() -> None:
        found.append(agent_http.ensure_server(run_dir, home_env))

    threads = [threading.Thread(target=start) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert len(found) == 4 and len(set(found)) == 1, found


def test_a_run_folder_open_to_others_is_refused(run_dir: Path) -> None:
    run_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    folder = run_dir / "server"
    folder.mkdir(mode=0o700)
    os.chmod(folder, 0o777)
    done = _cli()
    assert done.returncode != 0
    assert "open to other users" in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert not (folder / "server.lock").exists()  # nothing made there


def test_a_removed_home_takes_its_server_with_it(run_dir: Path) -> None:
    import shutil

    info = agent_http.ensure_server(run_dir, Home.from_env().child_env())
    shutil.rmtree(run_dir)

    def gone() -> bool:
        try:
            os.kill(info.pid, 0)
        except ProcessLookupError:
            return True
        return False

    assert retry_until(gone, 10)


def test_old_token_records_are_pruned_and_live_ones_kept(run_dir: Path) -> None:
    session = run_dir / "s1"
    run_dir.mkdir(mode=0o700)
    session.mkdir(mode=0o700)
    first = agent_http.register_token(run_dir, session, {"A": "1"})
    second = agent_http.register_token(run_dir, session, {"A": "2"})  # ends the first
    other = agent_http.register_token(run_dir, run_dir, {"B": "1"})
    folder = agent_http.tokens_dir(run_dir)
    ended, live, old = (folder / agent_http.token_digest(t) for t in (first, second, other))
    day_and_more = time.time() - agent_http.ENDED_KEEP_S - 60
    os.utime(ended, (day_and_more, day_and_more))
    os.utime(live, (day_and_more, day_and_more))  # a day old but live: kept
    month_and_more = time.time() - agent_http.TOKEN_KEEP_S - 60
    os.utime(old, (month_and_more, month_and_more))
    other_session = run_dir / "s2"
    other_session.mkdir(mode=0o700)
    aged = folder / agent_http.token_digest(
        agent_http.register_token(run_dir, other_session, {"C": "1"}))
    os.utime(aged, (day_and_more, day_and_more))  # two days old and live: kept
    third = agent_http.register_token(run_dir, session, {"A": "3"})
    assert not ended.exists() and not old.exists()
    assert set(json.loads(live.read_text())) == {"ended_at"}  # ended just now: kept a day
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        [live.name, aged.name, agent_http.token_digest(third)])


def test_an_old_transport_line_still_loads_and_is_never_written() -> None:
    """HTTP is the only transport: a config written when ``[agent_tools] transport``
    chose between "shim" and "http" still loads with either word (shim is read as
    obsolete), a rewritten config drops the section, and a typo is still refused."""
    from core.config.config import (
        AgentToolTransport,
        ConfigError,
        parse_config,
        render_config,
    )
    from tests.core.test_config import CONTRACT_EXAMPLE

    default = parse_config(CONTRACT_EXAMPLE)
    assert default.agent_tools.transport is AgentToolTransport.HTTP
    assert not default.agent_tools.obsolete_shim
    for word, obsolete in (("http", False), ("shim", True)):
        config = parse_config(CONTRACT_EXAMPLE + f'\n[agent_tools]\ntransport = "{word}"\n')
        assert config.agent_tools.obsolete_shim is obsolete
        assert "[agent_tools]" not in render_config(config)
    with pytest.raises(ConfigError) as refused:
        parse_config(CONTRACT_EXAMPLE + '\n[agent_tools]\ntransport = "tcp"\n')
    assert "agent_tools.transport" in refused.value.message


def test_doctor_says_in_one_line_that_the_shim_setting_is_no_longer_used(
        tmp_path: Path, tmux_socket: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    from navigator.cli import main
    from tests.integration.journey_env import make_live_engine

    engine = make_live_engine(tmp_path, tmux_socket)
    engine.conn.close()
    config = tmp_path / "config.toml"
    monkeypatch.setenv("SWITCHBOARD_HOME", str(tmp_path))
    monkeypatch.setenv("SWITCHBOARD_CONFIG", str(config))
    main(["doctor"])
    assert "transport" not in capsys.readouterr().out  # nothing to say without the line
    config.write_text(config.read_text() + '\n[agent_tools]\ntransport = "shim"\n')
    main(["doctor"])
    said = [line for line in capsys.readouterr().out.splitlines() if "transport" in line]
    assert said == ['warn  agent tools: [agent_tools] transport = "shim" is no longer used: '
                    "every agent gets its tools over HTTP from `switchboard server`"], said


def test_a_starting_server_is_not_turned_away_by_a_front_ends_probe(tmp_path: Path) -> None:
    """A front end waiting for the server probes its lock with a shared lock it drops at
    once; a server asking in that instant still takes the lock. A lock someone keeps (a
    running server) still turns a second server away."""
    import fcntl
    import os
    import threading

    from core.model.flocks import lock_is_held
    from core.providers.agent_http import LOCK_NAME
    from core.server.main import _take_lock

    lock = tmp_path / LOCK_NAME
    lock.touch(mode=0o600)
    probe = os.open(lock, os.O_RDONLY)
    fcntl.flock(probe, fcntl.LOCK_SH | fcntl.LOCK_NB)  # the probe, caught holding it
    threading.Timer(0.1, os.close, (probe,)).start()
    taken = _take_lock(tmp_path)
    assert taken is not None and lock_is_held(lock)
    try:
        assert _take_lock(tmp_path, try_s=0.1) is None  # a running server's: turned away
    finally:
        os.close(taken)
    assert not lock_is_held(lock)
