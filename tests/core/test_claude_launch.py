"""What a Claude launch hands the real CLI: settings, MCP config and the ready marker."""

from __future__ import annotations

import io
import json
import shlex
import subprocess
import time
from pathlib import Path

import pytest

from core.agent.mcp_server import serve
from core.model.enums import LaunchAction
from core.model.errors import ProviderError
from core.providers.agent_http import HttpEndpoint
from core.providers.base import LaunchInputs, McpServer
from core.providers.claude import ClaudeAdapter
from core.providers.claude_settings import (
    claude_tool_names,
    fresh_ready_file,
    mcp_wait_command,
    render_claude_launch_settings,
    write_mcp_config,
)

ENDPOINT = HttpEndpoint("http://127.0.0.1:4242/mcp", "t" * 43)


def test_launch_settings_allow_exactly_the_switchboard_tools(tmp_path: Path) -> None:
    from core.model.tool_schemas import TOOLS

    ready = tmp_path / "ready"
    document = json.loads(render_claude_launch_settings(["sb", "hook"], ready))
    allowed = document["permissions"]["allow"]
    assert allowed == [f"mcp__switchboard__{tool['name']}" for tool in TOOLS]
    assert {"mcp__switchboard__task_push", "mcp__switchboard__task_complete_return",
            "mcp__switchboard__transition_claim"} <= set(allowed)
    assert list(document["permissions"]) == ["allow"]  # nothing else: no mode, no deny
    assert claude_tool_names() == tuple(document["permissions"]["allow"])
    first, ours = document["hooks"]["UserPromptSubmit"]
    assert str(ready) in first["hooks"][0]["command"]
    assert ours["hooks"][0]["command"] == "sb hook --provider claude UserPromptSubmit"
    assert "permissions" not in json.loads(render_claude_launch_settings(["sb", "hook"])
                                           )["hooks"]


def test_wait_hook_waits_for_the_servers_marker_and_gives_up_once(tmp_path: Path) -> None:
    """No process of the agent's serves the tools (no ``pgrep``): the hook waits for the
    marker the home's server writes, at most its limit, and only once per launch."""
    ready = tmp_path / "ready"
    command = mcp_wait_command(ready, limit_s=2)
    assert "pgrep" not in command
    started = time.monotonic()
    subprocess.run(["/bin/sh", "-c", command], check=True, timeout=15)
    assert 1 <= time.monotonic() - started < 5  # the limit, in whole wall-clock seconds
    assert Path(f"{ready}.none").exists()
    started = time.monotonic()
    subprocess.run(["/bin/sh", "-c", command], check=True, timeout=10)
    assert time.monotonic() - started < 1  # and only once per launch
    Path(f"{ready}.none").unlink()
    script = f"(sleep 1.5; touch {ready}) >/dev/null 2>&1 & sh -c {shlex.quote(command)}; " \
             "echo waited"
    started = time.monotonic()
    done = subprocess.run(["/bin/sh", "-c", script], capture_output=True, text=True,
                          timeout=20)
    waited = time.monotonic() - started
    assert done.stdout.strip() == "waited" and ready.exists()
    assert Path(f"{ready}.passed").exists()  # later prompts of the launch pass at once
    assert 1.2 < waited < 10, waited


def test_mcp_config_is_the_http_endpoint_with_the_token_and_old_markers_go(
        tmp_path: Path) -> None:
    (tmp_path / "claude-mcp-ready-old").touch()
    fresh_ready_file(tmp_path, "L2")
    assert not (tmp_path / "claude-mcp-ready-old").exists()
    path = write_mcp_config(tmp_path, ENDPOINT)
    assert path.stat().st_mode & 0o777 == 0o600  # it holds the launch's bearer token
    assert json.loads(path.read_text()) == {"mcpServers": {"switchboard": {
        "type": "http", "url": ENDPOINT.url,
        "headers": {"Authorization": f"Bearer {ENDPOINT.token}"}}}}


def test_a_claude_launch_without_the_http_endpoint_is_refused(tmp_path: Path) -> None:
    inputs = LaunchInputs(action=LaunchAction.NEW, session_id="0" * 8 + "-0000-4000-8000-" +
                          "0" * 12, initial_prompt=None, run_dir=tmp_path, launch_id="L1",
                          hook_command=("sb", "hook"),
                          agent_tools=McpServer((), ("SWITCHBOARD_CAPABILITY",)))
    with pytest.raises(ProviderError, match="HTTP endpoint"):
        ClaudeAdapter().plan(inputs)
    assert not (tmp_path / "claude-mcp.json").exists()


def test_server_marks_ready_only_after_listing_tools(tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    lines = [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}},
             {"jsonrpc": "2.0", "method": "notifications/initialized"}]
    out = io.BytesIO()
    serve(io.BytesIO(b"not json\n" + b"".join(json.dumps(m).encode() + b"\n" for m in lines)),
          out, str(ready))
    assert not ready.exists()
    lines.append({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    serve(io.BytesIO(b"".join(json.dumps(m).encode() + b"\n" for m in lines)), out, str(ready))
    assert ready.exists()
