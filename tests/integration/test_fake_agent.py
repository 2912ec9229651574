"""The fake provider in a real (private) tmux pane, and its hook payload shapes."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from core.install.hooks_install import HookTarget, install
from core.model.enums import LaunchAction, Provider
from core.model.errors import ProviderError
from core.providers.adapters import get_adapter
from core.providers.hooks import CONTROL_TEMPLATE, HookKind, parse_hook
from core.providers.version import probe_version
from tests.waiting import assert_until

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "hooks"
FAKE = (sys.executable, "-m", "core.providers.fake.agent")
CLAUDE_SID = "3b0c5a52-8f1e-4d7a-9c1b-2f6e8d4a7b10"
RECORDER = """\
import json, sys
log, rest = sys.argv[1], sys.argv[2:]
payload = rest[3] if len(rest) > 3 else sys.stdin.read()
with open(log, "a", encoding="utf-8") as out:
    out.write(json.dumps({"argv": rest, "payload": json.loads(payload)}) + "\\n")
"""


def fixture_key_sets(provider: str) -> dict[str, frozenset[str]]:
    name = {"claude": "claude-2.1.197.tsv", "codex": "codex-0.171.0.tsv"}[provider]
    shapes: dict[str, set[frozenset[str]]] = {}
    for line in (FIXTURES / name).read_text(encoding="utf-8").splitlines():
        event, payload = line.split("\t", 1)
        shapes.setdefault(event, set()).add(frozenset(json.loads(payload)))
    assert all(len(keys) == 1 for keys in shapes.values()), "one key set per event name"
    return {event: next(iter(keys)) for event, keys in shapes.items()}


@pytest.fixture
def recorder(tmp_path: Path) -> tuple[str, Path]:
    script = tmp_path / "recorder.py"
    script.write_text(RECORDER, encoding="utf-8")
    log = tmp_path / "hooks.jsonl"
    return shlex.join([sys.executable, str(script), str(log)]), log


def records(log: Path) -> list[dict]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]


def events(log: Path) -> list[str]:
    return [record["argv"][2] for record in records(log)]


def assert_shapes_match_fixtures(provider: str, recorded: list[dict]) -> None:
    expected = fixture_key_sets(provider)
    compared = 0
    for record in recorded:
        event = record["argv"][2]
        assert record["argv"][:2] == ["--provider", provider]
        if event in expected:
            assert frozenset(record["payload"]) == expected[event], event
            compared += 1
        # and whatever the fake sends, the real parser accepts
        parse_hook(provider, event, json.dumps(record["payload"]))
    assert compared >= len(expected) - 1


# --- real tmux pane --------------------------------------------------------


class Pane:
    def __init__(self, socket: Path, pane_id: str) -> None:
        self.socket = socket
        self.pane_id = pane_id

    def tmux(self, *args: str) -> str:
        done = subprocess.run(["tmux", "-S", str(self.socket), *args], check=True,
                              capture_output=True, text=True)
        return done.stdout

    def text(self) -> str:
        return self.tmux("capture-pane", "-p", "-J", "-S", "-200", "-t", self.pane_id)

    def type_line(self, text: str) -> None:
        self.tmux("send-keys", "-t", self.pane_id, "-l", text)
        self.tmux("send-keys", "-t", self.pane_id, "Enter")

    def paste_line(self, text: str) -> None:
        self.tmux("set-buffer", "-b", "sbtest", text)
        self.tmux("paste-buffer", "-p", "-d", "-b", "sbtest", "-t", self.pane_id)
        self.tmux("send-keys", "-t", self.pane_id, "Enter")

    def dead(self) -> bool:
        return self.tmux("display-message", "-p", "-t", self.pane_id, "#{pane_dead}").strip() == "1"


def start_in_pane(socket: Path, argv: list[str], cwd: Path) -> Pane:
    done = subprocess.run(
        ["tmux", "-S", str(socket), "new-window", "-d", "-P", "-F", "#{pane_id}",
         "-t", "scratch:", "-c", str(cwd), shlex.join(argv)],
        check=True, capture_output=True, text=True,
    )
    pane = Pane(socket, done.stdout.strip())
    pane.tmux("set-option", "-p", "-t", pane.pane_id, "remain-on-exit", "on")
    return pane


@pytest.mark.tmux
def test_claude_fake_in_tmux_pane(tmux_server, tmux_socket, recorder, tmp_path):
    hook_command, log = recorder
    cwd = tmp_path / "demo"
    cwd.mkdir()
    pane = start_in_pane(tmux_socket, [*FAKE, "--provider", "claude", "--session-id", CLAUDE_SID,
                                       "--hook-command", hook_command], cwd)
    assert_until(lambda: events(log) == ["SessionStart"] and "> " in pane.text(), 15.0,
                 "timed out waiting for the prompt", interval=0.05)

    pane.type_line("hello there")
    assert_until(lambda: events(log).count("Stop") == 1, 15.0, "timed out waiting for first Stop",
                 interval=0.05)
    pane.paste_line("TOOLTEST please run it")
    assert_until(lambda: "Notification" in events(log) and "[y/n]" in pane.text(),
                 15.0, "timed out waiting for the permission question", interval=0.05)
    time.sleep(0.5)
    assert "PostToolUse" not in events(log)  # it waits for the person, as the CLIs do
    pane.type_line("y")
    assert_until(lambda: events(log).count("Stop") == 2, 15.0, "timed out waiting for second Stop",
                 interval=0.05)
    pane.paste_line("first pasted line\nsecond pasted line")
    assert_until(lambda: events(log).count("Stop") == 3, 15.0, "timed out waiting for third Stop",
                 interval=0.05)
    pane.type_line("/exit")
    assert_until(lambda: "SessionEnd" in events(log), 15.0, "timed out waiting for SessionEnd",
                 interval=0.05)
    assert_until(pane.dead, 15.0, "timed out waiting for the fake to exit", interval=0.05)

    assert events(log) == [
        "SessionStart",
        "UserPromptSubmit", "Stop",
        "UserPromptSubmit", "PreToolUse", "PermissionRequest", "Notification", "PostToolUse",
        "Stop",
        "UserPromptSubmit", "Stop",
        "SessionEnd",
    ]
    recorded = records(log)
    assert_shapes_match_fixtures("claude", recorded)
    payloads = [record["payload"] for record in recorded]
    assert {p["session_id"] for p in payloads} == {CLAUDE_SID}
    assert payloads[0]["source"] == "startup"
    prompts = [p["prompt"] for p in payloads if p["hook_event_name"] == "UserPromptSubmit"]
    assert prompts == ["hello there", "TOOLTEST please run it",
                       "first pasted line\nsecond pasted line"]
    turn_ids = [p.get("prompt_id") for p in payloads[1:-1]]
    assert turn_ids[0] == turn_ids[1] and len(set(turn_ids[2:8])) == 1
    assert len({turn_ids[0], turn_ids[2], turn_ids[8]}) == 3
    assert payloads[6]["notification_type"] == "permission_prompt"
    assert payloads[-1]["reason"] == "prompt_input_exit"
    assert all(p["cwd"] == str(cwd) for p in payloads)
    screen = pane.text()
    assert "FAKE-OK" in screen and "[200~" not in screen and "[201~" not in screen


@pytest.mark.tmux
def test_codex_fake_in_tmux_pane(tmux_server, tmux_socket, recorder, tmp_path):
    hook_command, log = recorder
    pane = start_in_pane(tmux_socket, [*FAKE, "--provider", "codex",
                                       "--hook-command", hook_command], tmp_path)
    assert_until(lambda: events(log) == ["SessionStart"] and "> " in pane.text(), 15.0,
                 "timed out waiting for the prompt", interval=0.05)
    pane.paste_line("TOOLTEST run it")
    assert_until(lambda: "[y/n]" in pane.text(), 15.0,
                 "timed out waiting for the approval question", interval=0.05)
    pane.type_line("y")
    assert_until(lambda: events(log).count("notify") == 1, 15.0, "timed out waiting for notify",
                 interval=0.05)
    pane.type_line("hello again")
    assert_until(lambda: events(log).count("notify") == 2, 15.0,
                 "timed out waiting for second notify", interval=0.05)
    pane.type_line("/exit")
    assert_until(pane.dead, 15.0, "timed out waiting for the fake to exit", interval=0.05)

    assert events(log) == [
        "SessionStart",
        "UserPromptSubmit", "PreToolUse", "PermissionRequest", "PostToolUse", "Stop", "notify",
        "UserPromptSubmit", "Stop", "notify",
    ]  # Codex has no Notification or SessionEnd hook
    recorded = records(log)
    assert_shapes_match_fixtures("codex", recorded)
    notify_records = [r for r in recorded if r["argv"][2] == "notify"]
    assert all(len(r["argv"]) == 4 for r in notify_records)  # JSON as the last argv element
    thread_id = recorded[0]["payload"]["session_id"]
    assert recorded[0]["payload"]["source"] == "startup"
    for record in recorded:
        payload = record["payload"]
        assert payload.get("session_id", payload.get("thread-id")) == thread_id
    first_turn = {r["payload"].get("turn_id", r["payload"].get("turn-id")) for r in recorded[1:7]}
    second_turn = {r["payload"].get("turn_id", r["payload"].get("turn-id")) for r in recorded[7:]}
    assert len(first_turn) == 1 and len(second_turn) == 1 and first_turn != second_turn
    assert notify_records[-1]["payload"]["input-messages"] == ["TOOLTEST run it", "hello again"]
    parsed = parse_hook("codex", "notify", json.dumps(notify_records[0]["payload"]))
    assert parsed.kind is HookKind.TURN_STOPPED and parsed.provider_session_id == thread_id


# --- piped (no tmux): agent tools, interrupts, resume, hook sources --------


def run_piped(argv: list[str], lines: list[str], cwd: Path, env: dict | None = None,
              timeout: float = 30) -> subprocess.CompletedProcess:
    return subprocess.run(
        argv, input="".join(line + "\n" for line in lines), capture_output=True, text=True,
        cwd=cwd, env=env, timeout=timeout, check=False,
    )


@pytest.fixture
def agent_stub(tmp_path: Path) -> tuple[str, Path]:
    """A stand-in for `switchboard agent`: logs argv, answers like the real tool would."""
    calls = tmp_path / "agent-calls.jsonl"
    script = tmp_path / "agent_stub.py"
    script.write_text(
        "import json, sys\n"
        f"open({str(calls)!r}, 'a').write(json.dumps(sys.argv[1:]) + '\\n')\n"
        "if sys.argv[1] == 'transition-claim':\n"
        "    print(json.dumps({'instructions': 'Read the brief: build the parser.'}))\n"
        "elif sys.argv[1] == 'task-complete-return':\n"
        "    sys.stderr.write('switchboard: unauthorized: no capability in this pane\\n')\n"
        "    sys.exit(3)\n"
        "else:\n"
        "    print(json.dumps({'ok': True}))\n",
        encoding="utf-8",
    )
    return shlex.join([sys.executable, str(script)]), calls


def test_agent_tools_and_their_failures(recorder, agent_stub, tmp_path):
    hook_command, log = recorder
    agent_command, calls = agent_stub
    done = run_piped(
        [*FAKE, "--provider", "claude", "--hook-command", hook_command,
         "--agent-command", agent_command],
        [CONTROL_TEMPLATE, "/push Parser work :: Build the TSV parser", "/complete Done :: Ship"],
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert "Instructions: Read the brief: build the parser." in done.stdout
    assert "Error (exit 3): switchboard: unauthorized: no capability in this pane" in done.stdout
    assert [json.loads(line) for line in calls.read_text().splitlines()] == [
        ["transition-claim", "--json"],
        ["task-push", "--title", "Parser work", "--brief", "Build the TSV parser", "--json"],
        ["task-complete-return", "--summary", "Done", "--next-action", "Ship", "--json"],
    ]
    per_turn = ["UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop"]
    assert events(log) == ["SessionStart", *per_turn * 3, "SessionEnd"]
    claim = parse_hook("claude", "UserPromptSubmit", json.dumps(records(log)[1]["payload"]))
    assert claim.is_control_prompt
    assert_shapes_match_fixtures("claude", records(log))


def test_missing_agent_command_is_tolerated(recorder, tmp_path):
    hook_command, log = recorder
    done = run_piped([*FAKE, "--provider", "codex", "--hook-command", hook_command,
                      "--agent-command", str(tmp_path / "no-such-switchboard")],
                     [CONTROL_TEMPLATE], tmp_path)
    assert done.returncode == 0 and "Error (exit -1)" in done.stdout
    assert events(log)[-2:] == ["Stop", "notify"]


def test_no_stop_on_simulates_an_interrupted_turn(recorder, tmp_path):
    hook_command, log = recorder
    done = run_piped([*FAKE, "--provider", "codex", "--hook-command", hook_command,
                      "--no-stop-on", "INTERRUPT"], ["please INTERRUPT this", "next"], tmp_path)
    assert done.returncode == 0
    assert events(log) == ["SessionStart", "UserPromptSubmit", "UserPromptSubmit", "Stop",
                           "notify"]


def test_resume_shapes_from_launch_plans(recorder, tmp_path):
    hook_command, log = recorder
    for provider in ("claude", "codex"):
        log.unlink(missing_ok=True)
        fake = (*FAKE, "--provider", provider, "--hook-command", hook_command)
        plan = get_adapter(provider, fake).launch_plan(
            LaunchAction.RESUME, CLAUDE_SID, CONTROL_TEMPLATE, None)
        done = run_piped(list(plan.argv), [], tmp_path)
        assert done.returncode == 0, done.stderr
        recorded = records(log)
        assert recorded[0]["payload"]["source"] == "resume"
        assert recorded[1]["payload"]["prompt"] == CONTROL_TEMPLATE
        ids = {r["payload"].get("session_id", r["payload"].get("thread-id")) for r in recorded}
        assert ids == {CLAUDE_SID}
        assert events(log)[-1] == ("SessionEnd" if provider == "claude" else "notify")


def test_new_claude_session_id_comes_from_the_launch_plan(recorder, tmp_path):
    hook_command, log = recorder
    fake = (*FAKE, "--provider", "claude", "--hook-command", hook_command)
    plan = get_adapter("claude", fake).launch_plan(LaunchAction.NEW, CLAUDE_SID, "hi", None)
    assert run_piped(list(plan.argv), [], tmp_path).returncode == 0
    assert records(log)[0]["payload"]["session_id"] == CLAUDE_SID


def test_hooks_come_from_installed_files(recorder, tmp_path):
    hook_command, log = recorder
    state = tmp_path / "state"
    command = shlex.split(hook_command)

    settings = tmp_path / "run" / "claude.settings.json"
    install(HookTarget.claude_settings(settings), command, state_dir=state)
    plan = get_adapter("claude", (*FAKE, "--provider", "claude")).launch_plan(
        LaunchAction.NEW, CLAUDE_SID, "TOOLTEST go", settings)
    assert run_piped(list(plan.argv), ["y"], tmp_path).returncode == 0  # the person allows
    assert events(log) == ["SessionStart", "UserPromptSubmit", "PreToolUse", "PermissionRequest",
                           "Notification", "PostToolUse", "Stop", "SessionEnd"]

    log.unlink()
    codex_home = tmp_path / "codex-home"
    install(HookTarget.codex_home(codex_home), command, state_dir=state)
    plan = get_adapter("codex", (*FAKE, "--provider", "codex")).launch_plan(
        LaunchAction.NEW, None, "hi", codex_home)
    env = {**os.environ, **plan.env_dict}
    assert run_piped(list(plan.argv), [], tmp_path, env=env).returncode == 0
    assert events(log) == ["SessionStart", "UserPromptSubmit", "Stop", "notify"]
    assert records(log)[-1]["argv"][:3] == ["--provider", "codex", "notify"]


def test_a_tool_needing_permission_waits_and_a_no_denies_it(recorder, tmp_path):
    hook_command, log = recorder
    settings = tmp_path / "run" / "claude.settings.json"
    install(HookTarget.claude_settings(settings), shlex.split(hook_command),
            state_dir=tmp_path / "state")
    plan = get_adapter("claude", (*FAKE, "--provider", "claude")).launch_plan(
        LaunchAction.NEW, CLAUDE_SID, "TOOLTEST go", settings)
    done = run_piped(list(plan.argv), ["n"], tmp_path)
    assert done.returncode == 0 and "permission denied" in done.stdout
    assert events(log) == ["SessionStart", "UserPromptSubmit", "PreToolUse", "PermissionRequest",
                           "Notification", "Stop", "SessionEnd"]
    assert not (tmp_path / "tooltest_ran").exists()


def test_sigterm_ends_the_session_with_reason_other(recorder, tmp_path):
    hook_command, log = recorder
    process = subprocess.Popen([*FAKE, "--provider", "claude", "--hook-command", hook_command],
                               stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, cwd=tmp_path)
    try:
        assert_until(lambda: events(log) == ["SessionStart"], 15.0,
                     "timed out waiting for SessionStart", interval=0.05)
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0
    finally:
        if process.poll() is None:
            process.kill()
    assert events(log) == ["SessionStart", "SessionEnd"]
    assert records(log)[-1]["payload"]["reason"] == "other"


def test_version_line_is_what_the_probe_expects():
    for provider, expected in ((Provider.CLAUDE, (2, 1, 197)), (Provider.CODEX, (0, 171, 0))):
        found = probe_version(provider, [*FAKE, "--provider", provider.value])
        assert found.version == expected
    newer = probe_version("codex", [*FAKE, "--provider", "codex", "--fake-version", "0.190.2"])
    assert newer.version == (0, 190, 2)
    with pytest.raises(ProviderError) as caught:
        probe_version("claude", [*FAKE, "--provider", "claude", "--fake-version", "2.0.5"])
    assert caught.value.code == "provider_version_unsupported"


@pytest.mark.parametrize(
    ("argv", "code", "first_line"),
    [
        (["--provider", "codex", "--session-id", CLAUDE_SID], 2,
         "error: unexpected argument '--session-id' found"),
        (["--provider", "claude", "--session-id", "nope"], 1,
         "Error: Invalid session ID. Must be a valid UUID."),
        (["--provider", "claude", "--session-id", CLAUDE_SID, "--resume", CLAUDE_SID], 1,
         "Error: --session-id can only be used with --continue or --resume if --fork-session"
         " is also specified."),
        (["--provider", "codex", "resume", CLAUDE_SID, "one", "two"], 2,
         "error: unexpected argument 'two' found"),
        (["--provider", "claude", "--mcp-config", "/nonexistent/a.json", "hi"], 1,
         "Error: Invalid MCP configuration:"),
        (["--provider", "claude", "--bogus"], 1, "error: unknown option '--bogus'"),
        (["--provider", "codex", "-c", "no-equals-sign"], 1,
         "Error parsing -c overrides: Invalid override (missing '='): no-equals-sign"),
        (["--session-id", CLAUDE_SID], 2,
         "fake_agent: --provider claude|codex|gemini|opencode is required"),
    ],
)
def test_bad_fake_argv_is_refused_as_the_real_cli_refuses_it(argv, code, first_line, tmp_path,
                                                              recorder):
    """Nothing starts (no hook fires) and the real CLI's error line and exit code come back."""
    hook_command, log = recorder
    done = run_piped([*FAKE, "--hook-command", hook_command, *argv], [], tmp_path)
    assert (done.returncode, done.stderr.splitlines()[0]) == (code, first_line), done.stderr
    assert done.stdout == "" and not log.exists()
