"""OpenCode (issue 41), the fourth provider: its launch, per-launch config and plugin.

Not registered yet: ``Provider`` has no ``opencode`` member, so nothing routes a launch
here. Each piece was read from OpenCode 1.18.33's own bundle and checked by running it
(``tests/realcli/test_opencode_probe.py``):

* **Identity.** OpenCode names its sessions itself (``ses_`` and 26 letters or digits)
  and has no flag to choose a new session's id, so a new launch's id is learned from
  the plugin's first ``session.created`` (sent when the first prompt is submitted, not
  at start). ``opencode --session ID`` resumes exactly that session (its next events
  carry the same id); ``--session ID --fork`` starts a copy.
* **Per-launch config, never the person's own.** ``OPENCODE_CONFIG_CONTENT`` is a config
  given inline in the environment, merged last over the person's global and project
  files (they stay in force: their provider, their plugins -- plugin lists are
  concatenated -- and their permissions). Nothing is written into their folders; with
  this variable set OpenCode does not even create its default ``config.json``.
* **Hooks.** A plugin: an ES module given as a ``file://`` spec, written into the
  session's private run folder. It passes only the events of
  :data:`core.providers.opencode_events.OPENCODE_EVENTS` on, one hook process each,
  in order (``<hook command> --provider opencode <event>``, the JSON on stdin); the rest
  (about 90 ``plugin.added`` a launch, one event per streamed chunk) is dropped there.
  The hook argv reaches it as JSON in ``SWITCHBOARD_OPENCODE_HOOK``.
* **Agent tools.** ``mcp.switchboard``: ``{"type": "local", "command": argv,
  "environment": {NAME: "{env:NAME}"}}`` (OpenCode substitutes ``{env:NAME}`` when it
  reads the config, so a value never sits in it), or ``{"type": "remote", "url": ...,
  "headers": {"Authorization": "Bearer {env:SWITCHBOARD_MCP_TOKEN}"}, "oauth": false}``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.model.errors import ProviderError
from core.model.files import write_private
from core.model.session_enums import LaunchAction
from core.providers.agent_http import ENV_TOKEN
from core.providers.base import McpServer
from core.providers.hook_files import check_hook_command
from core.providers.opencode_events import OPENCODE_EVENTS

OPENCODE = "opencode"
"""The provider's name (its ``Provider`` value once registered) and its binary."""
CONFIG_ENV = "OPENCODE_CONFIG_CONTENT"
HOOK_ENV = "SWITCHBOARD_OPENCODE_HOOK"
PLUGIN_FILE = "switchboard-opencode.js"
MCP_SERVER_NAME = "switchboard"
SESSION_ID = re.compile(r"ses_[0-9A-Za-z]{26}")
"""OpenCode 1.18.33's session ids (``ses_db3705247ffeaxo2gytFH4CNh9``, recorded)."""

PLUGIN_JS = """\
// Switchboard's per-launch OpenCode plugin: the events that show the agent's state,
// each handed to Switchboard's hook command, in order, the event as JSON on stdin.
import { spawn } from "node:child_process";
const HOOK = JSON.parse(process.env.__HOOK_ENV__ || "[]");
const WANTED = new Set(__EVENTS__);
let last = Promise.resolve();
function deliver(name, payload) {
  if (!HOOK.length || !WANTED.has(name)) return;
  last = last.then(() => new Promise((done) => {
    try {
      const child = spawn(HOOK[0], [...HOOK.slice(1), "--provider", "opencode", name],
                          { stdio: ["pipe", "ignore", "ignore"] });
      child.on("error", () => done());
      child.on("close", () => done());
      child.stdin.on("error", () => {});
      child.stdin.end(JSON.stringify(payload));
    } catch { done(); }
  }));
}
export const Switchboard = async () => ({
  event: async ({ event }) => deliver(event.type, event),
  "chat.message": async (input, output) => deliver("chat.message", { input, output }),
  "tool.execute.before": async (input, output) =>
    deliver("tool.execute.before", { input, output }),
  "tool.execute.after": async (input, output) =>
    deliver("tool.execute.after", { input, output }),
});
""".replace("__HOOK_ENV__", HOOK_ENV).replace("__EVENTS__", json.dumps(list(OPENCODE_EVENTS)))


@dataclass(frozen=True)
class OpencodeLaunch:
    """argv and extra environment of one OpenCode process (``LaunchPlan``'s fields once
    the provider is registered); ``session_id`` None: learned from ``session.created``."""

    argv: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    session_id: str | None


def check_session_id(session_id: str | None, what: str) -> str:
    """An OpenCode session id, exactly; anything else is refused before exec (an id
    starting with ``-`` would be read as an option)."""
    if not session_id or not SESSION_ID.fullmatch(session_id):
        raise ProviderError(f"opencode {what} needs an OpenCode session id (ses_ and 26 "
                            f"letters or digits), not {str(session_id)[:64]!r}",
                            code="launch_invalid")
    return session_id


def _check_prompt(prompt: str | None) -> str | None:
    if prompt is None:
        return None
    if not prompt.strip() or "\x00" in prompt:
        raise ProviderError("initial prompt is empty or contains a NUL byte",
                            code="launch_invalid")
    return prompt


def launch_argv(command: Sequence[str], action: LaunchAction, session_id: str | None,
                initial_prompt: str | None, fork_from: str | None = None
                ) -> tuple[str, ...]:
    """``opencode [--prompt P]``, ``opencode --session ID --fork`` or ``opencode --session
    ID``. The prompt goes as the value of ``--prompt``, so one starting with ``-`` is
    still a prompt."""
    argv = list(command)
    if LaunchAction(action) is LaunchAction.RESUME:
        argv += ["--session", check_session_id(session_id, "resume")]
    elif fork_from is not None:
        argv += ["--session", check_session_id(fork_from, "fork"), "--fork"]
    prompt = _check_prompt(initial_prompt)
    if prompt is not None:
        argv += ["--prompt", prompt]
    return tuple(argv)


def mcp_entry(server: McpServer) -> dict[str, Any]:
    """The agent tools as OpenCode's ``mcp.switchboard``: names of variables, never values."""
    if server.http is not None:
        return {"type": "remote", "url": server.http.url, "oauth": False,
                "headers": {"Authorization": f"Bearer {{env:{ENV_TOKEN}}}"}}
    return {"type": "local", "command": list(server.argv),
            "environment": {name: f"{{env:{name}}}" for name in server.env_vars}}


def launch_config(plugin: Path, agent_tools: McpServer | None) -> dict[str, Any]:
    """What ``OPENCODE_CONFIG_CONTENT`` holds: our plugin and MCP server, nothing else."""
    config: dict[str, Any] = {"plugin": [plugin.as_uri()]}
    if agent_tools is not None:
        config["mcp"] = {MCP_SERVER_NAME: mcp_entry(agent_tools)}
    return config


def plan(command: Sequence[str], action: LaunchAction, session_id: str | None,
         initial_prompt: str | None, run_dir: Path, hook_command: Sequence[str],
         agent_tools: McpServer | None, fork_from: str | None = None) -> OpencodeLaunch:
    """One launch: the plugin written (0600) into the private ``run_dir``, the config and
    the hook argv in the environment."""
    hook = check_hook_command(hook_command)
    argv = launch_argv(command, action, session_id, initial_prompt, fork_from)
    plugin = write_private(run_dir / PLUGIN_FILE, PLUGIN_JS)
    env: tuple[tuple[str, str], ...] = (
        (CONFIG_ENV, json.dumps(launch_config(plugin, agent_tools), sort_keys=True)),
        (HOOK_ENV, json.dumps(list(hook))))
    if agent_tools is not None and agent_tools.http is not None:
        env += ((ENV_TOKEN, agent_tools.http.token),)
    resumed = session_id if LaunchAction(action) is LaunchAction.RESUME else None
    return OpencodeLaunch(argv, env, resumed)
