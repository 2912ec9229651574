"""Every launch's agent tools are at the home's ``switchboard server`` (the only
transport): fake agents on a private tmux server reach them there, the server started by
the launch.

Fake Codex calls its tools over streamable HTTP with the bearer token from the pane
variable its ``-c ...bearer_token_env_var`` names (as Codex does); fake Claude lists the
tools over HTTP at start-up with the ``headers`` of its ``--mcp-config`` (as Claude Code
does), which writes the launch's ready marker. A kill -9 of the server loses nothing:
the next launch starts a new one on the same port, and the earlier agent's tools work.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.context.requests import new_request_id
from core.model.enums import Provider
from core.providers import agent_http
from core.server.main import stop_server
from tests.integration.journey_env import make_live_engine, one, tmux, type_line
from tests.integration.transitions_env import screen
from tests.waiting import retry_until


def _messages(root: Path) -> list[tuple]:
    conn = sqlite3.connect(f"file:{root / 'broker.sqlite3'}?mode=ro", uri=True)
    try:
        return [tuple(r) for r in conn.execute("SELECT text FROM messages ORDER BY 1")]
    finally:
        conn.close()


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("SWITCHBOARD_HOME", str(tmp_path))
    monkeypatch.delenv("SWITCHBOARD_CONFIG", raising=False)
    yield tmp_path
    stop_server(tmp_path / "run")


def _start_command(socket: Path, pane: str) -> str:
    return tmux(socket, "display-message", "-p", "-t", pane, "#{pane_start_command}")


def test_codex_calls_its_tools_over_http(root: Path, tmux_socket: Path) -> None:
    engine = make_live_engine(root, tmux_socket)
    route = engine.project_enter(new_request_id(), "alpha")
    engine.frame_start(new_request_id(), route.frame_id, Provider.CODEX)
    main = one(engine, "SELECT main_pane_id FROM user_views")[0]
    assert retry_until(lambda: ">" in screen(tmux_socket, main).split(), 15.0)

    run_dir = root / "run"
    info = agent_http.running(run_dir)
    assert info is not None, "the launch started the home's server"
    command = _start_command(tmux_socket, main)
    assert f"mcp_servers.switchboard.url=\"{info.url}\"" in command or info.url in command
    assert "bearer_token_env_var" in command and "SWITCHBOARD_MCP_TOKEN" in command
    assert "mcp_servers.switchboard.command" not in command  # no per-agent process
    tokens = list((run_dir / "server" / "tokens").iterdir())
    assert len(tokens) == 1 and os.stat(tokens[0]).st_mode & 0o777 == 0o600

    type_line(tmux_socket, main, "/msg person :: hello over http")
    assert retry_until(lambda: _messages(root) == [("hello over http",)], 30), \
        screen(tmux_socket, main)
    assert "switchboard.message_send(" in screen(tmux_socket, main)

    # kill -9 between turns: the next turn's UserPromptSubmit hook starts the server
    # again on its old port, before the model calls a tool; nothing was lost (the
    # token is a file).
    os.kill(info.pid, signal.SIGKILL)
    assert retry_until(lambda: agent_http.running(run_dir) is None, 10)
    type_line(tmux_socket, main, "/msg person :: after the kill")
    assert retry_until(lambda: ("after the kill",) in _messages(root), 30), \
        screen(tmux_socket, main)
    again = agent_http.running(run_dir)
    assert again is not None and again.pid != info.pid and again.port == info.port

    # kill -9 again: a launch (another project's agent) starts it too.
    os.kill(again.pid, signal.SIGKILL)
    assert retry_until(lambda: agent_http.running(run_dir) is None, 10)
    beta = engine.project_enter(new_request_id(), "beta")
    engine.frame_start(new_request_id(), beta.frame_id, Provider.CODEX)
    third = agent_http.running(run_dir)
    assert third is not None and third.pid not in (info.pid, again.pid)
    assert third.port == info.port

    # The launch ends (its capability revoked with its runtime): its token is stale,
    # 401 with the reason, and the call never runs.
    from storage.connection import write_transaction
    from storage.operations.sessions import revoke_capabilities

    surface = one(engine, "SELECT surface_id FROM surfaces WHERE pane_id = ?", main)[0]
    with write_transaction(engine.conn) as tx:
        revoke_capabilities(tx, surface, engine.now())
    type_line(tmux_socket, main, "/msg person :: after the end")
    stale = "HTTP 401: stale token: its launch ended (capability was revoked"
    assert retry_until(lambda: stale in screen(tmux_socket, main), 30), \
        screen(tmux_socket, main)
    assert ("after the end",) not in _messages(root)
    log = (run_dir / "server" / "server.log").read_text(encoding="utf-8")
    assert "stale token: its launch ended" in log and "Bearer" not in log


def test_claude_lists_its_tools_over_http(root: Path, tmux_socket: Path) -> None:
    engine = make_live_engine(root, tmux_socket)
    route = engine.project_enter(new_request_id(), "alpha")
    started = engine.frame_start(new_request_id(), route.frame_id, Provider.CLAUDE)
    main = one(engine, "SELECT main_pane_id FROM user_views")[0]
    assert retry_until(lambda: ">" in screen(tmux_socket, main).split(), 15.0)

    key = one(engine, "SELECT session_key FROM launch_intents WHERE launch_id = ?",
              started.launch_id)[0]
    session_dir = root / "run" / key.replace(":", "_")
    config_file = session_dir / "claude-mcp.json"
    assert os.stat(config_file).st_mode & 0o777 == 0o600
    server = json.loads(config_file.read_text(encoding="utf-8"))["mcpServers"]["switchboard"]
    info = agent_http.running(root / "run")
    assert info is not None
    assert (server["type"], server["url"]) == ("http", info.url)
    token = server["headers"]["Authorization"].removeprefix("Bearer ")
    assert token not in _start_command(tmux_socket, main)
    # Ready = the server answered this token's tools/list (no process to pgrep for).
    ready = session_dir / f"claude-mcp-ready-{started.launch_id}"
    assert retry_until(ready.exists, 15), sorted(p.name for p in session_dir.iterdir())
    settings = (session_dir / "claude-settings.json").read_text(encoding="utf-8")
    assert "pgrep" not in settings


def test_a_launch_whose_server_cannot_start_is_refused_and_undone(
        root: Path, tmux_socket: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No per-agent fallback: an agent without its tools could never claim a transition,
    so a launch whose server cannot start is refused before any pane exists, in one line
    naming the server's log, and the start is undone: the same start works once the
    server can run."""
    engine = make_live_engine(root, tmux_socket)
    route = engine.project_enter(new_request_id(), "alpha")
    log = root / "run" / "server" / "server.log"

    def never_listens(run_dir: Path, home_env: object) -> agent_http.ServerStart:
        """A start whose server never writes its port (its wait runs out at once)."""
        return agent_http.ServerStart(run_dir, None, time.monotonic(), 10.0)

    monkeypatch.setattr(agent_http, "start_server", never_listens)
    panes = tmux(tmux_socket, "list-panes", "-a", "-F", "#{pane_id}").split()
    with pytest.raises(agent_http.ServerUnavailable) as refused:
        engine.frame_start(new_request_id(), route.frame_id, Provider.CLAUDE)
    assert "\n" not in str(refused.value) and str(log) in str(refused.value)
    assert tmux(tmux_socket, "list-panes", "-a", "-F", "#{pane_id}").split() == panes
    assert one(engine, "SELECT state, failure FROM launch_intents") == (
        "failed", f"server_unavailable: {refused.value.message}")
    # The token registered while it started was never handed out: no record is left.
    assert not list(root.glob("run/server/tokens/*"))

    monkeypatch.undo()
    engine.frame_start(new_request_id(), route.frame_id, Provider.CLAUDE)
    main = one(engine, "SELECT main_pane_id FROM user_views")[0]
    assert retry_until(lambda: ">" in screen(tmux_socket, main).split(), 15.0)
