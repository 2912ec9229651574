"""Gemini CLI (issue 41), the third provider: its adapter, launch, per-launch settings.

Each piece was read from Gemini CLI 0.61.0's own bundle and checked by running it
(``tests/realcli/test_gemini_realcli.py``):

* **Identity.** ``gemini --session-id UUID`` starts a new session with an id chosen
  before exec (a reused id is refused by the CLI; a non-UUID is *not*, so it is checked
  here), and ``gemini --resume UUID`` resumes exactly that session: its SessionStart
  says ``source: resume`` under the same ``session_id``.
* **Per-launch settings, never the person's own.** Gemini CLI reads no settings file
  named on its command line. Its system settings file (``GEMINI_CLI_SYSTEM_SETTINGS_PATH``)
  is read only when the file and every folder above it belong to root, so a person
  cannot point it at a file of theirs. What it does honour is ``GEMINI_CLI_HOME``, the
  folder whose ``.gemini`` it uses instead of ``~/.gemini``. A launch gets a home of its
  own in its private run folder: ``.gemini/settings.json`` there is the person's
  settings with Switchboard's hooks and MCP server added, and every other entry of the
  person's ``~/.gemini`` but the trust file (login, sessions under ``tmp/``) is a symbolic
  link to theirs, so their login and sessions stay in force and a resume finds
  its session where the first launch wrote it. Switchboard writes nothing into their
  files (a trust answer the person gives is saved by the CLI itself, below).
* **Folder trust is the person's.** Gemini CLI asks "Do you trust the files in this
  folder?" in a folder its trust file does not name, and loads no hook and no MCP server
  (the user's own included) until the folder is trusted when it starts. It saves an
  answer by writing a new file and renaming it over ``trustedFolders.json``, which would
  replace the overlay's link with a file of the launch's own: the answer would be lost to
  the person's own CLI and asked again by every other launch. So a launch names the
  person's own file with ``GEMINI_CLI_TRUSTED_FOLDERS_PATH`` (theirs if they set it) and
  the overlay has no entry of that name: an answer given in a Switchboard pane is theirs,
  as when they run Gemini CLI themselves, and a folder is asked about once. Switchboard
  never answers or pre-trusts; an answered question makes the CLI restart itself (exit
  code 199, its parent process starts it again with the same arguments) and the
  restarted CLI is the first to fire SessionStart.
* **Hooks.** ``hooks.<Event>`` groups of ``{"type": "command", "command": ...}``, the
  JSON payload on stdin; arrays of one event from several layers are concatenated, so
  the person's own hooks still run. Switchboard subscribes to ``GEMINI_HOOK_EVENTS``
  (not BeforeModel/AfterModel/BeforeToolSelection, whose payloads carry the whole
  conversation, nor PreCompress, which fires before every model call).
* **Agent tools.** ``mcpServers.switchboard``: a stdio command whose environment names
  only variables (``"$NAME"``: the CLI expands them when it loads the settings, so a
  value never sits in a file), or ``httpUrl`` with ``Authorization: Bearer
  $SWITCHBOARD_MCP_TOKEN``. The approved tools run without a question through a
  per-launch policy file (``--policy``), rules of the user tier that allow exactly
  those tools of this server.
* **No CI variables.** Gemini CLI turns its interactive mode off when its environment
  says CI (``CI``, ``CONTINUOUS_INTEGRATION``, any ``CI_*``: the ``is-in-ci`` check;
  ``CI=true`` or ``GITHUB_ACTIONS=true`` also make it headless), and a pane inherits the
  environment its tmux server was started with. A launch runs it through ``env -u``
  for each of those names (the fixed ones, and every ``CI_*`` the engine's environment
  has), so an agent started from a CI job or a terminal that exports one still gets its
  interactive screen.
* **No fork.** Gemini CLI 0.61.0 has no way to start a new session as a copy of
  another's conversation, so ``frame fork`` of a Gemini task is refused by name.
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.model.enums import LaunchAction, Provider
from core.model.errors import ConfigError, ProviderError
from core.model.files import private_dir, read_bounded, write_private
from core.model.usage import UsageBatch
from core.providers.agent_http import ENV_TOKEN
from core.providers.base import AdapterCommon, HookPlace, LaunchInputs, LaunchPlan, McpServer
from core.providers.hook_files import HOOK_TIMEOUT_S, check_hook_command

GEMINI = Provider.GEMINI.value
"""The provider's name and its binary."""
GEMINI_HOME_ENV = "GEMINI_CLI_HOME"
GEMINI_DIR = ".gemini"
SETTINGS_FILE = "settings.json"
TRUST_FILE = "trustedFolders.json"
TRUST_FILE_ENV = "GEMINI_CLI_TRUSTED_FOLDERS_PATH"
"""Gemini CLI reads and writes folder trust at this path when set (else in its home)."""
OVERLAY_HOME = "gemini-home"
"""The per-launch home inside the session's run folder."""
POLICY_FILE = "gemini-policy.toml"
MCP_SERVER_NAME = "switchboard"
HOOK_NAME = "switchboard"
MAX_SETTINGS_BYTES = 4 * 1024 * 1024
GEMINI_HOOK_EVENTS: tuple[str, ...] = (
    "SessionStart", "BeforeAgent", "BeforeTool", "Notification", "AfterTool", "AfterAgent",
    "SessionEnd",
)
SHARED_ALWAYS: tuple[str, ...] = ("tmp",)
"""Entries of the person's ``~/.gemini`` linked even before the CLI made them there:
``tmp`` holds the sessions (``tmp/<project>/chats``), which must outlive a launch."""


@dataclass(frozen=True)
class GeminiLaunch:
    """argv and extra environment of one Gemini CLI process (``LaunchPlan``'s fields
    once the provider is registered)."""

    argv: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    session_id: str


def _check_uuid(session_id: str | None, what: str) -> str:
    from uuid import UUID

    if not session_id:
        raise ProviderError(f"gemini {what} needs a session id", code="launch_invalid")
    try:
        parsed = UUID(session_id)
    except ValueError:
        raise ProviderError(f"gemini session id must be a UUID, not {session_id[:64]!r}",
                            code="launch_invalid") from None
    if str(parsed) != session_id.lower() or len(session_id) != 36:
        raise ProviderError(
            f"gemini session id must be a canonical 36-character UUID: {session_id!r}",
            code="launch_invalid")
    return session_id


def _check_prompt(prompt: str | None) -> str | None:
    if prompt is None:
        return None
    if not prompt.strip():
        raise ProviderError("initial prompt is empty", code="launch_invalid")
    if prompt.lstrip().startswith("-"):
        raise ProviderError("gemini would read an initial prompt starting with '-' as an "
                            "option", code="launch_invalid")
    if "\x00" in prompt:
        raise ProviderError("initial prompt contains a NUL byte", code="launch_invalid")
    return prompt


def launch_argv(command: Sequence[str], action: LaunchAction, session_id: str,
                initial_prompt: str | None, policy: Path | None = None) -> tuple[str, ...]:
    """``gemini [--policy F] --session-id ID [-i PROMPT]`` or ``gemini ... --resume ID``.

    The initial prompt goes as ``--prompt-interactive`` (``-i``): run it, then stay in the
    session. A positional query would do the same in 0.61.0, but ``-i`` says so by name.
    """
    action = LaunchAction(action)
    argv = list(command)
    if policy is not None:
        argv += ["--policy", str(policy)]
    if action is LaunchAction.NEW:
        argv += ["--session-id", _check_uuid(session_id, "new session")]
    else:
        argv += ["--resume", _check_uuid(session_id, "resume")]
    prompt = _check_prompt(initial_prompt)
    if prompt is not None:
        argv += ["--prompt-interactive", prompt]
    return tuple(argv)


def hook_groups(hook_command: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
    """One group per subscribed event: ``<hook command> --provider gemini EVENT``."""
    command = check_hook_command(hook_command)
    return {event: [{"hooks": [{
        "type": "command", "name": HOOK_NAME,
        "command": shlex.join([*command, "--provider", GEMINI, event]),
        "timeout": HOOK_TIMEOUT_S * 1000}]}]
        for event in GEMINI_HOOK_EVENTS}


def mcp_entry(server: McpServer) -> dict[str, Any]:
    """Our ``mcpServers`` entry: values by variable name only (expanded by the CLI)."""
    if server.http is not None:
        return {"httpUrl": server.http.url,
                "headers": {"Authorization": f"Bearer ${ENV_TOKEN}"}}
    command, *args = server.argv
    return {"command": command, "args": list(args),
            "env": {name: f"${name}" for name in server.env_vars}}


def render_policy(server: McpServer) -> str:
    """The per-launch policy: each approved tool of our server runs without a question."""
    rules = []
    for tool in server.approved_tools:  # names checked by McpServer: [A-Za-z0-9_-]+
        rules.append(f'[[rule]]\ntoolName = "{tool}"\nmcpName = "{MCP_SERVER_NAME}"\n'
                     'decision = "allow"\npriority = 100\n')
    return "\n".join(rules)


def _person_settings(person_gemini: Path) -> dict[str, Any]:
    """The person's own user settings, parsed (absent: none). Unreadable or not a JSON
    object: refused by name, since launching without them would change their CLI."""
    path = person_gemini / SETTINGS_FILE
    if not path.exists():
        return {}
    data = read_bounded(path, MAX_SETTINGS_BYTES, "Gemini CLI settings")
    try:
        parsed = json.loads(_strip_comments(data.decode("utf-8")))
    except (UnicodeDecodeError, ValueError) as exc:
        raise ProviderError(f"{path} is not valid JSON ({exc}); fix it and launch again",
                            code="launch_invalid") from None
    if not isinstance(parsed, dict):
        raise ProviderError(f"{path} must hold a JSON object; fix it and launch again",
                            code="launch_invalid")
    return parsed


def _strip_comments(text: str) -> str:
    """Gemini CLI accepts ``//`` and ``/* */`` comments in its settings (strip-json-comments);
    drop them outside strings so ``json`` reads the same object."""
    out: list[str] = []
    i, n, in_string = 0, len(text), False
    while i < n:
        char = text[i]
        if in_string:
            out.append(char)
            if char == "\\" and i + 1 < n:
                out.append(text[i + 1])
                i += 1
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
            out.append(char)
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
            continue
        else:
            out.append(char)
        i += 1
    return "".join(out)


def launch_settings(person: Mapping[str, Any], hook_command: Sequence[str],
                    server: McpServer | None) -> dict[str, Any]:
    """The person's settings with our hook groups appended after theirs and our MCP
    server added (a server of theirs named ``switchboard`` is replaced for this launch)."""
    merged = json.loads(json.dumps(person))
    hooks = merged.get("hooks")
    if not isinstance(hooks, dict):
        hooks = {}
    for event, groups in hook_groups(hook_command).items():
        theirs = hooks.get(event)
        hooks[event] = [*(theirs if isinstance(theirs, list) else []), *groups]
    merged["hooks"] = hooks
    if server is not None:
        servers = merged.get("mcpServers")
        servers = dict(servers) if isinstance(servers, dict) else {}
        servers[MCP_SERVER_NAME] = mcp_entry(server)
        merged["mcpServers"] = servers
    return merged


def person_gemini_dir(environ: Mapping[str, str]) -> Path:
    """The person's own ``.gemini``: under their GEMINI_CLI_HOME if they set one."""
    home = environ.get(GEMINI_HOME_ENV) or environ.get("HOME") or str(Path.home())
    return Path(home) / GEMINI_DIR


def write_overlay(run_dir: Path, person_gemini: Path, hook_command: Sequence[str],
                  server: McpServer | None) -> Path:
    """Build this launch's home (``run_dir/gemini-home``) and return it.

    ``.gemini/settings.json`` is ours (0600); every other entry is a link to the person's
    own, made afresh each launch so an entry they added since is seen. A real file the
    CLI left in the overlay (not a link) stays: it is the session's own.
    """
    settings = launch_settings(_person_settings(person_gemini), hook_command, server)
    home = private_dir(run_dir / OVERLAY_HOME)
    ours = private_dir(home / GEMINI_DIR)
    write_private(ours / SETTINGS_FILE, json.dumps(settings, indent=2, sort_keys=True) + "\n")
    private_dir(person_gemini)
    for name in SHARED_ALWAYS:
        private_dir(person_gemini / name)
    stale_trust = ours / TRUST_FILE  # an overlay made before trust was the person's
    if stale_trust.is_symlink():
        stale_trust.unlink()
    for entry in sorted(person_gemini.iterdir()):
        if entry.name in (SETTINGS_FILE, TRUST_FILE):
            continue
        link = ours / entry.name
        if link.is_symlink():
            link.unlink()
        elif link.exists():
            continue
        os.symlink(entry, link)
    return home


def person_trust_file(environ: Mapping[str, str]) -> Path:
    """The person's own folder-trust file: their GEMINI_CLI_TRUSTED_FOLDERS_PATH, else
    ``trustedFolders.json`` in their own ``.gemini`` (it need not exist yet: Gemini CLI
    creates it at the first answer)."""
    theirs = environ.get(TRUST_FILE_ENV)
    return Path(theirs) if theirs else person_gemini_dir(environ) / TRUST_FILE


def plan(command: Sequence[str], action: LaunchAction, session_id: str,
         initial_prompt: str | None, run_dir: Path, hook_command: Sequence[str],
         agent_tools: McpServer | None, environ: Mapping[str, str]) -> GeminiLaunch:
    """One launch as Gemini CLI runs it, writing its per-launch files in ``run_dir``."""
    home = write_overlay(run_dir, person_gemini_dir(environ), hook_command, agent_tools)
    policy = None
    if agent_tools is not None and agent_tools.approved_tools:
        policy = write_private(run_dir / POLICY_FILE, render_policy(agent_tools))
    env: tuple[tuple[str, str], ...] = ((GEMINI_HOME_ENV, str(home)),
                                        (TRUST_FILE_ENV, str(person_trust_file(environ))))
    if agent_tools is not None and agent_tools.http is not None:
        env += ((ENV_TOKEN, agent_tools.http.token),)
    return GeminiLaunch(argv=launch_argv(command, action, session_id, initial_prompt, policy),
                        env=env, session_id=session_id)


CI_VARIABLES: tuple[str, ...] = ("CI", "CONTINUOUS_INTEGRATION", "GITHUB_ACTIONS")
CI_PREFIX = "CI_"


def without_ci(argv: Sequence[str], environ: Mapping[str, str]) -> tuple[str, ...]:
    """``env -u NAME ... argv``: the CI variables are gone from the CLI's environment
    (module docstring); removing one that is not set is harmless."""
    names = sorted({*CI_VARIABLES, *(k for k in environ if k.startswith(CI_PREFIX))})
    unset = [word for name in names for word in ("-u", name)]
    return ("env", *unset, *argv)


@dataclass(frozen=True)
class GeminiAdapter(AdapterCommon):
    """Gemini CLI: an id chosen before exec, per-launch settings through its home."""

    provider: Provider = Provider.GEMINI
    command: tuple[str, ...] = (GEMINI,)
    hook_events: tuple[str, ...] = GEMINI_HOOK_EVENTS

    def launch_plan(self, action: LaunchAction, session_id: str | None,
                    initial_prompt: str | None, settings_path: Path | None) -> LaunchPlan:
        """argv without per-launch files (``plan`` writes them): Gemini CLI reads no
        settings file named on its command line, so none can be given here."""
        if settings_path is not None:
            raise ProviderError("gemini takes no settings file on its command line; its "
                                "launch settings come from the launch's own home",
                                code="launch_invalid")
        action = LaunchAction(action)
        checked = _check_uuid(session_id, f"{action.value} launch")
        return LaunchPlan(provider=self.provider, action=action, session_id=checked,
                          argv=launch_argv(self.command, action, checked, initial_prompt))

    def plan(self, inputs: LaunchInputs) -> LaunchPlan:
        """The launch's home (settings with our hooks and MCP server, links to the
        person's login and sessions), their own trust file by name, its policy file,
        and argv without CI."""
        if inputs.fork_from is not None:
            raise ProviderError("gemini cannot fork a conversation (Gemini CLI 0.61.0 has "
                                "no fork); push a new task instead", code="launch_invalid")
        launch = plan(self.command, inputs.action, inputs.session_id, inputs.initial_prompt,
                      inputs.run_dir, inputs.hook_command, inputs.agent_tools, os.environ)
        return LaunchPlan(provider=self.provider, action=LaunchAction(inputs.action),
                          argv=without_ci(launch.argv, os.environ), env=launch.env,
                          session_id=launch.session_id)

    def new_session_id(self, fresh_id: str) -> str:
        return fresh_id  # ``gemini --session-id UUID`` creates exactly that session

    def hook_location(self, place: HookPlace) -> Path:
        raise ConfigError("hooks install is not available for gemini: Switchboard's Gemini "
                          "launches carry their hooks in their own settings home")

    def hook_files(self, location: Path) -> tuple[Path, ...]:
        return (location,)

    def hook_dir(self, location: Path) -> Path:
        return location.parent

    def render_hook_files(self, hook_command: Sequence[str],
                          originals: Sequence[bytes | None]) -> tuple[bytes, ...]:
        raise ConfigError("hooks install is not available for gemini")

    def read_usage(self, data: bytes, state: dict[str, Any],
                   now_ms: int | None = None) -> UsageBatch:
        """Gemini CLI's chat record: each reply's ``tokens``, once per message id."""
        from core.providers.gemini_usage import read_gemini

        return read_gemini(data, state, now_ms)
