"""Turn-end work done by the home's real server process (issue 38): no worker per Stop.

The hook side runs in this test process with ``spawn_detached`` replaced by a spy, so
a Python worker the hook would have started is seen (and not started); the work is
then only done if the server did it.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

import pytest

import core.model.spawn
from core.config.capabilities import ENV_CAPABILITY, ENV_GENERATION
from core.config.home import Home
from core.context.requests import new_request_id
from core.hooks.hook_handler import handle_hook
from core.hooks.usage_handoff import after_turn
from core.model import turn_end
from core.providers import agent_http
from core.server.main import stop_server
from core.server.start import ensure_running
from storage import session_db
from storage.session_usage import turn_usage
from tests.core.test_hook_handler import CLAUDE_FIXTURE, fixture_lines, launch_live_surface
from tests.core.test_usage import claude_line
from tests.waiting import retry_until


@pytest.fixture
def spawned(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    started: list[list[str]] = []
    monkeypatch.setattr(core.model.spawn, "spawn_detached",
                        lambda argv, env=None, log_path=None: started.append(list(argv)) or 1)
    monkeypatch.delenv(turn_end.ENV_MODE, raising=False)
    return started


def _python(spawned: list[list[str]]) -> list[list[str]]:
    """The Python processes among them (a tmux ``set-option`` is no worker)."""
    return [argv for argv in spawned if argv[0] == sys.executable]


def _drain_alive(run_dir: Path) -> bool:
    return turn_end.server_takes_work(run_dir)


def _recorded(event: str, session_id: str) -> bytes:
    payload = next(body for name, body in fixture_lines(CLAUDE_FIXTURE) if name == event)
    payload["session_id"] = session_id
    return json.dumps(payload).encode()


def test_a_stop_with_the_server_up_runs_its_push_with_no_worker(
        tmp_path: Path, tmux_socket: Path, monkeypatch: pytest.MonkeyPatch,
        spawned: list[list[str]]) -> None:
    monkeypatch.setenv("SWITCHBOARD_HOME", str(tmp_path))
    for name in ("TMUX", "TMUX_PANE", ENV_CAPABILITY, ENV_GENERATION):
        monkeypatch.delenv(name, raising=False)
    live = launch_live_surface(tmp_path, tmux_socket)  # the launch starts the server
    home = Home(root=tmp_path, config_path=tmp_path / "config.toml")
    try:
        assert retry_until(lambda: _drain_alive(home.run_dir), 30)
        pane_env = {**live.env(), **home.child_env()}
        engine = live.engine
        handle_hook("claude", "UserPromptSubmit",
                    _recorded("UserPromptSubmit", live.provider_session_id), pane_env)
        frame_id = engine.conn.execute(
            "SELECT f.frame_id FROM frames f JOIN user_views v"
            " ON v.active_frame_id = f.frame_id WHERE f.role = 'workspace'").fetchone()[0]
        push = engine.frame_push(new_request_id(), frame_id, "Server task", "Nothing to do.")

        def state() -> str:
            return engine.conn.execute(
                "SELECT state FROM view_transitions WHERE transition_id = ?",
                (push.transition_id,)).fetchone()[0]

        assert state() == "prepared"
        spawned.clear()
        outcome = handle_hook("claude", "Stop", _recorded("Stop", live.provider_session_id),
                              pane_env, detach_stop_work=True)
        assert outcome.handled and outcome.reason.endswith("waiting work handed to the server")
        assert _python(spawned) == []  # no usage reader, publisher or stop worker started
        log = agent_http.server_dir(home.run_dir) / agent_http.LOG_NAME
        assert retry_until(lambda: state() in ("awaiting_claim", "completed"), 60), \
            (state(), log.read_text() if log.exists() else "no server log")
        assert retry_until(lambda: not [n for n in os.listdir(
            turn_end.spool_dir(home.run_dir)) if not n.startswith(".")], 30)
    finally:
        live.engine.conn.close()
        stop_server(home.run_dir)


def test_work_spooled_to_a_server_killed_before_it_ran_is_done_after_restart(
        sb_home: Path, tmp_path: Path, spawned: list[list[str]]) -> None:
    home = Home.from_env()
    info = ensure_running(home)
    assert info is not None
    try:
        assert retry_until(lambda: _drain_alive(home.run_dir), 30)
        os.kill(info.pid, signal.SIGSTOP)  # alive, but its drain will not look again
        source = tmp_path / "t.jsonl"
        source.write_text(claude_line("m1", "claude-sonnet-4-5", 40, 2))
        assert after_turn(home, "claude", "Stop", {"transcript_path": str(source)}, "k", "p1")
        assert _python(spawned) == []
        os.kill(info.pid, signal.SIGKILL)
        assert retry_until(lambda: not agent_http.lock_held(home.run_dir), 15)
        folder = turn_end.spool_dir(home.run_dir)
        name = turn_end.item_name(turn_end.USAGE, turn_end.path_key("k", str(source)))
        assert name in os.listdir(folder)  # not done, not lost
        # no server now: the next hand-off is a worker's (nothing waits for a server)
        assert after_turn(home, "claude", "Stop", {"transcript_path": str(source)}, "k2", "p1")
        assert len(_python(spawned)) == 1

        restarted = ensure_running(home)
        assert restarted is not None and restarted.pid != info.pid

        def usage() -> list[tuple[str | None, int]]:
            path = session_db.session_db_path(home.root, "k")
            if not path.exists():
                return []
            conn = session_db.open_session_db(path)
            try:
                return [(row.turn_id, row.input_tokens) for row in turn_usage(conn, "k")]
            finally:
                conn.close()

        assert retry_until(lambda: usage() == [("p1", 40)], 30), usage()
        assert retry_until(lambda: not [n for n in os.listdir(folder)
                                        if not n.startswith(".")], 10)
    finally:
        with_suppressed_stop(home)


def with_suppressed_stop(home: Home) -> None:
    try:
        stop_server(home.run_dir)
    except Exception:  # the test already failed; leave no server behind if possible
        found = agent_http.running(home.run_dir)
        if found is not None:
            os.kill(found.pid, signal.SIGKILL)
