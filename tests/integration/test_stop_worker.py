"""A trusted Stop hands its waiting push to a detached worker; the hook returns at once.

The hook process is the provider's exact entry point (``python -m navigator.cli
hook --provider claude Stop`` with the pane's environment and a recorded
payload); the push it releases is finished by ``core.hooks.stop_worker`` after the
hook has exited, with no pipe shared with it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from core.config.capabilities import ENV_CAPABILITY, ENV_GENERATION
from core.config.home import Home
from core.context.requests import new_request_id
from core.hooks import stop_worker
from core.hooks.hook_handler import handle_hook
from core.hooks.stop_worker import LOG_NAME
from core.model import turn_end
from tests.core.test_hook_handler import CLAUDE_FIXTURE, fixture_lines, launch_live_surface
from tests.waiting import retry_until


def _recorded(event: str, session_id: str) -> bytes:
    payload = next(body for name, body in fixture_lines(CLAUDE_FIXTURE) if name == event)
    payload["session_id"] = session_id
    return json.dumps(payload).encode()


@pytest.fixture
def live(tmp_path: Path, tmux_socket: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("SWITCHBOARD_HOME", str(tmp_path))
    for name in ("TMUX", "TMUX_PANE", ENV_CAPABILITY, ENV_GENERATION):
        monkeypatch.delenv(name, raising=False)
    surface = launch_live_surface(tmp_path, tmux_socket)
    yield surface
    surface.engine.conn.close()


def test_the_stop_hook_returns_and_the_worker_finishes_the_push(live, tmp_path: Path) -> None:
    home = Home(root=tmp_path, config_path=tmp_path / "config.toml")
    pane_env = {**live.env(), **home.child_env()}
    engine = live.engine
    handle_hook("claude", "UserPromptSubmit",
                _recorded("UserPromptSubmit", live.provider_session_id), pane_env)
    frame_id, view_id = engine.conn.execute(
        "SELECT f.frame_id, v.view_id FROM frames f JOIN user_views v"
        " ON v.active_frame_id = f.frame_id WHERE f.role = 'workspace'").fetchone()
    push = engine.frame_push(new_request_id(), frame_id, "Worker task", "Nothing to do.")

    def state() -> str:
        return engine.conn.execute("SELECT state FROM view_transitions WHERE transition_id = ?",
                                   (push.transition_id,)).fetchone()[0]

    assert state() == "prepared"  # the parent is working: the push waits for its Stop

    env = {k: v for k, v in os.environ.items() if not k.startswith("SWITCHBOARD_")}
    # the launch's server would take the work (tests/integration/test_server_turn_end.py):
    # this test is the worker's, the path a Stop takes when no server runs
    env[turn_end.ENV_MODE] = turn_end.WORKER_MODE
    done = subprocess.run(
        [sys.executable, "-m", "navigator.cli", "hook", "--provider", "claude", "Stop",
         "--json"], input=_recorded("Stop", live.provider_session_id),
        env={**env, **pane_env}, capture_output=True, timeout=120, check=True)
    outcome = json.loads(done.stdout)
    assert outcome["handled"] and outcome["executed"] == []
    assert outcome["reason"].endswith("waiting work handed to a worker")
    # (the hook exited with the push not yet claimed by it: the worker runs it)
    assert retry_until(lambda: state() in ("awaiting_claim", "completed"), 60), \
        (state(), (tmp_path / "run" / LOG_NAME).read_text() if
         (tmp_path / "run" / LOG_NAME).exists() else "no worker log")
    child = engine.conn.execute("SELECT main_pane_id FROM user_views WHERE view_id = ?",
                                (view_id,)).fetchone()[0]
    assert child is not None and child != engine.conn.execute(
        "SELECT pane_id FROM surfaces WHERE launch_id = ?", (live.launch_id,)).fetchone()[0]


def test_a_failing_worker_says_why_in_its_log(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """No registry here: the worker exits 1 and leaves one line for the person."""
    for name in ("SWITCHBOARD_HOME", "SWITCHBOARD_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    home = Home(root=tmp_path, config_path=tmp_path / "config.toml")
    stop_worker.start(home, "no-such-generation", "no-such-frame")
    log = tmp_path / "run" / LOG_NAME
    assert retry_until(lambda: log.exists() and "reconcile will finish it" in log.read_text(), 60)
    line = log.read_text().strip().splitlines()[-1]
    assert "frame no-such-frame: waiting work not finished" in line
