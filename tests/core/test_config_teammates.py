"""``[providers.claude] teammates``: in-process is the default and the one accepted value.

``frames`` is a known value the config refuses with the reason the CLI gives no way to
build it exactly (decisions: "Teammates as frames"); any other value is refused naming
the key and the allowed values; the key is Claude's alone. Every refusal is one line and
the file loads to nothing (``parse_config`` raises, so no half-read config is used).
"""

from __future__ import annotations

import pytest

from core.config.config import FRAMES_REFUSED, parse_config, render_config
from core.model.enums import LaunchAction, Provider, TeammateMode
from core.model.errors import ConfigError
from core.providers.claude import TEAMMATE_MODE, ClaudeAdapter

GEN = "0b6c2b3e-5d0a-4c47-9d3b-2f4f1e8a9c10"
HOST = "1b6c2b3e-5d0a-4c47-9d3b-2f4f1e8a9c11"
SESSION = "7b6c2b3e-5d0a-4c47-9d3b-2f4f1e8a9c17"

BASE = f"""
config_version = 3
generation_id = "{GEN}"
[host]
host_id = "{HOST}"
display_name = "workstation"
"""


def _with(table: str, line: str) -> str:
    return BASE + f"[providers.{table}]\n{line}\n"


def _refusal(text: str) -> str:
    with pytest.raises(ConfigError) as caught:
        parse_config(text, source="config.toml")
    message = str(caught.value)
    assert "\n" not in message, message
    return message


def test_absent_means_in_process_and_matches_the_launch_flag() -> None:
    config = parse_config(BASE)
    assert config.providers[Provider.CLAUDE].teammates is TeammateMode.IN_PROCESS
    # the mode every Claude launch passes is the config's one accepted value
    argv = ClaudeAdapter().launch_plan(LaunchAction.NEW, SESSION, None, None).argv
    flag = argv.index("--teammate-mode")
    assert argv[flag:flag + 2] == TEAMMATE_MODE
    assert TEAMMATE_MODE[1] == TeammateMode.IN_PROCESS.value


def test_in_process_is_accepted_and_renders_back_to_the_same_config() -> None:
    config = parse_config(_with("claude", 'teammates = "in-process"'))
    assert config.providers[Provider.CLAUDE].teammates is TeammateMode.IN_PROCESS
    assert parse_config(render_config(config)) == config


@pytest.mark.parametrize("value, shown", [
    ('"split"', "(got 'split')"),
    ('"In-Process"', "(got 'In-Process')"),
    ("true", "(got boolean)"),
    ("3", "(got integer)"),
])
def test_a_bad_value_names_the_key_and_the_allowed_values(value: str, shown: str) -> None:
    message = _refusal(_with("claude", f"teammates = {value}"))
    assert message.startswith("config.toml: providers.claude.teammates: "), message
    assert "must be one of in-process, frames" in message and shown in message, message


def test_frames_is_refused_with_what_the_cli_lacks() -> None:
    message = _refusal(_with("claude", 'teammates = "frames"'))
    assert message == f"config.toml: providers.claude.teammates: {FRAMES_REFUSED}"
    assert "$TMUX_PANE" in message and 'use "in-process"' in message


@pytest.mark.parametrize("provider", ["codex", "gemini", "opencode"])
def test_only_claude_has_the_key(provider: str) -> None:
    message = _refusal(_with(provider, 'teammates = "in-process"'))
    assert message == (f"config.toml: providers.{provider}.teammates: only "
                       "[providers.claude] has this key (Claude Code's agent teams); "
                       "remove it here")


def test_every_problem_is_still_reported_at_once() -> None:
    text = _with("claude", 'teammates = "frames"\nenabled = "yes"')
    with pytest.raises(ConfigError) as caught:
        parse_config(text, source="config.toml")
    lines = str(caught.value).splitlines()
    assert lines[0] == "config.toml: 2 problems:"
    assert any(line.strip().startswith("providers.claude.enabled:") for line in lines)
    assert any(line.strip() == f"providers.claude.teammates: {FRAMES_REFUSED}"
               for line in lines)
