"""The server's housekeeping pass and its exit rule (``core.server.housekeeping``,
``core.server.lifetime``), without tmux: a tmux server is stood in for where needed.
The same against a real tmux server, and kill -9 of the server mid-pass:
``tests/integration/test_server_housekeeping.py``."""

from __future__ import annotations

import shutil
import socket
import sqlite3
import threading
import time
from contextlib import closing
from pathlib import Path

import pytest

from core.config.home import Home
from core.providers import agent_http
from core.server import housekeeping
from core.server import main as server_main
from core.server.housekeeping import Housekeeper, PassReport, interval_from_env
from core.server.lifetime import ExitRule, tmux_alive
from core.server.main import BACKGROUND_QUIET_S, serve
from tests.navigator.scenario import new_scenario
from tests.waiting import retry_until


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _rule(tmp_path: Path, alive: list[bool], clock: _Clock) -> ExitRule:
    lock = tmp_path / "server.lock"
    lock.touch()
    return ExitRule(lock, lock.stat().st_ino, lambda: str(tmp_path / "tmux.sock"),
                    gone_after=30, clock=clock, alive=lambda _path: alive[0])


def test_the_exit_rule_waits_out_a_tmux_restart_then_exits(tmp_path: Path) -> None:
    alive, clock = [True], _Clock()
    rule = _rule(tmp_path, alive, clock)
    clock.now += 5
    assert rule.reason() is None
    alive[0] = False  # the tmux server is killed
    clock.now += 20
    assert rule.reason() is None  # not yet: a restart may follow
    alive[0] = True  # it did: counting starts again
    clock.now += 20
    assert rule.reason() is None
    alive[0] = False
    clock.now += 29
    assert rule.reason() is None
    clock.now += 2
    assert rule.reason() == "the home's tmux server has been gone for 30 s"


def test_the_exit_rule_exits_at_once_when_the_lock_file_goes(tmp_path: Path) -> None:
    rule = _rule(tmp_path, [True], _Clock())
    with open(tmp_path / "server.lock", "rb"):  # held open, as the server holds its lock
        assert rule.reason() is None
        (tmp_path / "server.lock").unlink()
        (tmp_path / "server.lock").touch()  # a new home's lock: not this server's
        assert rule.reason() == "its lock file was removed or replaced"


def test_tmux_alive_is_a_connect_not_a_file(tmp_path: Path) -> None:
    path = tmp_path / "s"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(1)
    assert tmux_alive(str(path))
    listener.close()  # the file stays, as a killed tmux server's does
    assert path.exists() and not tmux_alive(str(path))
    assert not tmux_alive(str(tmp_path / "missing"))


def test_the_interval_knob(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(housekeeping.ENV_INTERVAL, raising=False)
    assert interval_from_env() == housekeeping.RECONCILE_INTERVAL_S
    for raw, expected in (("0.5", 0.5), ("soon", 10.0), ("-1", 10.0), ("0", 10.0)):
        monkeypatch.setenv(housekeeping.ENV_INTERVAL, raw)
        assert interval_from_env() == expected


def test_without_a_config_a_pass_does_nothing(sb_home: Path) -> None:
    lines: list[str] = []
    report = Housekeeper(Home.from_env(), lines.append).run_pass()
    assert report == PassReport(skipped="no config") and lines == []


def test_a_failing_reconcile_is_logged_once_and_the_pass_goes_on(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Hooks leave the registry's checkpoints to the pass: even a pass whose reconcile
    fails copies the WAL into the database file, and the other steps run; the failure
    is said once per run of failures."""
    scenario = new_scenario(tmp_path / "home")
    conn = scenario.engine.conn
    conn.execute("PRAGMA wal_autocheckpoint = 0")  # as a hook's connection leaves it
    scenario.client.enter_project("alpha")
    path = scenario.home.registry_path(scenario.engine.generation_id)

    def views_in_file_alone() -> int:
        alone = tmp_path / f"alone-{len(list(tmp_path.iterdir()))}.sqlite3"
        shutil.copyfile(path, alone)
        with closing(sqlite3.connect(alone)) as copy:
            return int(copy.execute("SELECT COUNT(*) FROM user_views").fetchone()[0])

    steps: list[str] = []
    monkeypatch.setattr(housekeeping, "tmux_alive", lambda _socket: True)
    monkeypatch.setattr(Housekeeper, "_attention",
                        staticmethod(lambda _engine, sock: steps.append(f"attention {sock}")))
    monkeypatch.setattr(Housekeeper, "_park", staticmethod(lambda _engine: steps.append("park")))

    def failing(_engine: object) -> None:
        raise RuntimeError("tmux did not answer")

    monkeypatch.setattr(Housekeeper, "_reconcile", staticmethod(failing))
    lines: list[str] = []
    keeper = Housekeeper(scenario.home, lines.append)
    assert views_in_file_alone() == 0  # committed, but only in the WAL
    first = keeper.run_pass()
    assert first.problems == ("reconcile: tmux did not answer",)
    assert views_in_file_alone() == 1
    scenario.client.enter_project("beta")
    second = keeper.run_pass()
    assert second.problems == first.problems and views_in_file_alone() == 2
    assert lines == ["housekeeping reconcile failed: reconcile: tmux did not answer "
                     "(retried every pass)"]
    socket = str(scenario.home.root / "tmux.sock")
    assert steps == [f"attention {socket}", "park"] * 2


def test_a_server_without_tmux_exits_by_itself(tmp_path: Path) -> None:
    scenario = new_scenario(tmp_path / "home")
    passes: list[PassReport] = []
    outcome: list[int] = []
    thread = threading.Thread(target=lambda: outcome.append(serve(
        scenario.home.run_dir, home=scenario.home, interval=0.1, tmux_gone_s=0.5,
        on_pass=passes.append)), daemon=True)
    thread.start()
    assert retry_until(lambda: not thread.is_alive(), 15)
    assert outcome == [0]
    assert passes and all(p.skipped == "no tmux server" for p in passes)
    log = (scenario.home.run_dir / "server" / "server.log").read_text()
    assert "the home's tmux server has been gone for 0.5 s: exiting" in log


def _serve_in_thread(home: Home, monkeypatch: pytest.MonkeyPatch
                     ) -> tuple[threading.Event, list[float]]:
    """``serve`` on a thread, a pass every 0.1 s: (its stop event, the monotonic times
    its passes began)."""
    ready, stop, passes = threading.Event(), threading.Event(), []
    run_pass = Housekeeper.run_pass

    def timed(keeper: Housekeeper) -> PassReport:
        passes.append(time.monotonic())
        return run_pass(keeper)

    monkeypatch.setattr(Housekeeper, "run_pass", timed)
    threading.Thread(target=serve, args=(home.run_dir, ready, stop), kwargs={
        "home": home, "interval": 0.1, "tmux_gone_s": 60.0}, daemon=True).start()
    assert ready.wait(30)
    return stop, passes


def test_the_background_work_starts_once_the_endpoint_is_quiet(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing asks the endpoint: the first pass begins ``BACKGROUND_QUIET_S`` after the
    server began listening, not before (the endpoint answers first)."""
    scenario = new_scenario(tmp_path / "home")
    listening = time.monotonic()
    stop, passes = _serve_in_thread(scenario.home, monkeypatch)
    try:
        assert retry_until(lambda: bool(passes), 15)
        assert passes[0] - listening >= BACKGROUND_QUIET_S
    finally:
        stop.set()


def test_a_busy_endpoint_delays_the_background_work_only_so_long(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A request in progress (its body still coming) keeps the background work from
    starting, for ``BACKGROUND_WAIT_MAX_S`` after listening at most: then the passes
    run, busy or not. (Both times longer here: the request must be in progress before
    the endpoint has been quiet long enough, on a loaded machine too.)"""
    quiet, longest = 1.0, 3.0
    monkeypatch.setattr(server_main, "BACKGROUND_QUIET_S", quiet)
    monkeypatch.setattr(server_main, "BACKGROUND_WAIT_MAX_S", longest)
    scenario = new_scenario(tmp_path / "home")
    session = tmp_path / "session"
    session.mkdir(mode=0o700)
    token = agent_http.register_token(scenario.home.run_dir, session, {})
    stop, passes = _serve_in_thread(scenario.home, monkeypatch)
    listening = time.monotonic()
    info = agent_http.read_info(scenario.home.run_dir)
    assert info is not None
    head = "\r\n".join(["POST /mcp HTTP/1.1", f"Host: 127.0.0.1:{info.port}",
                        f"Authorization: Bearer {token}", "Content-Type: application/json",
                        "Content-Length: 100"]) + "\r\n\r\n{"
    try:
        with socket.create_connection(("127.0.0.1", info.port), timeout=30) as sock:
            sock.sendall(head.encode("latin-1"))
            assert retry_until(lambda: bool(passes), 15)
            assert passes[0] - listening >= longest - 0.5 > quiet
    finally:
        stop.set()
