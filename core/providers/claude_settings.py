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


MCP_UNSEEN_S = 20
"""Seconds (wall clock) without our server as a child before the wait gives up: a loaded
machine can take seconds to spawn it (1 s, then 5 s counted in 0.1 s ticks that each
also ran pgrep, let prompts through without the tools under load)."""


MCP_SERVER_PATTERN = "navigator[.]cli mcp"
"""``pgrep -f`` pattern of the agent-tool server (``launcher.MCP_SERVER_ARGV``)."""


def claude_tool_names() -> tuple[str, ...]:
    """The exact names Claude Code gives Switchboard's own tools."""
    from core.model.tool_schemas import TOOLS

    return tuple(f"mcp__{CLAUDE_MCP_SERVER}__{tool['name']}" for tool in TOOLS)


def mcp_wait_command(ready_file: Path, limit_s: int = MCP_WAIT_LIMIT_S, *,
                     http: bool = False) -> str:
    """A UserPromptSubmit hook that holds a prompt until the agent tools are listed.

    Claude Code connects MCP servers in the background and submits a prompt
    (even the one on argv) without waiting, so the model may not see
    ``transition_claim`` yet. The tools it sends are read after the
    UserPromptSubmit hooks finish, so this hook waits until the server wrote
    ``ready_file`` (after answering ``tools/list``), but only while that server
    is a child of this Claude (``$PPID``) and at most ``limit_s``. A server not
    seen for ``MCP_UNSEEN_S`` (not spawned yet, or briefly invisible to
    ``pgrep -f`` while it execs) ends the wait; a CLI that never starts it pays
    that once per launch (``<ready_file>.none`` remembers it). Once listed, the first
    prompt waits ``MCP_SETTLE_S`` more (``.passed`` then lets later ones through at
    once). Both limits are
    wall-clock seconds (``date +%s``), so a slow ``pgrep`` on a loaded machine
    does not stretch them. Plain POSIX sh, silent (hook output would become
    prompt context), always exit 0.
    """
    if http:
        # Over HTTP no process of the agent's serves the tools: the home's server writes
        # the marker when it answers this launch's token's ``tools/list``; nothing else is
        # awaited (``.none`` after the limit: a CLI that never connected pays it once).
        return (f"f={shlex.quote(str(ready_file))}; "
                "[ -e \"$f.passed\" ] || [ -e \"$f.none\" ] && exit 0; "
                "t=$(date +%s); "
                "while [ ! -e \"$f\" ]; do now=$(date +%s); "
                f"if [ $((now - t)) -ge {int(limit_s)} ]; then : > \"$f.none\"; exit 0; fi; "
                f"sleep 0.1; done; sleep {MCP_SETTLE_S}; : > \"$f.passed\"; exit 0")
    alive = (f"pgrep -P \"$PPID\" -f {shlex.quote(MCP_SERVER_PATTERN)} >/dev/null 2>&1")
    return (f"f={shlex.quote(str(ready_file))}; "
            "[ -e \"$f.passed\" ] || [ -e \"$f.none\" ] && exit 0; "
            "t=$(date +%s); seen=$t; s=0; "
            "while [ ! -e \"$f\" ]; do now=$(date +%s); "
            f"[ $((now - t)) -ge {int(limit_s)} ] && exit 0; "
            f"if {alive}; then s=1; seen=$now; fi; "
            f"if [ $((now - seen)) -ge {MCP_UNSEEN_S} ]; then "
            "[ \"$s\" = 1 ] || : > \"$f.none\"; exit 0; fi; "
            f"sleep 0.1; done; sleep {MCP_SETTLE_S}; : > \"$f.passed\"; exit 0")


def render_claude_launch_settings(hook_command: Sequence[str],
                                  mcp_ready_file: Path | None = None, *,
                                  http: bool = False) -> bytes:
    """The ``--settings`` document of one launch: our hooks, the wait for the agent
    tools, and permission for exactly Switchboard's own three tools.

    Flag settings add to the person's own (user, project, local) settings: every
    other tool keeps the person's permission rules, and nothing global changes.
    """
    document = json.loads(render_claude_settings(hook_command))
    if mcp_ready_file is not None:
        document["hooks"]["UserPromptSubmit"].insert(0, {"hooks": [{
            "type": "command", "command": mcp_wait_command(mcp_ready_file, http=http),
            "timeout": MCP_WAIT_LIMIT_S + 15}]})
    document["permissions"] = {"allow": list(claude_tool_names())}
    return (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def write_claude_launch_settings(path: Path, hook_command: Sequence[str],
                                 mcp_ready_file: Path | None = None, *,
                                 http: bool = False) -> Path:
    """Write (atomically, owner-only) the per-launch settings file Switchboard owns."""
    content = render_claude_launch_settings(hook_command, mcp_ready_file, http=http)
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


def write_mcp_config(run_dir: Path, server_argv: Sequence[str],
                     ready_file: Path | None = None, http: HttpEndpoint | None = None) -> Path:
    """Per-launch MCP servers file (0600): the agent tools over stdio, or over HTTP.

    Over stdio the server process inherits the pane environment (Claude adds ``env``
    to its own), so its authority is the pane's capability; ``ready_file`` is where it
    says it has listed its tools. Over HTTP (``http``) the file holds the launch's
    bearer token, which stands for that capability at the home's server (the server
    writes ``ready_file``, registered with the token)."""
    from core.model.tool_schemas import ENV_READY_FILE

    path = run_dir / "claude-mcp.json"
    server: dict[str, object]
    if http is not None:
        server = {"type": "http", "url": http.url,
                  "headers": {"Authorization": f"Bearer {http.token}"}}
    else:
        command, *args = server_argv
        server = {"command": command, "args": args}
        if ready_file is not None:
            server["env"] = {ENV_READY_FILE: str(ready_file)}
    body = {"mcpServers": {CLAUDE_MCP_SERVER: server}}
    text = json.dumps(body, indent=2, sort_keys=True) + "\n"
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        write_private(path, text)
    return path
