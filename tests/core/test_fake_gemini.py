"""The fake agent as Gemini CLI 0.61.0 (issue 41): it takes the argv the adapter builds,
refuses what the real CLI refuses with its words and exit codes, reads its hooks from the
launch's own settings home, and sends payloads the hook parser reads as the recording.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from core.model.enums import LaunchAction
from core.model.session_enums import Activity, ActivityReason, RuntimePresence
from core.providers.fake import argv as fake_argv
from core.providers.gemini import GeminiAdapter, plan
from core.providers.hooks import parse_hook

SID = "3f0c8a52-1111-4222-8333-944455556677"
ROOT = Path(__file__).resolve().parents[2]
RECORDER = ("import sys, json\n"
            "line = json.dumps(json.loads(sys.stdin.read()))\n"
            "open(sys.argv[1], 'a', encoding='utf-8').write(sys.argv[-1] + '\\t' + line + '\\n')\n")


def _fake(*args: str, env: dict[str, str], cwd: Path,
          stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "core.providers.fake.agent", "--provider",
                           "gemini", *args], input=stdin, capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=60)


@pytest.fixture
def world(tmp_path: Path) -> tuple[dict[str, str], Path, Path]:
    """(environment without CI variables, project folder, hook recorder script)."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("CI", "CONTINUOUS_INTEGRATION", "GEMINI_CLI_HOME")
           and not k.startswith("CI_")}
    env.update(HOME=str(tmp_path / "person"), SWITCHBOARD_HOME=str(tmp_path / "sb"),
               PYTHONPATH=str(ROOT))
    project = tmp_path / "src" / "demo"
    project.mkdir(parents=True)
    recorder = tmp_path / "record.py"
    recorder.write_text(RECORDER, encoding="utf-8")
    return env, project, recorder


def _events(path: Path) -> list[tuple[str, dict]]:
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        event, payload = line.split("\t", 1)
        rows.append((event, json.loads(payload)))
    return rows


def test_the_adapters_argv_is_read_as_gemini_reads_it() -> None:
    plan_argv = GeminiAdapter(command=("gemini",)).launch_plan(
        LaunchAction.NEW, SID, "go on", None).argv
    parsed = fake_argv.parse([*plan_argv[1:], "--provider", "gemini"])
    assert (parsed.session_id, parsed.prompt) == (SID, "go on")
    resumed = fake_argv.parse(["--resume", SID, "--policy", "/p.toml", "--provider", "gemini"])
    assert (resumed.get("resume"), resumed.list_of("policy")) == (SID, ["/p.toml"])
    assert fake_argv.parse(["--provider", "gemini", "two", "words"]).prompt == "two words"


@pytest.mark.parametrize(("argv", "message"), [
    (["--bogus"], "Unknown argument: bogus"),
    (["--session-id"], "Not enough arguments following: session-id"),
    (["--resume", SID, "--session-id", SID], "The flags --resume, --session-id, and "
                                             "--session-file are mutually exclusive"),
    (["-p", "x", "y"], "Cannot use both a positional prompt and the --prompt (-p) flag"),
    (["-p", "x", "-i", "y"], "Cannot use both --prompt (-p) and --prompt-interactive (-i)"),
    (["--approval-mode", "never"], 'Argument: approval-mode, Given: "never"'),
])
def test_what_gemini_refuses_the_fake_refuses(argv: list[str], message: str) -> None:
    with pytest.raises(fake_argv.ArgvError) as refused:
        fake_argv.parse(["--provider", "gemini", *argv])
    assert message in refused.value.message and refused.value.exit_code == 1


def test_a_turn_sends_geminis_events_which_parse_as_the_recording(world) -> None:
    env, project, recorder = world
    out = project.parent / "events.tsv"
    hook = f"{sys.executable} {recorder} {out}"
    done = _fake("--hook-command", hook, "--session-id", SID, env=env, cwd=project,
                 stdin="hello\nTOOLTEST please\ny\n")
    assert done.returncode == 0, done.stderr
    rows = _events(out)
    assert [event for event, _ in rows] == [
        "SessionStart", "BeforeAgent", "AfterAgent", "BeforeAgent", "BeforeTool",
        "Notification", "AfterTool", "AfterAgent", "SessionEnd"]
    outcomes = []
    for event, document in rows:
        assert document["hook_event_name"] == event and document["session_id"] == SID
        parsed = parse_hook("gemini", event, json.dumps(document))
        assert parsed.turn_id is None
        outcomes.append((parsed.activity, parsed.activity_reason, parsed.runtime))
    assert outcomes[0] == (None, None, RuntimePresence.LIVE)
    assert outcomes[3:8] == [(Activity.WORKING, None, None), (Activity.WORKING, None, None),
                             (Activity.NEEDS_INPUT, ActivityReason.PERMISSION, None),
                             (Activity.WORKING, None, None),
                             (Activity.READY, ActivityReason.TURN_COMPLETE, None)]
    assert outcomes[-1] == (None, None, RuntimePresence.STOPPED)


def test_reused_unknown_and_ci_launches_are_refused_as_gemini_does(world) -> None:
    env, project, _ = world
    assert _fake("--session-id", SID, env=env, cwd=project, stdin="hi\n").returncode == 0
    again = _fake("--session-id", SID, env=env, cwd=project)
    assert again.returncode == 42
    assert f'Session ID "{SID}" already exists. Use --resume' in again.stderr
    assert _fake("--resume", SID, env=env, cwd=project, stdin="more\n").returncode == 0
    other = "11111111-1111-4111-8111-111111111111"
    unknown = _fake("--resume", other, env=env, cwd=project)
    assert unknown.returncode == 42 and f'Invalid session identifier "{other}"' in unknown.stderr
    ci = _fake(env={**env, "CI_PIPELINE_ID": "7"}, cwd=project)
    assert ci.returncode == 42 and "No input provided via stdin" in ci.stderr
    assert _fake("--version", env=env, cwd=project).stdout == "0.61.0\n"


def test_hooks_and_agent_tools_come_from_the_launchs_own_home(world) -> None:
    """The adapter's per-launch home is what the fake reads: its hook groups (the
    recording hook here), never the person's own ~/.gemini."""
    env, project, recorder = world
    out = project.parent / "events.tsv"
    person = Path(env["HOME"]) / ".gemini"
    person.mkdir(parents=True)
    (person / "settings.json").write_text(json.dumps({"hooks": {"BeforeAgent": [{"hooks": [
        {"type": "command", "command": f"touch {project.parent / 'theirs-ran'}"}]}]}}))
    launch = plan(("gemini",), LaunchAction.NEW, SID, None, project.parent / "run",
                  (sys.executable, str(recorder), str(out)), None, env)
    done = _fake(*launch.argv[1:], env={**env, **dict(launch.env)}, cwd=project,
                 stdin="hello\n")
    assert done.returncode == 0, done.stderr
    assert [event for event, _ in _events(out)] == [
        "SessionStart", "BeforeAgent", "AfterAgent", "SessionEnd"]
    # the person's own hooks are kept in the launch's settings, so they run too
    assert (project.parent / "theirs-ran").exists()
