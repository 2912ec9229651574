"""OpenCode (issue 41), the fourth provider: its launch, per-launch config and plugin.

Each piece was read from OpenCode 1.18.33's own bundle and checked by running it
(``tests/realcli/test_opencode_probe.py``, ``test_opencode_adapter_realcli.py``):

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
* **Agent tools.** ``mcp.switchboard``: ``{"type": "remote", "url": ..., "headers":
  {"Authorization": "Bearer {env:SWITCHBOARD_MCP_TOKEN}"}, "oauth": false}`` (OpenCode
  substitutes ``{env:NAME}`` when it reads the config, so the token never sits in it);
  each approved tool gets ``"permission": {"switchboard_<tool>": "allow"}``.
* **Usage.** OpenCode keeps its messages in its own SQLite database; the plugin
  appends each completed assistant message, as OpenCode sent it on its bus, to a
  private ``opencode-usage.jsonl`` in the run folder and names it as the events'
  ``transcript_path`` (``core.providers.opencode_usage``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.model.errors import ConfigError, ProviderError
from core.model.files import write_private
from core.model.session_enums import LaunchAction, Provider
from core.model.usage import UsageBatch
from core.providers.agent_http import ENV_TOKEN
from core.providers.base import (
    PENDING_PREFIX,
    AdapterCommon,
    HookPlace,
    LaunchInputs,
    LaunchPlan,
    McpServer,
)
from core.providers.hook_files import check_hook_command
from core.providers.opencode_events import OPENCODE_EVENTS, is_session_id
from core.providers.opencode_usage import USAGE_FILE

OPENCODE = Provider.OPENCODE.value
"""The provider's name and its binary."""
CONFIG_ENV = "OPENCODE_CONFIG_CONTENT"
HOOK_ENV = "SWITCHBOARD_OPENCODE_HOOK"
USAGE_ENV = "SWITCHBOARD_OPENCODE_USAGE"
PLUGIN_FILE = "switchboard-opencode.js"
MCP_SERVER_NAME = "switchboard"
MCP_TIMEOUT_MS = 30_000
"""How long OpenCode waits for the agent tools' list (and each call) before it gives the
server up ("Failed to get tools": the session has no agent tools at all). 1.18.33's
default is 5 s, which a loaded machine's first ``tools/list`` exceeded (a mixed-tree run
at load 17: the child never claimed its brief), and which ``transition_claim`` may need
itself (it waits up to ``core.agent.tools.CLAIM_WAIT_S``, 20 s, for its presentation)."""

PLUGIN_JS = """\
// Switchboard's per-launch OpenCode plugin: the events that show the agent's state,
// each handed to Switchboard's hook command, in order, the event as JSON on stdin; and
// each completed assistant message, as OpenCode recorded it, appended to the usage file.
import { spawn } from "node:child_process";
import { appendFileSync } from "node:fs";
const HOOK = JSON.parse(process.env.__HOOK_ENV__ || "[]");
const USAGE = process.env.__USAGE_ENV__ || "";
const WANTED = new Set(__EVENTS__);
let last = Promise.resolve();
function deliver(name, payload) {
  if (!HOOK.length || !WANTED.has(name)) return;
  const document = USAGE ? { ...payload, transcript_path: USAGE } : payload;
  last = last.then(() => new Promise((done) => {
    try {
      const child = spawn(HOOK[0], [...HOOK.slice(1), "--provider", "opencode", name],
                          { stdio: ["pipe", "ignore", "ignore"] });
      child.on("error", () => done());
      child.on("close", () => done());
      child.stdin.on("error", () => {});
      child.stdin.end(JSON.stringify(document));
    } catch { done(); }
  }));
}
function record(event) {
  const info = event.type === "message.updated" ? event.properties?.info : undefined;
  if (!USAGE || info?.role !== "assistant" || !info.time?.completed) return;
  try { appendFileSync(USAGE, JSON.stringify(info) + "\\n", { mode: 0o600 }); } catch {}
}
export const Switchboard = async () => ({
  event: async ({ event }) => { record(event); deliver(event.type, event); },
  "chat.message": async (input, output) => deliver("chat.message", { input, output }),
  "tool.execute.before": async (input, output) =>
    deliver("tool.execute.before", { input, output }),
  "tool.execute.after": async (input, output) =>
    deliver("tool.execute.after", { input, output }),
});
""".replace("__HOOK_ENV__", HOOK_ENV).replace("__USAGE_ENV__", USAGE_ENV).replace(
    "__EVENTS__", json.dumps(list(OPENCODE_EVENTS)))


@dataclass(frozen=True)
class OpencodeLaunch:
    """argv and extra environment of one OpenCode process (``LaunchPlan``'s fields);
    ``session_id`` None: learned from ``session.created``."""

    argv: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    session_id: str | None


def check_session_id(session_id: str | None, what: str) -> str:
    """An OpenCode session id, exactly; anything else is refused before exec (an id
    starting with ``-`` would be read as an option)."""
    if not is_session_id(session_id):
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
    """``opencode [--prompt=P]``, ``opencode --session ID --fork`` or ``opencode --session
    ID``. The prompt is joined to ``--prompt`` by ``=``: OpenCode 1.18.33 (yargs) reads a
    separate word starting with ``-`` as an option, so ``--prompt "--help me"`` prints
    its help and exits 1 (measured), while ``--prompt=--help me`` is that prompt."""
    argv = list(command)
    if LaunchAction(action) is LaunchAction.RESUME:
        argv += ["--session", check_session_id(session_id, "resume")]
    elif fork_from is not None:
        argv += ["--session", check_session_id(fork_from, "fork"), "--fork"]
    prompt = _check_prompt(initial_prompt)
    if prompt is not None:
        argv.append(f"--prompt={prompt}")
    return tuple(argv)


def mcp_entry(server: McpServer) -> dict[str, Any]:
    """The agent tools as OpenCode's ``mcp.switchboard``: Streamable HTTP (the only
    transport), the bearer token by variable name, never its value."""
    if server.http is None:
        raise ProviderError("opencode needs the agent tools' HTTP endpoint "
                            "(`switchboard server`) to launch", code="launch_invalid")
    return {"type": "remote", "url": server.http.url, "oauth": False,
            "headers": {"Authorization": f"Bearer {{env:{ENV_TOKEN}}}"},
            "timeout": MCP_TIMEOUT_MS}


def tool_key(tool: str) -> str:
    """The name OpenCode gives an MCP tool, which its ``permission`` rules match:
    ``<server>_<tool>`` (1.18.33's bundle; both parts keep ``[A-Za-z0-9_-]``, which is
    all an approved tool name may hold)."""
    return f"{MCP_SERVER_NAME}_{tool}"


def launch_config(plugin: Path, agent_tools: McpServer | None) -> dict[str, Any]:
    """What ``OPENCODE_CONFIG_CONTENT`` holds: our plugin, our MCP server, and an
    ``allow`` rule for each approved tool of it (merged over the person's rules, so it
    wins for exactly those names and leaves every other rule of theirs as it was)."""
    config: dict[str, Any] = {"plugin": [plugin.as_uri()]}
    if agent_tools is not None:
        config["mcp"] = {MCP_SERVER_NAME: mcp_entry(agent_tools)}
        if agent_tools.approved_tools:
            config["permission"] = {tool_key(tool): "allow"
                                    for tool in agent_tools.approved_tools}
    return config


def plan(command: Sequence[str], action: LaunchAction, session_id: str | None,
         initial_prompt: str | None, run_dir: Path, hook_command: Sequence[str],
         agent_tools: McpServer | None, fork_from: str | None = None) -> OpencodeLaunch:
    """One launch: the plugin written (0600) into the private ``run_dir``, the config,
    the hook argv and the usage file (``run_dir``, created by the plugin, 0600) in the
    environment."""
    hook = check_hook_command(hook_command)
    argv = launch_argv(command, action, session_id, initial_prompt, fork_from)
    config = launch_config(run_dir / PLUGIN_FILE, agent_tools)  # refusals before a write
    write_private(run_dir / PLUGIN_FILE, PLUGIN_JS)
    env: tuple[tuple[str, str], ...] = (
        (CONFIG_ENV, json.dumps(config, sort_keys=True)),
        (HOOK_ENV, json.dumps(list(hook))),
        (USAGE_ENV, str(run_dir / USAGE_FILE)))
    if agent_tools is not None and agent_tools.http is not None:
        env += ((ENV_TOKEN, agent_tools.http.token),)
    resumed = session_id if LaunchAction(action) is LaunchAction.RESUME else None
    return OpencodeLaunch(argv, env, resumed)


INSTALL_DIR = ".opencode"
INSTALL_PLUGIN = Path("plugin") / PLUGIN_FILE
"""``hooks install``: OpenCode loads every ``.opencode/plugin/*.js`` of a project."""


def installed_plugin(hook_command: Sequence[str]) -> str:
    """The plugin ``hooks install`` writes: the launch's, with the hook argv written in
    (no launch environment names it there); no usage file (no run folder)."""
    hook = json.dumps(list(check_hook_command(hook_command)))
    return PLUGIN_JS.replace(f'JSON.parse(process.env.{HOOK_ENV} || "[]")', hook, 1)


@dataclass(frozen=True)
class OpencodeAdapter(AdapterCommon):
    """OpenCode in a view's main pane: ``plan`` above, its events parsed by
    ``core.providers.opencode_events``, its usage read by ``core.providers.opencode_usage``."""

    provider: Provider = Provider.OPENCODE
    command: tuple[str, ...] = (OPENCODE,)
    hook_events: tuple[str, ...] = OPENCODE_EVENTS

    def launch_plan(self, action: LaunchAction, session_id: str | None,
                    initial_prompt: str | None, settings_path: Path | None) -> LaunchPlan:
        """The bare argv (no plugin, no config): what a launch without Switchboard's
        run folder would run. ``settings_path`` has no OpenCode meaning and is refused."""
        if settings_path is not None:
            raise ProviderError("opencode takes no settings file; its per-launch config is "
                                f"{CONFIG_ENV}", code="launch_invalid")
        action = LaunchAction(action)
        argv = launch_argv(self.command, action, session_id, initial_prompt)
        return LaunchPlan(provider=self.provider, action=action, argv=argv,
                          session_id=session_id if action is LaunchAction.RESUME else None)

    def plan(self, inputs: LaunchInputs) -> LaunchPlan:
        """The person's own OpenCode (their config, login and sessions database) with our
        plugin, MCP server and tool rules given inline for this process only. A new
        session's id is OpenCode's own, learned from its first event."""
        session_id = None if inputs.action is LaunchAction.NEW else inputs.session_id
        launch = plan(self.command, inputs.action, session_id, inputs.initial_prompt,
                      inputs.run_dir, inputs.hook_command, inputs.agent_tools,
                      inputs.fork_from)
        return LaunchPlan(provider=self.provider, action=LaunchAction(inputs.action),
                          argv=launch.argv, env=launch.env, session_id=launch.session_id)

    def new_session_id(self, fresh_id: str) -> str:
        return PENDING_PREFIX + fresh_id  # binding re-keys it when session.created names it

    def hook_location(self, place: HookPlace) -> Path:
        if place.settings is not None or place.codex_home is not None:
            raise ConfigError("--settings is for --provider claude and --codex-home for "
                              "--provider codex; name the OpenCode project with --project")
        return Path(place.project or Path.cwd()) / INSTALL_DIR

    def hook_files(self, location: Path) -> tuple[Path, ...]:
        return (location / INSTALL_PLUGIN,)

    def hook_dir(self, location: Path) -> Path:
        return location / INSTALL_PLUGIN.parent

    def render_hook_files(self, hook_command: Sequence[str],
                          originals: Sequence[bytes | None]) -> tuple[bytes, ...]:
        return (installed_plugin(hook_command).encode("utf-8"),)

    def read_usage(self, data: bytes, state: dict[str, Any],
                   now_ms: int | None = None) -> UsageBatch:
        """The completed assistant messages the plugin copied from OpenCode's bus."""
        from core.providers.opencode_usage import read_opencode

        return read_opencode(data, state, now_ms)
