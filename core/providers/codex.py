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

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.model.enums import LaunchAction, Provider
from core.model.errors import ConfigError, ProviderError
from core.model.usage import UsageBatch
from core.providers.agent_http import ENV_TOKEN
from core.providers.base import (
    PENDING_PREFIX,
    AdapterCommon,
    HookPlace,
    LaunchInputs,
    LaunchPlan,
    McpServer,
    check_prompt,
    check_uuid,
)
from core.providers.codex_config import SessionHooks, toml_string
from core.providers.hooks import CODEX_HOOK_EVENTS

CODEX_HOME_ENV = "CODEX_HOME"
MCP_SERVER_NAME = "switchboard"
TOOL_APPROVED = "approve"
"""``mcp_servers.<name>.tools.<tool>.approval_mode`` that runs the tool without asking."""


def mcp_overrides(server: McpServer) -> tuple[str, ...]:
    """The agent tools as ``-c`` config overrides (dotted key = TOML value): nothing
    is written, and each approved tool runs without a question (this launch only)."""
    if server.http is None:
        raise ProviderError("codex needs the agent tools' HTTP endpoint "
                            "(`switchboard server`) to launch", code="launch_invalid")
    key = f"mcp_servers.{MCP_SERVER_NAME}"
    # Streamable HTTP: Codex sends ``Authorization: Bearer $SWITCHBOARD_MCP_TOKEN`` (the
    # variable's value is in the pane environment, never on the command line).
    flags = ["-c", f"{key}.url={toml_string(server.http.url)}",
             "-c", f"{key}.bearer_token_env_var={toml_string(ENV_TOKEN)}"]
    for tool in server.approved_tools:
        flags += ["-c", f"{key}.tools.{tool}.approval_mode={toml_string(TOOL_APPROVED)}"]
    return tuple(flags)


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
        fork_from: str | None = None,
    ) -> LaunchPlan:
        """``codex [-c ...] [PROMPT]``, ``codex [-c ...] resume ID [PROMPT]`` or, for a
        fork, ``codex [-c ...] fork PARENT [PROMPT]`` (a new thread with PARENT's
        conversation, its id Codex's own, learned from the first hook like a new one's).

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
            argv += mcp_overrides(mcp_server)
        if action is LaunchAction.NEW:
            if session_id is not None:
                raise ProviderError(
                    "codex cannot be started with a chosen session id; it is learned from "
                    "the first hook",
                    code="launch_invalid",
                )
            if fork_from is not None:
                # ``--cd .``: the pane's folder, named; without it a fork started in another
                # folder than the parent's (``frame fork --worktree``) opens on a question
                # (0.166-0.171: "Use session directory / Use current directory").
                argv += ["fork", "--cd", ".", check_uuid(self.provider, fork_from, what="fork")]
        elif fork_from is not None:
            raise ProviderError("a fork starts a new session; it cannot resume one",
                                code="launch_invalid")
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
        if mcp_server is not None and mcp_server.http is not None:
            env += ((ENV_TOKEN, mcp_server.http.token),)
        return LaunchPlan(
            provider=self.provider,
            action=action,
            argv=tuple(argv),
            env=env,
            session_id=session_id,
        )

    def plan(self, inputs: LaunchInputs) -> LaunchPlan:
        """The person's own Codex home (no CODEX_HOME of ours): their login, settings
        and session files; our hooks and tools come as ``-c`` overrides for this
        process. A new thread's id is Codex's own, learned from its first hook."""
        from core.providers.codex_config import codex_session_hooks

        session_id = None if inputs.action is LaunchAction.NEW else inputs.session_id
        return self.launch_plan(inputs.action, session_id, inputs.initial_prompt, None,
                                mcp_server=inputs.agent_tools,
                                hooks=codex_session_hooks(inputs.hook_command),
                                fork_from=inputs.fork_from)

    def new_session_id(self, fresh_id: str) -> str:
        return PENDING_PREFIX + fresh_id  # binding re-keys it when the first hook names it

    def hook_location(self, place: HookPlace) -> Path:
        if place.settings is not None:
            raise ConfigError("--settings is for --provider claude")
        if place.codex_home is not None:
            return Path(place.codex_home)
        return Path(place.project or Path.cwd()) / ".codex"

    def hook_files(self, location: Path) -> tuple[Path, ...]:
        from core.providers.codex_config import CODEX_CONFIG_FILE, CODEX_HOOKS_FILE

        return (location / CODEX_HOOKS_FILE, location / CODEX_CONFIG_FILE)

    def hook_dir(self, location: Path) -> Path:
        return location

    def render_hook_files(self, hook_command: Sequence[str],
                          originals: Sequence[bytes | None]) -> tuple[bytes, ...]:
        from core.providers.codex_config import render_codex_config, render_codex_hooks

        return (render_codex_hooks(hook_command, originals[0]),
                render_codex_config(hook_command, originals[1]))

    def read_usage(self, data: bytes, state: dict[str, Any],
                   now_ms: int | None = None) -> UsageBatch:
        """Codex's rollout: the growth of its ``token_count`` running totals."""
        from core.providers.usage_files import read_codex

        return read_codex(data, state, now_ms)
