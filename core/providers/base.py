"""The provider port: what the engine may ask of Claude Code or Codex.

An adapter is pure: it builds argv and env, probes a version, and parses hook
payloads. It never touches the registry or tmux, so the engine decides when a
launch is authorized and this module only says *how* it would be run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from core.model.enums import LaunchAction, Provider
from core.model.errors import ProviderError
from core.providers.hooks import HookEvent, parse_hook
from core.providers.version import DEFAULT_TIMEOUT_S, ProviderVersion, probe_version

__all__ = [
    "HookEvent",
    "LaunchPlan",
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


def merge_env(plan: LaunchPlan, base: Mapping[str, str]) -> dict[str, str]:
    """The full environment for exec: ``base`` plus the plan's additions."""
    merged = dict(base)
    merged.update(plan.env)
    return merged
