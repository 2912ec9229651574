"""Every Claude launch runs agent-team teammates in-process, and the fake agent reads
``--teammate-mode`` exactly as Claude Code 2.1.197 to 2.1.332 do.

Claude Code with ``teammateMode = "auto"`` (or ``tmux``) inside tmux splits the window
it runs in into a pane per teammate; Switchboard's agents run in the view's window, so
each launch says ``--teammate-mode in-process`` (the real-CLI proof is
``tests/realcli/test_teams_realcli.py``). The flag is per launch; the person's settings
are not written.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from core.model.enums import LaunchAction
from core.providers.adapters import get_adapter
from core.providers.agent_http import HttpEndpoint
from core.providers.base import LaunchInputs, McpServer
from core.providers.fake.argv import ArgvError, parse

SID = "6f1c2d3e-4a5b-4c6d-8e7f-0123456789ab"
PARENT = "11111111-1111-4111-8111-111111111111"
IN_PROCESS = ("--teammate-mode", "in-process")


def _inputs(tmp_path: Path, action: LaunchAction, fork_from: str | None = None,
            prompt: str | None = "hello") -> LaunchInputs:
    run_dir = tmp_path / "run"
    run_dir.mkdir(mode=0o700, exist_ok=True)
    return LaunchInputs(action=action, session_id=SID, initial_prompt=prompt, run_dir=run_dir,
                        launch_id="launch-1", hook_command=("/usr/bin/switchboard", "hook"),
                        agent_tools=McpServer((), (), (), HttpEndpoint(
                            "http://127.0.0.1:4242/mcp", "t" * 43)),
                        fork_from=fork_from)


def _options_part(argv: tuple[str, ...]) -> tuple[str, ...]:
    return argv[:argv.index("--")] if "--" in argv else argv


@pytest.mark.parametrize(("action", "fork_from"), [
    (LaunchAction.NEW, None), (LaunchAction.RESUME, None), (LaunchAction.NEW, PARENT)])
def test_every_claude_launch_says_in_process_before_the_prompt(
        tmp_path: Path, action: LaunchAction, fork_from: str | None) -> None:
    plan = get_adapter("claude").plan(_inputs(tmp_path, action, fork_from))
    options = _options_part(plan.argv)
    at = options.index("--teammate-mode")
    assert options[at:at + 2] == IN_PROCESS and options.count("--teammate-mode") == 1
    assert plan.argv[-2:] == ("--", "hello")  # the prompt stays the prompt
    # as the CLI reads it (the fake's commander grammar): the mode, session and prompt
    read = parse(["--provider", "claude", *plan.argv[1:]])
    assert (read.get("teammate_mode"), read.prompt) == ("in-process", "hello")
    # per launch only: the settings file Switchboard writes says nothing about teammates
    settings = json.loads(Path(options[options.index("--settings") + 1]).read_text())
    assert "teammateMode" not in settings


def test_codex_launch_has_no_teammate_flag(tmp_path: Path) -> None:
    plan = get_adapter("codex").launch_plan(LaunchAction.NEW, None, "hi", None)
    assert "--teammate-mode" not in plan.argv


def test_the_fake_accepts_and_refuses_teammate_mode_as_claude_does() -> None:
    for mode in ("auto", "tmux", "iterm2", "in-process"):
        assert parse(["--provider", "claude", "--teammate-mode", mode, "hi"]).get(
            "teammate_mode") == mode
    assert parse(["--provider", "claude", "--teammate-mode=in-process", "hi"]).prompt == "hi"
    with pytest.raises(ArgvError) as caught:
        parse(["--provider", "claude", "--teammate-mode", "split", "hi"])
    # word for word what 2.1.197, 2.1.300 and 2.1.332 print (measured), exit 1
    assert (caught.value.exit_code, caught.value.message) == (
        1, "error: option '--teammate-mode <mode>' argument 'split' is invalid. "
           "Allowed choices are auto, tmux, iterm2, in-process.")


def test_the_fake_agent_process_refuses_a_bad_teammate_mode_and_changes_nothing(
        tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "core.providers.fake.agent", "--provider",
                           "claude", "--session-id", SID, "--teammate-mode", "panes", "--",
                           "hi"], capture_output=True, text=True, cwd=tmp_path, timeout=60,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path),
                               "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    assert done.returncode == 1, done
    assert done.stderr.splitlines()[0].startswith(
        "error: option '--teammate-mode <mode>' argument 'panes' is invalid."), done.stderr
    assert list(tmp_path.iterdir()) == []
