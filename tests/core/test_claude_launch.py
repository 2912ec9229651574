"""What a Claude launch hands the real CLI: settings, MCP config and the ready marker."""

from __future__ import annotations

import io
import json
import shlex
import subprocess
import time
from pathlib import Path

from core.agent.mcp_server import serve
from core.model.tool_schemas import ENV_READY_FILE
from core.providers.claude_settings import (
    MCP_UNSEEN_S,
    claude_tool_names,
    fresh_ready_file,
    mcp_wait_command,
    render_claude_launch_settings,
    write_mcp_config,
)
from core.runtime.launcher import MCP_SERVER_ARGV


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


def test_wait_hook_gives_up_once_without_our_server_and_waits_for_it(tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    limit = MCP_UNSEEN_S + 15
    command = mcp_wait_command(ready, limit_s=limit)
    started = time.monotonic()
    subprocess.run(["/bin/sh", "-c", command], check=True, timeout=limit + 5)
    # No `navigator.cli mcp` child: it gives up after the unseen grace (wall clock, whole
    # seconds), not after the longer limit.
    assert MCP_UNSEEN_S - 1 <= time.monotonic() - started < MCP_UNSEEN_S + 3
    assert Path(f"{ready}.none").exists()
    started = time.monotonic()
    subprocess.run(["/bin/sh", "-c", command], check=True, timeout=10)
    assert time.monotonic() - started < 1  # and only once per launch
    Path(f"{ready}.none").unlink()
    # Our "server" is a child of the shell that runs the hook (its $PPID), as under Claude.
    script = (f"(exec -a 'python -m navigator.cli mcp' sleep 30) >/dev/null 2>&1 & s=$!; "
              f"(sleep 1.5; touch {ready}) >/dev/null 2>&1 & "
              f"sleep 0.3; sh -c {shlex.quote(command)}; echo waited; kill $s")
    started = time.monotonic()
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=20)
    waited = time.monotonic() - started
    assert done.stdout.strip() == "waited" and ready.exists()
    assert 1.2 < waited < 10, waited


def test_mcp_config_names_the_ready_file_and_old_markers_go(tmp_path: Path) -> None:
    (tmp_path / "claude-mcp-ready-old").touch()
    ready = fresh_ready_file(tmp_path, "L2")
    assert not (tmp_path / "claude-mcp-ready-old").exists()
    body = json.loads(write_mcp_config(tmp_path, MCP_SERVER_ARGV, ready).read_text())
    server = body["mcpServers"]["switchboard"]
    assert server["args"][-2:] == ["navigator.cli", "mcp"]
    assert server["env"] == {ENV_READY_FILE: str(ready)}


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
