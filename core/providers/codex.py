"""Codex: the thread id is learned from the first hook; hooks come from a config dir.

Codex has no ``--session-id``: a new launch is plain ``codex [PROMPT]`` and the
thread id arrives in SessionStart/UserPromptSubmit; resume is
``codex resume ID [PROMPT]``. Hook configuration lives in a directory laid out
like ``~/.codex`` (``hooks.json`` + ``config.toml`` with ``notify``): either the
project's ``.codex/`` (no env needed) or a CODEX_HOME passed in the launch env.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from core.enums import LaunchAction, Provider
from core.errors import ProviderError
from core.providers.base import AdapterCommon, LaunchPlan, check_prompt, check_uuid
from core.providers.hooks import CODEX_HOOK_EVENTS

CODEX_HOME_ENV = "CODEX_HOME"
MCP_SERVER_NAME = "switchboard"


@dataclass(frozen=True)
class McpServer:
    """A stdio MCP server for one launch: its argv and the variable *names* Codex must
    pass through (Codex starts MCP servers with a cleared environment; values never
    appear on the command line, so the raw capability stays in the pane env only)."""

    argv: tuple[str, ...]
    env_vars: tuple[str, ...]

    def overrides(self) -> tuple[str, ...]:
        """``-c`` config overrides (dotted key = TOML value): nothing is written."""
        key = f"mcp_servers.{MCP_SERVER_NAME}"
        command, *args = self.argv
        return ("-c", f"{key}.command={toml_string(command)}",
                "-c", f"{key}.args={_toml_array(args)}",
                "-c", f"{key}.env_vars={_toml_array(self.env_vars)}")


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
    ) -> LaunchPlan:
        """``codex [-c MCP...] [PROMPT]`` or ``codex [-c MCP...] resume ID [PROMPT]``.

        ``settings_path``, when given, is a CODEX_HOME directory holding our
        hooks; ``None`` relies on the project's ``.codex/``. ``mcp_server`` is
        given as root-level ``-c`` overrides, which Codex applies to ``resume``
        as well.
        """
        action = LaunchAction(action)
        prompt = check_prompt(self.provider, initial_prompt)
        argv = list(self.command)
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


