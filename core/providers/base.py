"""The provider port: what the engine may ask of Claude Code or Codex.

An adapter owns everything that differs between the two CLIs: how a launch is
run (``plan``: argv, env and the per-launch files its CLI reads), what a new
session's id is, where and how hooks are installed, and how its hook payloads
parse. It never touches the registry or tmux, so the engine decides when a
launch is authorized and the adapter only says *how* it would be run. Nothing
outside ``core.providers`` branches on a provider: it asks the adapter (or, on
the lean hook path, ``core.providers.traits``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from core.model.enums import LaunchAction, Provider
from core.model.errors import ProviderError
from core.model.session_enums import PENDING_SESSION_PREFIX
from core.model.usage import UsageBatch
from core.providers.agent_http import HttpEndpoint
from core.providers.hooks import HookEvent, parse_hook
from core.providers.version import DEFAULT_TIMEOUT_S, ProviderVersion, probe_version

__all__ = [
    "PENDING_PREFIX",
    "HookEvent",
    "HookPlace",
    "LaunchInputs",
    "LaunchPlan",
    "McpServer",
    "ProviderAdapter",
    "ProviderVersion",
    "check_prompt",
    "check_uuid",
]


@dataclass(frozen=True)
class LaunchPlan:
    """argv and extra environment for one provider process.

    ``session_id`` is the provider identity known before exec (Claude new and
    resume, Codex resume). ``None`` means it is learned from the first
    SessionStart/UserPromptSubmit hook (Codex new), so binding must wait for it.
    ``env`` holds only what the provider needs on top of the surface
    environment (capability and generation markers are the engine's business).
    """

    provider: Provider
    action: LaunchAction
    argv: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = ()
    session_id: str | None = None

    @property
    def env_dict(self) -> dict[str, str]:
        return dict(self.env)

    @property
    def session_id_from_hook(self) -> bool:
        return self.session_id is None


PENDING_PREFIX = PENDING_SESSION_PREFIX


@dataclass(frozen=True)
class McpServer:
    """The agent tools for one launch: the home's ``switchboard server`` endpoint with
    this launch's bearer token (``http``, the only transport the launcher gives), the
    variable *names* of the tool environment (values never appear on a command line),
    and the tools that run without a question."""

    argv: tuple[str, ...]
    """A stdio server's argv: only the Gemini and OpenCode adapters still read it when
    ``http`` is unset (their tests' stand-ins); Claude and Codex refuse a launch without
    ``http``. The launcher passes ``()``."""
    env_vars: tuple[str, ...]
    approved_tools: tuple[str, ...] = ()
    http: HttpEndpoint | None = None
    """The CLI connects to the home's ``switchboard server`` with this launch's token."""

    def __post_init__(self) -> None:
        for tool in self.approved_tools:
            if not re.fullmatch(r"[A-Za-z0-9_-]+", tool):
                raise ProviderError(f"not an MCP tool name: {tool!r}", code="launch_invalid")


@dataclass(frozen=True)
class LaunchInputs:
    """Everything any provider's launch may draw on; each adapter takes what its CLI
    needs (one signature for both, so the launcher never asks which one it has)."""

    action: LaunchAction
    session_id: str
    """The recorded provider session id (``PENDING_PREFIX`` + id until a hook names it)."""
    initial_prompt: str | None
    run_dir: Path
    """A private folder of this session for per-launch files (settings, MCP config)."""
    launch_id: str
    hook_command: tuple[str, ...]
    """The argv prefix of every hook (``<command> --provider P EVENT`` is appended)."""
    agent_tools: McpServer
    fork_from: str | None = None
    """A new session that starts as a fork of this provider session id (``frame fork``):
    the CLI copies that conversation into the new session and leaves the original as it
    was (Claude ``--resume ID --fork-session``, Codex ``fork ID``)."""


@dataclass(frozen=True)
class HookPlace:
    """Where a person asked ``switchboard hooks install`` to put a provider's hooks:
    the options given (each provider accepts its own) and the default settings file."""

    settings: Path | None = None
    project: Path | None = None
    codex_home: Path | None = None
    default_settings: Path | None = None
    """The settings file used when none is named (Switchboard's own, in its run dir)."""


class ProviderAdapter(Protocol):
    """One provider CLI; implementations are ClaudeAdapter and CodexAdapter.

    The attributes are read-only properties: the adapters are frozen dataclasses.
    """

    @property
    def provider(self) -> Provider: ...

    @property
    def command(self) -> tuple[str, ...]: ...

    @property
    def hook_events(self) -> tuple[str, ...]: ...

    def probe_version(self, *, timeout: float = ...) -> ProviderVersion: ...

    def launch_plan(
        self,
        action: LaunchAction,
        session_id: str | None,
        initial_prompt: str | None,
        settings_path: Path | None,
    ) -> LaunchPlan: ...

    def launch_argv(
        self,
        action: LaunchAction,
        session_id: str | None,
        initial_prompt: str | None,
        settings_path: Path | None,
    ) -> list[str]: ...

    def parse_hook(self, event: str, payload: bytes | str) -> HookEvent: ...

    def plan(self, inputs: LaunchInputs) -> LaunchPlan:
        """The launch as this CLI runs it, writing the per-launch files it reads."""
        ...

    def new_session_id(self, fresh_id: str) -> str:
        """The id recorded for a new session: ``fresh_id`` when the CLI takes an id
        chosen before exec, else a provisional one the first hook replaces."""
        ...

    def hook_location(self, place: HookPlace) -> Path:
        """Where ``hooks install`` writes, from the options the person gave (an
        option meant for the other provider is refused by name)."""
        ...

    def hook_files(self, location: Path) -> tuple[Path, ...]:
        """The files an install at ``location`` writes."""
        ...

    def hook_dir(self, location: Path) -> Path:
        """The folder an install at ``location`` may create (and uninstall removes)."""
        ...

    def render_hook_files(self, hook_command: Sequence[str],
                          originals: Sequence[bytes | None]) -> tuple[bytes, ...]:
        """The new content of each of ``hook_files``, given their original bytes."""
        ...

    def install_hint(self, location: Path) -> str | None:
        """A line telling the person how to use an installed location, if any."""
        ...

    def read_usage(self, data: bytes, state: dict[str, Any],
                   now_ms: int | None = None) -> UsageBatch:
        """Token usage and limit hits in what the CLI's own usage file gained (whole
        lines of ``data``; ``state`` carries what a later read needs)."""
        ...


class AdapterCommon:
    """What every adapter does the same way; subclasses add ``launch_plan``."""

    provider: Provider
    command: tuple[str, ...]

    def probe_version(self, *, timeout: float = DEFAULT_TIMEOUT_S) -> ProviderVersion:
        return probe_version(self.provider, self.command, timeout=timeout)

    def launch_plan(self, action: LaunchAction, session_id: str | None,
                    initial_prompt: str | None, settings_path: Path | None) -> LaunchPlan:
        raise NotImplementedError("each adapter builds its own launch plan")

    def launch_argv(self, action: LaunchAction, session_id: str | None,
                    initial_prompt: str | None, settings_path: Path | None) -> list[str]:
        return list(self.launch_plan(action, session_id, initial_prompt, settings_path).argv)

    def parse_hook(self, event: str, payload: bytes | str) -> HookEvent:
        return parse_hook(self.provider, event, payload)

    def install_hint(self, location: Path) -> str | None:
        return None


def check_uuid(provider: Provider, session_id: str | None, *, what: str) -> str:
    """Exact session identity is a UUID; anything else is refused before exec."""
    from uuid import UUID

    if not session_id:
        raise ProviderError(f"{provider.value} {what} needs a session id", code="launch_invalid")
    try:
        parsed = UUID(session_id)
    except ValueError:
        raise ProviderError(
            f"{provider.value} session id must be a UUID, not {session_id[:64]!r}",
            code="launch_invalid",
        ) from None
    if str(parsed) != session_id.lower() or len(session_id) != 36:
        raise ProviderError(
            f"{provider.value} session id must be a canonical 36-character UUID: {session_id!r}",
            code="launch_invalid",
        )
    return session_id


def check_prompt(provider: Provider, initial_prompt: str | None) -> str | None:
    """An initial prompt is one positional argument; refuse shapes a CLI could misread."""
    if initial_prompt is None:
        return None
    if not initial_prompt.strip():
        raise ProviderError("initial prompt is empty", code="launch_invalid")
    if initial_prompt.lstrip().startswith("-"):
        raise ProviderError(
            f"{provider.value} would read an initial prompt starting with '-' as an option",
            code="launch_invalid",
        )
    if "\x00" in initial_prompt:
        raise ProviderError("initial prompt contains a NUL byte", code="launch_invalid")
    return initial_prompt
