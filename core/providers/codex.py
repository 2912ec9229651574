"""Codex: the thread id is learned from the first hook; hooks come with the launch.

Codex has no ``--session-id``: a new launch is plain ``codex [PROMPT]`` and the
thread id arrives in SessionStart/UserPromptSubmit; resume is
``codex resume ID [PROMPT]``.

Codex runs in the person's own Codex home (``~/.codex`` or their CODEX_HOME):
their login, settings and sessions stay in force, and ``codex resume ID`` finds
the session file where the first launch wrote it. Switchboard's hooks and MCP
server arrive as ``-c`` overrides, which Codex keeps in a "session flags" config
layer for that process only, so nothing is written into the person's files.

A non-managed hook runs only once trusted: Codex compares the hash of the hook's
normalized definition with ``hooks.state."<key>".trusted_hash`` from the user or
session-flag layers (the "Hooks need review" dialog writes that into
``config.toml``). Switchboard passes the trust of exactly its own hook
definitions as session flags too, so they run at once; a hook that differs by a
byte hashes differently and stays untrusted. The hash (Codex 0.171.0,
``codex-rs/hooks`` discovery): sha256 over the compact, key-sorted JSON of
``{"event_name": <snake_case event>, "hooks": [{"type": "command", "command":
..., "timeout": N, "async": false}]}`` (a group without matcher), written
``sha256:<hex>``; the key is ``/<session-flags>/config.toml:<event>:<group>:<hook>``.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from core.model.enums import LaunchAction, Provider
from core.model.errors import ProviderError
from core.providers.base import AdapterCommon, LaunchPlan, check_prompt, check_uuid
from core.providers.hooks import CODEX_HOOK_EVENTS

CODEX_HOME_ENV = "CODEX_HOME"
MCP_SERVER_NAME = "switchboard"
SESSION_FLAGS_SOURCE = "/<session-flags>/config.toml"
"""How Codex names the config layer that ``-c`` overrides form, in hook trust keys."""
TOOL_APPROVED = "approve"
"""``mcp_servers.<name>.tools.<tool>.approval_mode`` that runs the tool without asking."""


@dataclass(frozen=True)
class McpServer:
    """A stdio MCP server for one launch: its argv and the variable *names* Codex must
    pass through (Codex starts MCP servers with a cleared environment; values never
    appear on the command line, so the raw capability stays in the pane env only)."""

    argv: tuple[str, ...]
    env_vars: tuple[str, ...]
    approved_tools: tuple[str, ...] = ()
    """Tools of this server that run without an approval question (this launch only)."""

    def overrides(self) -> tuple[str, ...]:
        """``-c`` config overrides (dotted key = TOML value): nothing is written."""
        key = f"mcp_servers.{MCP_SERVER_NAME}"
        command, *args = self.argv
        flags = ["-c", f"{key}.command={toml_string(command)}",
                 "-c", f"{key}.args={_toml_array(args)}",
                 "-c", f"{key}.env_vars={_toml_array(self.env_vars)}"]
        for tool in self.approved_tools:
            if not re.fullmatch(r"[A-Za-z0-9_-]+", tool):
                raise ProviderError(f"not an MCP tool name: {tool!r}", code="launch_invalid")
            flags += ["-c", f"{key}.tools.{tool}.approval_mode={toml_string(TOOL_APPROVED)}"]
        return tuple(flags)


def hook_event_label(event: str) -> str:
    """``PermissionRequest`` -> ``permission_request``: the event as trust keys spell it."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", event).lower()


def hook_trust_hash(event: str, command: str, timeout_s: int) -> str:
    """The hash Codex computes for one command hook alone in a matcher-less group."""
    identity = {"event_name": hook_event_label(event),
                "hooks": [{"type": "command", "command": command, "timeout": timeout_s,
                           "async": False}]}
    canonical = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class SessionHooks:
    """Command hooks for one launch, each given as ``-c hooks.<Event>`` and trusted
    by the hash of exactly that definition (``-c hooks.state``)."""

    commands: tuple[tuple[str, str], ...]
    """(event, shell command line) pairs, one per event."""
    timeout_s: int

    def __post_init__(self) -> None:
        events = [event for event, _ in self.commands]
        if len(set(events)) != len(events):
            raise ProviderError("one hook per event: the trust keys count groups",
                                code="launch_invalid")
        for event, command in self.commands:
            if not re.fullmatch(r"[A-Z][A-Za-z]+", event):
                raise ProviderError(f"not a Codex hook event: {event!r}", code="launch_invalid")
            if not command.strip() or "\n" in command or "\x00" in command:
                raise ProviderError("a hook command must be one non-empty line",
                                    code="launch_invalid")
        if self.timeout_s < 1:
            raise ProviderError("a hook timeout is at least 1 s", code="launch_invalid")

    def trust_keys(self) -> dict[str, str]:
        """Trust key -> trusted hash, as Codex's hook list would show them."""
        return {f"{SESSION_FLAGS_SOURCE}:{hook_event_label(event)}:0:0":
                hook_trust_hash(event, command, self.timeout_s)
                for event, command in self.commands}

    def overrides(self) -> tuple[str, ...]:
        flags: list[str] = []
        for event, command in self.commands:
            flags += ["-c", f"hooks.{event}=[{{hooks = [{{type = \"command\", command = "
                            f"{toml_string(command)}, timeout = {self.timeout_s}}}]}}]"]
        if self.commands:
            state = ", ".join(f"{toml_string(key)} = {{trusted_hash = {toml_string(value)}}}"
                              for key, value in self.trust_keys().items())
            flags += ["-c", f"hooks.state={{{state}}}"]
        return tuple(flags)


def toml_string(value: str) -> str:
    """A TOML basic string.

    JSON string escapes are TOML basic-string escapes, except raw DEL (TOML forbids it).
    """
    return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")


def _toml_array(values: Iterable[str]) -> str:
    return "[" + ", ".join(toml_string(v) for v in values) + "]"


@dataclass(frozen=True)
class CodexAdapter(AdapterCommon):
    provider: Provider = Provider.CODEX
    command: tuple[str, ...] = ("codex",)
    hook_events: tuple[str, ...] = CODEX_HOOK_EVENTS


    def launch_plan(
        self,
        action: LaunchAction,
        session_id: str | None,
        initial_prompt: str | None,
        settings_path: Path | None,
        mcp_server: McpServer | None = None,
        hooks: SessionHooks | None = None,
    ) -> LaunchPlan:
        """``codex [-c ...] [PROMPT]`` or ``codex [-c ...] resume ID [PROMPT]``.

        ``hooks`` and ``mcp_server`` are root-level ``-c`` overrides, which
        Codex applies to ``resume`` as well. ``settings_path``, when given,
        points CODEX_HOME at a directory of its own (hooks installed there by
        ``switchboard hooks install``); Switchboard's own launches pass ``None``
        so Codex uses the person's home and login.
        """
        action = LaunchAction(action)
        prompt = check_prompt(self.provider, initial_prompt)
        argv = list(self.command)
        if hooks is not None:
            argv += hooks.overrides()
        if mcp_server is not None:
            argv += mcp_server.overrides()
        if action is LaunchAction.NEW:
            if session_id is not None:
                raise ProviderError(
                    "codex cannot be started with a chosen session id; it is learned from "
                    "the first hook",
                    code="launch_invalid",
                )
        else:
            session_id = check_uuid(self.provider, session_id, what="resume")
            argv += ["resume", session_id]
        if prompt is not None:
            argv.append(prompt)
        env: tuple[tuple[str, str], ...] = ()
        if settings_path is not None:
            home = Path(settings_path)
            if not home.is_absolute():
                raise ProviderError(
                    f"CODEX_HOME must be an absolute path, not {str(home)!r}",
                    code="launch_invalid",
                )
            env = ((CODEX_HOME_ENV, str(home)),)
        return LaunchPlan(
            provider=self.provider,
            action=action,
            argv=tuple(argv),
            env=env,
            session_id=session_id,
        )


