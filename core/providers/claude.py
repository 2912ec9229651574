"""Claude Code: exact session identity up front, hooks via a per-launch settings file.

``claude --session-id UUID`` creates exactly that session (and rejects a reused
or non-UUID id), ``claude --resume UUID`` reopens it; ``--settings FILE`` adds
our hooks without touching the user's global settings. A fork (``frame fork``)
is ``claude --resume PARENT --fork-session --session-id UUID``: Claude Code copies
PARENT's conversation into the new session UUID (``--session-id`` with ``--resume``
is accepted only together with ``--fork-session``), and PARENT stays as it was.

Claude Code parses argv with commander.js, where ``--mcp-config <configs...>``
is variadic: in ``--mcp-config F PROMPT`` the prompt is read as a second config
file and the CLI exits (``MCP config file not found``). The config therefore
goes as one word, ``--mcp-config=F`` (the ``=`` form never opens a variadic
list), and ``--`` ends the options before the prompt, so no option we or a
later version add can swallow it.

Every launch runs agent teams' teammates in-process (``--teammate-mode in-process``):
the CLI's default, ``auto``, splits the tmux window it runs in into a pane per
teammate, and that window is the view (navigator + main), which must keep its two
panes. The flag is per launch: the person's own ``teammateMode`` setting stays as it
is for their own runs. Claude Code 2.1.197 to 2.1.332 accept it (a hidden option,
choices auto, tmux, iterm2, in-process).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.model.enums import LaunchAction, Provider, TeammateMode
from core.model.errors import ConfigError, ProviderError
from core.model.usage import UsageBatch
from core.providers.base import (
    AdapterCommon,
    HookPlace,
    LaunchInputs,
    LaunchPlan,
    check_prompt,
    check_uuid,
)
from core.providers.hooks import CLAUDE_HOOK_EVENTS

TEAMMATE_MODE = ("--teammate-mode", TeammateMode.IN_PROCESS.value)
"""Teammates stay inside the lead's pane: never a split of the view's window. It is the
one value ``[providers.claude] teammates`` accepts (``frames`` is refused: see
``core.config.config.FRAMES_REFUSED``), so no launch needs to read the config for it."""


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
        fork_from: str | None = None,
    ) -> LaunchPlan:
        """``claude [--resume PARENT --fork-session] --session-id|--resume UUID
        --teammate-mode in-process [--settings FILE] [--mcp-config=FILE] [-- PROMPT]``."""
        action = LaunchAction(action)
        flag = "--session-id" if action is LaunchAction.NEW else "--resume"
        session_id = check_uuid(self.provider, session_id, what=f"{action.value} launch")
        prompt = check_prompt(self.provider, initial_prompt)
        argv = list(self.command)
        if fork_from is not None:
            if action is not LaunchAction.NEW:
                raise ProviderError("a fork starts a new session; it cannot resume one",
                                    code="launch_invalid")
            parent = check_uuid(self.provider, fork_from, what="fork")
            if parent == session_id:
                raise ProviderError("a fork needs a session id of its own, not its parent's",
                                    code="launch_invalid")
            argv += ["--resume", parent, "--fork-session"]
        argv += [flag, session_id, *TEAMMATE_MODE]
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

    def plan(self, inputs: LaunchInputs) -> LaunchPlan:
        """Claude takes our session id, a per-launch ``--settings`` file (our hooks, the
        wait for the agent tools, their permission) and ``--mcp-config`` file."""
        from core.providers import claude_settings

        http = inputs.agent_tools.http
        if http is None:
            raise ProviderError("claude needs the agent tools' HTTP endpoint "
                                "(`switchboard server`) to launch", code="launch_invalid")
        ready = claude_settings.fresh_ready_file(inputs.run_dir, inputs.launch_id)
        settings = claude_settings.write_claude_launch_settings(
            inputs.run_dir / "claude-settings.json", inputs.hook_command, ready)
        mcp_config = claude_settings.write_mcp_config(inputs.run_dir, http)
        return self.launch_plan(inputs.action, inputs.session_id, inputs.initial_prompt,
                                settings, mcp_config=mcp_config, fork_from=inputs.fork_from)

    def new_session_id(self, fresh_id: str) -> str:
        return fresh_id  # ``claude --session-id UUID`` creates exactly that session

    def hook_location(self, place: HookPlace) -> Path:
        if place.project is not None or place.codex_home is not None:
            raise ConfigError("--project and --codex-home are for --provider codex")
        chosen = place.settings or place.default_settings
        if chosen is None:
            raise ConfigError("name the Claude settings file with --settings FILE")
        return chosen

    def hook_files(self, location: Path) -> tuple[Path, ...]:
        return (location,)

    def hook_dir(self, location: Path) -> Path:
        return location.parent

    def render_hook_files(self, hook_command: Sequence[str],
                          originals: Sequence[bytes | None]) -> tuple[bytes, ...]:
        from core.providers.claude_settings import render_claude_settings

        return (render_claude_settings(hook_command, originals[0]),)

    def install_hint(self, location: Path) -> str | None:
        return f"launch with: claude --settings {location}"

    def read_usage(self, data: bytes, state: dict[str, Any],
                   now_ms: int | None = None) -> UsageBatch:
        """Claude Code's transcript: each assistant message's ``usage``, once per message id."""
        from core.providers.usage_files import read_claude

        return read_claude(data, state, now_ms)
