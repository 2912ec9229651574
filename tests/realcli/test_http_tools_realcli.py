"""Every real Claude Code and Codex of the window reaches the agent tools over HTTP.

A push and the child's claim of its brief, for each release of the tested window: each
CLI reaches the agent tools at the home's ``switchboard server`` over MCP streamable
HTTP (the only transport) with its launch's bearer token: Claude Code from
``--mcp-config``'s ``type: http`` with ``headers`` (some releases mishandled custom
headers: this is where it shows), Codex from ``-c mcp_servers.switchboard.url`` and
``bearer_token_env_var``. No agent-tool process runs beside either CLI (the
``claude_cli`` / ``codex_cli`` matrix). Run with ``-k http_tools``.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from core.config.config import ProviderConfig, TmuxConfig
from core.config.home import Home
from core.config.registry import init_registry
from core.context.requests import new_request_id
from core.engine.engine import Engine
from core.engine.open import open_engine
from core.model.enums import Provider
from core.providers import agent_http
from core.server.main import stop_server
from tests.factories import project_config
from tests.integration.journey_env import one, tmux
from tests.realcli import harness_codex
from tests.realcli import test_claude_journey as claude_journey
from tests.realcli.install import RealCli, RealClis
from tests.waiting import fail_unless, retry_until

pytestmark = [pytest.mark.tmux, pytest.mark.timeout(480)]

def _no_tool_process(socket: Path) -> None:
    """No agent-tool process (``navigator.cli mcp``, or the old shim) runs under any pane
    of this tmux server."""
    rows = subprocess.run(["ps", "-eo", "pid=,ppid=,args="], capture_output=True, text=True,
                          check=True).stdout.splitlines()
    children: dict[str, list[tuple[str, str]]] = {}
    for row in rows:
        pid, ppid, *args = row.split(None, 2)
        children.setdefault(ppid, []).append((pid, args[0] if args else ""))
    found, todo = [], tmux(socket, "list-panes", "-a", "-F", "#{pane_pid}").split()
    while todo:
        for pid, args in children.get(todo.pop(), []):
            todo.append(pid)
            if "navigator.cli mcp" in args or "sb-mcp-shim" in args:
                found.append(args)
    assert not found, found


def _http_server(run_dir: Path) -> agent_http.ServerInfo:
    info = agent_http.running(run_dir)
    assert info is not None, "the launch started the home's switchboard server"
    return info


@pytest.fixture
def http_world(request: pytest.FixtureRequest, tmp_path: Path, tmux_socket: Path,
               claude_cli: RealCli, real_clis: RealClis,
               monkeypatch: pytest.MonkeyPatch) -> Iterator[claude_journey.World]:
    """The Claude journey's world, for the release ``claude_cli`` names."""

    def make_real_engine(root: Path, socket: Path, commands: dict, home: Home | None = None
                         ) -> Engine:
        home = home or Home(root=root, config_path=root / "config.toml")
        template = replace(project_config(root / "src"),
                           providers={p: ProviderConfig(command=tuple(c),
                                                        version_timeout_seconds=60)
                                      for p, c in commands.items()},
                           tmux=TmuxConfig(socket_path=str(socket)))
        init_registry(home, template=template)
        return open_engine(home, with_stage=True)

    monkeypatch.setattr(claude_journey, "make_real_engine", make_real_engine)
    with claude_journey._world(request, tmp_path, tmux_socket, claude_cli, real_clis,
                               monkeypatch) as made:
        try:
            yield made
        finally:
            stop_server(Home.from_env().run_dir)


def test_http_tools_real_claude_push_and_claim(http_world: claude_journey.World) -> None:
    world = http_world
    engine, socket = world.engine, world.socket
    route = engine.project_enter(new_request_id(), "alpha")
    parent = route.frame_id
    started = engine.frame_start(new_request_id(), parent, Provider.CLAUDE)
    main = claude_journey.main_pane(engine)
    world.wait_prompt(main)
    run_dir = Home.from_env().run_dir
    info = _http_server(run_dir)
    key = one(engine, "SELECT session_key FROM launch_intents WHERE launch_id = ?",
              started.launch_id)[0]
    config = json.loads((run_dir / key.replace(":", "_") / "claude-mcp.json").read_text())
    assert config["mcpServers"]["switchboard"]["type"] == "http"
    ready = run_dir / key.replace(":", "_") / f"claude-mcp-ready-{started.launch_id}"
    # Ready = the server answered this launch's tools/list: Claude sent its headers.
    assert retry_until(ready.exists, claude_journey.SLOW), (
        (run_dir / "server" / "server.log").read_text())

    claude_journey.type_prompt(socket, main, "PUSH Over http :: work over http")
    assert retry_until(lambda: world.transition("push") is not None
                       and world.transition("push")[0] == "completed",
                       claude_journey.SLOW), world.dump()
    child = world.frame("Over http")
    assert retry_until(lambda: one(engine, "SELECT first_claimed_at FROM transition_briefs")[0]
                       is not None, claude_journey.SLOW), world.dump()
    world.wait_activity(child, "ready")
    assert "STANDIN-CLAIMED brief: Over http" in \
        claude_journey.screen(socket, claude_journey.main_pane(engine))
    assert world.api.journal.tool_calls() == [claude_journey.PUSH_TOOL,
                                              claude_journey.CLAIM_TOOL], world.dump()
    assert agent_http.running(run_dir) == info  # one server served both agents
    _no_tool_process(socket)
    log = (run_dir / "server" / "server.log").read_text()
    assert "refused" not in log, log


def test_http_tools_real_codex_push_and_claim(
        codex_cli: RealCli, codex_clis: RealClis, tmp_path: Path, tmux_socket: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.realcli.openai_standin import OpenAIStandin
    from tests.realcli.test_codex_journey import COMPOSER, TURN_S, _frame, _main

    def make_codex_engine(root: Path, socket: Path, clis: RealClis) -> Engine:
        home = harness_codex.switchboard_home(root)
        providers = {p: ProviderConfig(command=harness_codex.fake_provider_command(p.value))
                     for p in Provider}
        providers[Provider.CODEX] = ProviderConfig(command=(str(clis.codex),))
        template = replace(project_config(root / "src"), providers=providers,
                           tmux=TmuxConfig(socket_path=str(socket)))
        init_registry(home, template=template)
        return open_engine(home, with_stage=True)

    with OpenAIStandin() as standin:
        person = harness_codex.make_person(tmp_path, codex_clis, standin.base_url)
        for name in list(os.environ):
            if name.startswith(harness_codex.SCRUBBED_PREFIXES):
                monkeypatch.delenv(name)
        for name, value in harness_codex.person_env(person).items():
            monkeypatch.setenv(name, value)
        for name in ("SWITCHBOARD_HOME", "SWITCHBOARD_CONFIG"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "sb" / ".local" / "state"))
        monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "sb" / ".config"))
        engine = make_codex_engine(tmp_path, tmux_socket, codex_clis)
        run_dir = Home.from_env().run_dir
        try:
            def look(pane: str) -> str:
                return harness_codex.screen(tmux_socket, pane)

            route = engine.project_enter(new_request_id(), harness_codex.PROJECT)
            engine.frame_start(new_request_id(), route.frame_id, Provider.CODEX)
            parent = _main(engine)
            fail_unless(lambda: COMPOSER in look(parent), TURN_S, lambda: look(parent))
            time.sleep(1.0)
            info = _http_server(run_dir)
            command = tmux(tmux_socket, "display-message", "-p", "-t", parent,
                           "#{pane_start_command}")
            assert info.url in command and "bearer_token_env_var" in command, command
            harness_codex.type_prompt(tmux_socket, parent,
                                      "PUSH Fix the bug :: Make test_foo pass")
            fail_unless(lambda: one(engine, "SELECT state FROM view_transitions WHERE kind ="
                                             " 'push'") == ("completed",), TURN_S,
                        lambda: f"{one(engine, 'SELECT state, failure FROM view_transitions')}"
                                f"\n{look(parent)}\n"
                                f"{(run_dir / 'server' / 'server.log').read_text()}")
            child = _main(engine)
            assert child != parent
            fail_unless(lambda: one(engine, "SELECT state FROM control_turns WHERE kind ="
                                             " 'claim_brief'") == ("settled",), TURN_S,
                        lambda: look(child))
            assert one(engine, "SELECT first_claimed_at IS NOT NULL FROM transition_briefs"
                       ) == (1,)
            assert _frame(engine, "Fix the bug")
            child_screen = look(child)
            assert "switchboard.transition_claim" in child_screen, child_screen
            assert "Allow the switchboard MCP server" not in child_screen
            _no_tool_process(tmux_socket)
            log = (run_dir / "server" / "server.log").read_text()
            assert "refused" not in log, log
        finally:
            engine.conn.close()
            stop_server(run_dir)
