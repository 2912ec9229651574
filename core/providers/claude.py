"""Claude Code: exact session identity up front, hooks via a per-launch settings file.

``claude --session-id UUID`` creates exactly that session (and rejects a reused
or non-UUID id), ``claude --resume UUID`` reopens it; ``--settings FILE`` adds
our hooks without touching the user's global settings.

Claude Code parses argv with commander.js, where ``--mcp-config <configs...>``
is variadic: in ``--mcp-config F PROMPT`` the prompt is read as a second config
file and the CLI exits (``MCP config file not found``). The config therefore
goes as one word, ``--mcp-config=F`` (the ``=`` form never opens a variadic
list), and ``--`` ends the options before the prompt, so no option we or a
later version add can swallow it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from core.model.enums import LaunchAction, Provider
from core.model.errors import ProviderError
from core.providers.base import AdapterCommon, LaunchPlan, check_prompt, check_uuid
from core.providers.hooks import CLAUDE_HOOK_EVENTS


@dataclass(frozen=True)
class ClaudeAdapter(AdapterCommon):
    provider: Provider = Provider.CLAUDE
    command: tuple[str, ...] = ("claude",)
    hook_events: tuple[str, ...] = CLAUDE_HOOK_EVENTS

    def launch_plan(
        self,
        action: LaunchAction,
        session_id: str | None,
        initial_prompt: str | None,
        settings_path: Path | None,
        mcp_config: Path | None = None,
    ) -> LaunchPlan:
        """``claude --session-id|--resume UUID [--settings FILE] [--mcp-config=FILE]
        [-- PROMPT]``."""
        action = LaunchAction(action)
        flag = "--session-id" if action is LaunchAction.NEW else "--resume"
        session_id = check_uuid(self.provider, session_id, what=f"{action.value} launch")
        prompt = check_prompt(self.provider, initial_prompt)
        argv = [*self.command, flag, session_id]
        if settings_path is not None:
            path = Path(settings_path)
            if not path.is_absolute():
                raise ProviderError(
                    f"claude --settings needs an absolute path, not {str(path)!r}",
                    code="launch_invalid",
                )
            argv += ["--settings", str(path)]
        if mcp_config is not None:
            if not Path(mcp_config).is_absolute():
                raise ProviderError(
                    f"claude --mcp-config needs an absolute path, not {str(mcp_config)!r}",
                    code="launch_invalid",
                )
            argv.append(f"--mcp-config={mcp_config}")
        if prompt is not None:
            argv += ["--", prompt]
        return LaunchPlan(
            provider=self.provider, action=action, argv=tuple(argv), session_id=session_id
        )
