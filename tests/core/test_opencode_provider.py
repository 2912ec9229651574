"""The OpenCode adapter pieces (issue 41): argv, per-launch config, plugin, refusals."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from core.model.errors import ProviderError
from core.model.files import private_dir
from core.model.session_enums import LaunchAction
from core.providers.agent_http import ENV_TOKEN, HttpEndpoint
from core.providers.base import McpServer
from core.providers.opencode import (
    CONFIG_ENV,
    HOOK_ENV,
    PLUGIN_FILE,
    PLUGIN_JS,
    USAGE_ENV,
    launch_argv,
    plan,
)
from core.providers.opencode_events import OPENCODE_EVENTS
from core.providers.opencode_usage import USAGE_FILE

ID = "ses_db3705247ffeaxo2gytFH4CNh9"
HOOK = ("/usr/bin/switchboard", "hook")


def test_argv_new_resume_fork_and_a_prompt_that_looks_like_an_option() -> None:
    assert launch_argv(("opencode",), LaunchAction.NEW, None, None) == ("opencode",)
    assert launch_argv(("opencode",), LaunchAction.RESUME, ID, None) == \
        ("opencode", "--session", ID)
    assert launch_argv(("opencode",), LaunchAction.NEW, None, None, fork_from=ID) == \
        ("opencode", "--session", ID, "--fork")
    assert launch_argv(("opencode",), LaunchAction.NEW, None, "--help me") == \
        ("opencode", "--prompt=--help me")


@pytest.mark.parametrize("bad", [None, "", "--help", "ses_short", ID + "x",
                                 "ses_db3705247ffeaxo2gytFH4CN;h", "../ses_db3705247ffeaxo2gy"])
def test_a_resume_id_that_is_not_an_opencode_id_is_refused_and_nothing_is_written(
        tmp_path: Path, bad: str | None) -> None:
    run_dir = private_dir(tmp_path / "run")
    with pytest.raises(ProviderError, match="OpenCode session id"):
        plan(("opencode",), LaunchAction.RESUME, bad, None, run_dir, HOOK, None)
    assert list(run_dir.iterdir()) == []


def test_plan_writes_a_private_plugin_and_passes_only_names_of_secrets(tmp_path: Path) -> None:
    run_dir = private_dir(tmp_path / "run")
    http = McpServer(("switchboard", "mcp"), ("SWITCHBOARD_CAP",),
                     http=HttpEndpoint("http://127.0.0.1:9/mcp", "tok-secret-123"))
    launch = plan(("opencode",), LaunchAction.NEW, None, None, run_dir, HOOK, http)
    env = dict(launch.env)
    plugin = run_dir / PLUGIN_FILE
    assert plugin.read_text(encoding="utf-8") == PLUGIN_JS
    assert stat.S_IMODE(plugin.stat().st_mode) == 0o600
    config = json.loads(env[CONFIG_ENV])
    assert config["plugin"] == [plugin.as_uri()]
    assert config["mcp"]["switchboard"] == {
        "type": "remote", "url": "http://127.0.0.1:9/mcp", "oauth": False,
        "headers": {"Authorization": f"Bearer {{env:{ENV_TOKEN}}}"}, "timeout": 30_000}
    assert "tok-secret-123" not in env[CONFIG_ENV] and env[ENV_TOKEN] == "tok-secret-123"
    assert json.loads(env[HOOK_ENV]) == list(HOOK)
    assert env[USAGE_ENV] == str(run_dir / USAGE_FILE)
    assert "permission" not in config  # no approved tools: the person's rules alone
    stdio = McpServer(("switchboard", "mcp"), ("SWITCHBOARD_CAP",))  # no HTTP endpoint
    with pytest.raises(ProviderError, match="HTTP endpoint"):
        plan(("opencode",), LaunchAction.NEW, None, None, private_dir(tmp_path / "r2"), HOOK,
             stdio)
    assert list((tmp_path / "r2").iterdir()) == []

def test_the_plugin_passes_on_exactly_the_events_of_the_table() -> None:
    assert f"new Set({json.dumps(list(OPENCODE_EVENTS))})" in PLUGIN_JS
    assert f"process.env.{HOOK_ENV}" in PLUGIN_JS and "__" not in PLUGIN_JS


def test_a_hook_command_with_a_newline_is_refused(tmp_path: Path) -> None:
    run_dir = private_dir(tmp_path / "run")
    with pytest.raises(ProviderError):
        plan(("opencode",), LaunchAction.NEW, None, None, run_dir, ("a\nb",), None)
    assert list(run_dir.iterdir()) == []


def test_each_approved_tool_is_allowed_by_its_opencode_name_and_no_other(
        tmp_path: Path) -> None:
    run_dir = private_dir(tmp_path / "run")
    tools = McpServer(("switchboard", "mcp"), ("SWITCHBOARD_CAP",),
                      approved_tools=("transition_claim", "push-task"),
                      http=HttpEndpoint("http://127.0.0.1:9/mcp", "tok"))
    config = json.loads(dict(plan(("opencode",), LaunchAction.NEW, None, None, run_dir, HOOK,
                                  tools).env)[CONFIG_ENV])
    assert config["permission"] == {"switchboard_transition_claim": "allow",
                                    "switchboard_push-task": "allow"}


def test_the_plugin_records_only_completed_assistant_messages_and_names_the_file() -> None:
    assert f"process.env.{USAGE_ENV}" in PLUGIN_JS
    assert 'info?.role !== "assistant" || !info.time?.completed' in PLUGIN_JS
    assert "transcript_path: USAGE" in PLUGIN_JS and "mode: 0o600" in PLUGIN_JS
