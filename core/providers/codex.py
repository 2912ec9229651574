"""Codex: the thread id is learned from the first hook; hooks come from a config dir.

Codex has no ``--session-id``: a new launch is plain ``codex [PROMPT]`` and the
thread id arrives in SessionStart/UserPromptSubmit; resume is
``codex resume ID [PROMPT]``. Hook configuration lives in a directory laid out
like ``~/.codex`` (``hooks.json`` + ``config.toml`` with ``notify``): either the
project's ``.codex/`` (no env needed) or a CODEX_HOME passed in the launch env.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from core.enums import LaunchAction, Provider
from core.errors import ProviderError
from core.providers.base import AdapterCommon, LaunchPlan, check_prompt, check_uuid
from core.providers.hooks import CODEX_HOOK_EVENTS

CODEX_HOME_ENV = "CODEX_HOME"


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
    ) -> LaunchPlan:
        """``codex [PROMPT]`` or ``codex resume ID [PROMPT]``.

        ``settings_path``, when given, is a CODEX_HOME directory holding our
        hooks; ``None`` relies on the project's ``.codex/``.
        """
        action = LaunchAction(action)
        prompt = check_prompt(self.provider, initial_prompt)
        argv = list(self.command)
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


