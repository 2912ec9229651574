"""Claude Code's per-launch files: the ``--settings`` document (our hooks, the wait
for the agent tools, permission for exactly Switchboard's tools) and the
``--mcp-config`` file, plus the settings an explicit ``hooks install`` writes.

Flag settings add to the person's own (user, project, local) settings: nothing
global changes.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from core.model.enums import Provider
from core.model.files import write_private
from core.providers.hook_files import (
    check_hook_command,
    hook_groups,
    merge_hooks,
    read_bytes,
    write_atomic,
)
from core.providers.hooks import CLAUDE_HOOK_EVENTS

if TYPE_CHECKING:
    from core.providers.agent_http import HttpEndpoint


def render_claude_settings(hook_command: Sequence[str], existing: bytes | None = None) -> bytes:
    """A Claude settings document with our hooks for every event we observe."""
    groups = hook_groups(check_hook_command(hook_command), Provider.CLAUDE, CLAUDE_HOOK_EVENTS)
    return merge_hooks(existing, groups, "the Claude settings file")


CLAUDE_MCP_SERVER = "switchboard"
"""The server name in the per-launch ``--mcp-config``; Claude names its tools
``mcp__<server>__<tool>``."""


MCP_WAIT_LIMIT_S = 30
"""How long a prompt waits for the agent tools: Claude's own MCP connect timeout."""


MCP_SETTLE_S = 2
"""After the server has listed its tools, the first prompt of a launch waits this much
longer: Claude adds a server's tools to its request a moment after the reply, and a
prompt let through at once still went out without them (seen with both a new and a
resumed session under load). Later prompts of the launch pass at once (``.passed``)."""


def claude_tool_names() -> tuple[str, ...]:
    """The exact names Claude Code gives Switchboard's own tools."""
    from core.model.tool_schemas import TOOLS

    return tuple(f"mcp__{CLAUDE_MCP_SERVER}__{tool['name']}" for tool in TOOLS)


def mcp_wait_command(ready_file: Path, limit_s: int = MCP_WAIT_LIMIT_S) -> str:
    """A UserPromptSubmit hook that holds a prompt until the agent tools are listed.

    Claude Code connects MCP servers in the background and submits a prompt
    (even the one on argv) without waiting, so the model may not see
    ``transition_claim`` yet. The tools it sends are read after the
    UserPromptSubmit hooks finish, so this hook waits until the home's server wrote
    ``ready_file`` (when it answered this launch's token's ``tools/list``), at most
    ``limit_s``. No process of the agent's serves the tools, so there is nothing else
    to watch: a CLI that never connects pays the limit once per launch (``<ready_file>.none``
    remembers it). Once listed, the first prompt waits ``MCP_SETTLE_S`` more
    (``.passed`` then lets later ones through at once). The limit is wall-clock
    seconds (``date +%s``), so a loaded machine does not stretch it. Plain POSIX sh,
    silent (hook output would become prompt context), always exit 0.
    """
    return (f"f={shlex.quote(str(ready_file))}; "
            "[ -e \"$f.passed\" ] || [ -e \"$f.none\" ] && exit 0; "
            "t=$(date +%s); "
            "while [ ! -e \"$f\" ]; do now=$(date +%s); "
            f"if [ $((now - t)) -ge {int(limit_s)} ]; then : > \"$f.none\"; exit 0; fi; "
            f"sleep 0.1; done; sleep {MCP_SETTLE_S}; : > \"$f.passed\"; exit 0")


def render_claude_launch_settings(hook_command: Sequence[str],
                                  mcp_ready_file: Path | None = None) -> bytes:
    """The ``--settings`` document of one launch: our hooks, the wait for the agent
    tools, and permission for exactly Switchboard's own three tools.

    Flag settings add to the person's own (user, project, local) settings: every
    other tool keeps the person's permission rules, and nothing global changes.
    """
    document = json.loads(render_claude_settings(hook_command))
    if mcp_ready_file is not None:
        document["hooks"]["UserPromptSubmit"].insert(0, {"hooks": [{
            "type": "command", "command": mcp_wait_command(mcp_ready_file),
            "timeout": MCP_WAIT_LIMIT_S + 15}]})
    document["permissions"] = {"allow": list(claude_tool_names())}
    return (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def write_claude_launch_settings(path: Path, hook_command: Sequence[str],
                                 mcp_ready_file: Path | None = None) -> Path:
    """Write (atomically, owner-only) the per-launch settings file Switchboard owns."""
    content = render_claude_launch_settings(hook_command, mcp_ready_file)
    if read_bytes(path) != content:
        write_atomic(path, content, 0o600)
    return path


READY_PREFIX = "claude-mcp-ready-"


def fresh_ready_file(run_dir: Path, launch_id: str) -> Path:
    """This launch's "agent tools listed" marker; earlier launches' markers go, so
    a resume never mistakes its predecessor's server for its own."""
    for old in run_dir.glob(READY_PREFIX + "*"):
        old.unlink(missing_ok=True)
    return run_dir / f"{READY_PREFIX}{launch_id}"


def write_mcp_config(run_dir: Path, http: HttpEndpoint) -> Path:
    """Per-launch MCP servers file (0600): the agent tools at the home's server over MCP
    streamable HTTP. The file holds the launch's bearer token, which stands for the
    pane's capability at that server (so it is private like the capability)."""
    path = run_dir / "claude-mcp.json"
    server = {"type": "http", "url": http.url,
              "headers": {"Authorization": f"Bearer {http.token}"}}
    body = {"mcpServers": {CLAUDE_MCP_SERVER: server}}
    text = json.dumps(body, indent=2, sort_keys=True) + "\n"
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        write_private(path, text)
    return path
