"""Codex launches in the person's own Codex home: hooks and tool approvals as ``-c``.

The hashes below were read from the real Codex 0.171.0 (``codex app-server``,
``hooks/list`` -> ``currentHash``) for hooks given as ``-c hooks.<Event>=...``;
the real-CLI tier checks the whole set against the binary in a live pane.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest

from core.config.home import Home
from core.model.enums import LaunchAction, Provider
from core.model.errors import ProviderError
from core.model.tool_schemas import TOOLS
from core.providers.adapters import get_adapter
from core.providers.agent_http import ENV_TOKEN, ENV_TRANSPORT, HttpEndpoint
from core.providers.base import McpServer
from core.providers.codex import mcp_overrides
from core.providers.codex_config import (
    SESSION_FLAGS_SOURCE,
    SessionHooks,
    codex_session_hooks,
    hook_event_label,
    hook_trust_hash,
)
from core.providers.fake.mcp import parse_overrides
from core.providers.hook_files import HOOK_TIMEOUT_S, hook_argv
from core.providers.hooks import CODEX_HOOK_EVENTS
from core.runtime.launcher import AGENT_TOOL_NAMES, _plan
from core.server.main import stop_server
from tests.factories import make_engine

ENDPOINT = HttpEndpoint("http://127.0.0.1:4242/mcp", "t" * 43)

SID = "01a23608-d138-7bd0-b5fc-4cf37eeeb23a"
COMMAND = ("/opt/py 3/bin/python", "-m", "navigator.cli", "hook")


@pytest.mark.parametrize(("event", "expected"), [
    ("SessionStart",
     "sha256:59cef8dd19f237d2b895f105e1b58dbe36fc741179e521988935609cfe668f31"),
    ("Stop", "sha256:90fbfd513a94547d730a1340e0f075543d8dee965aef652211b6882e121d64f7"),
])
def test_trust_hash_is_the_one_codex_0_171_computes(event: str, expected: str) -> None:
    assert hook_trust_hash(event, "echo hi", 30) == expected


def test_event_labels_are_codexs_trust_key_spelling() -> None:
    assert [hook_event_label(e) for e in CODEX_HOOK_EVENTS] == [
        "session_start", "user_prompt_submit", "pre_tool_use", "permission_request",
        "post_tool_use", "stop", "subagent_start", "subagent_stop"]


def test_session_hooks_are_one_group_per_event_each_trusted_by_its_hash() -> None:
    hooks = codex_session_hooks(COMMAND)
    flags = hooks.overrides()
    assert flags[0::2] == ("-c",) * (len(CODEX_HOOK_EVENTS) + 1)
    table = parse_overrides(list(flags[1::2]))["hooks"]
    state = table.pop("state")
    assert list(table) == list(CODEX_HOOK_EVENTS)
    for event in CODEX_HOOK_EVENTS:
        command = shlex.join(hook_argv(COMMAND, Provider.CODEX, event))
        assert table[event] == [{"hooks": [{"type": "command", "command": command,
                                            "timeout": HOOK_TIMEOUT_S}]}]
        key = f"{SESSION_FLAGS_SOURCE}:{hook_event_label(event)}:0:0"
        assert state[key] == {"trusted_hash": hook_trust_hash(event, command,
                                                              HOOK_TIMEOUT_S)}
    assert not any("notify" in flag for flag in flags)  # the person's notify stays theirs


def test_a_changed_hook_is_not_trusted_by_the_old_hash() -> None:
    ours = codex_session_hooks(COMMAND).trust_keys()
    other = codex_session_hooks((*COMMAND[:-1], "hooks")).trust_keys()
    assert ours.keys() == other.keys()
    assert not set(ours.values()) & set(other.values())


@pytest.mark.parametrize("commands", [
    (("Stop", "a"), ("Stop", "b")),       # two groups of one event: keys would shift
    (("Stop", "a\nb"),),
    (("Stop", "  "),),
    (("stop", "a"),),
    (("Stop]\nx", "a"),),
])
def test_session_hooks_refuse_what_would_not_be_one_trusted_line(commands) -> None:
    with pytest.raises(ProviderError):
        SessionHooks(commands=commands, timeout_s=30)


def test_agent_tools_are_approved_by_name_for_this_launch_only() -> None:
    assert set(AGENT_TOOL_NAMES) == {tool["name"] for tool in TOOLS}
    server = McpServer((), ("A",), AGENT_TOOL_NAMES, ENDPOINT)
    config = parse_overrides(list(mcp_overrides(server)[1::2]))["mcp_servers"]["switchboard"]
    assert config["tools"] == {name: {"approval_mode": "approve"} for name in AGENT_TOOL_NAMES}
    assert "default_tools_approval_mode" not in config
    with pytest.raises(ProviderError):
        mcp_overrides(McpServer((), (), ("task_push.approval_mode=x",), ENDPOINT))
    with pytest.raises(ProviderError, match="HTTP endpoint"):
        mcp_overrides(McpServer(("py", "-m", "navigator.cli", "mcp"), ("A",)))


def test_hooks_and_server_come_before_resume() -> None:
    plan = get_adapter("codex").launch_plan(
        LaunchAction.RESUME, SID, "go", None, mcp_server=McpServer((), (), (), ENDPOINT),
        hooks=codex_session_hooks(COMMAND))
    assert plan.argv[-3:] == ("resume", SID, "go")
    assert all(flag == "-c" for flag in plan.argv[1:-3:2])
    assert plan.env == ((ENV_TOKEN, ENDPOINT.token),)  # the token: pane environment only
    assert not any(ENDPOINT.token in part for part in plan.argv)


def test_a_codex_launch_uses_the_persons_codex_home(tmp_path: Path) -> None:
    """No CODEX_HOME of Switchboard's and nothing written: the person's login, config
    and session files stay the ones Codex uses."""
    engine = make_engine(tmp_path)
    engine.home = Home(root=tmp_path, config_path=tmp_path / "config.toml")
    session = {"session_key": "h:codex:pending-1", "provider_session_id": "pending-1",
               "project_id": None}
    try:
        argv, env = _plan(engine, Provider.CODEX, LaunchAction.NEW, session, None)
    finally:
        stop_server(engine.home.run_dir)
    assert "CODEX_HOME" not in env
    assert env[ENV_TRANSPORT] == "http" and len(env[ENV_TOKEN]) == 43
    assert not list(tmp_path.rglob("codex-home")) and not list(tmp_path.rglob("hooks.json"))
    config = parse_overrides([flag for flag in argv[2::2]])
    assert set(config["hooks"]) == {*CODEX_HOOK_EVENTS, "state"}
    assert config["hooks"]["Stop"][0]["hooks"][0]["command"].startswith(
        shlex.quote(sys.executable))
    tools = config["mcp_servers"]["switchboard"]
    assert set(tools["tools"]) == set(AGENT_TOOL_NAMES)
    assert tools["url"].startswith("http://127.0.0.1:") and tools["url"].endswith("/mcp")
    assert tools["bearer_token_env_var"] == ENV_TOKEN
    assert "command" not in tools  # no process of the agent's serves the tools
