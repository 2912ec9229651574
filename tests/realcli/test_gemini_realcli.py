"""Gemini CLI 0.61.0 itself, launched as the adapter plans it, in a tmux pane on a private
server against the loopback Gemini API stand-in (issue 41).

The provider is not registered yet, so the pane is started here rather than by the
engine in a view's main pane: what is checked is the adapter's side of the contract.
A turn gives working then ready from the CLI's own hooks (BeforeAgent, AfterAgent,
through the per-launch home's settings, never the person's), under the exact session
id chosen before exec; ``--resume`` of that id brings the same conversation back; the
person's own ``~/.gemini/settings.json`` is byte for byte what it was.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.model.control_line import CONTROL_TEMPLATE
from core.model.enums import LaunchAction
from core.model.session_enums import Activity, ActivityReason, RuntimePresence
from core.providers.agent_http import ENV_TOKEN, HttpEndpoint
from core.providers.base import McpServer
from core.providers.gemini import plan
from core.providers.hooks import parse_hook
from tests.realcli.gemini_mcp_server import HttpToolServer
from tests.realcli.gemini_standin import API_KEY, GeminiStandin
from tests.realcli.install import RealCliUnavailable, ensure_gemini
from tests.waiting import end_process_groups, retry_until

SID = "7d1e4c2a-5b6f-4a80-9c1d-2e3f4a5b6c7d"
WAIT_S = 90.0
PROMPT_READY = "Type your message"

_RECORDER = (
    "import sys, json\n"
    "event = sys.argv[-1]\n"
    "line = json.dumps(json.loads(sys.stdin.read()), separators=(',', ':'))\n"
    "open(sys.argv[1], 'a', encoding='utf-8').write(event + '\\t' + line + '\\n')\n"
)


def _gemini() -> Path:
    try:
        return ensure_gemini()
    except RealCliUnavailable as exc:  # the tier fails, never skips
        raise AssertionError(f"real-CLI tier cannot run: {exc}") from None


def _tmux(socket: Path, *args: str) -> str:
    return subprocess.run(["tmux", "-S", str(socket), *args], capture_output=True,
                          text=True, timeout=30).stdout


def _screen(socket: Path) -> str:
    return _tmux(socket, "capture-pane", "-p", "-J")


def _events(out: Path) -> list[tuple[str, dict[str, object]]]:
    if not out.exists():
        return []
    rows = []
    for line in out.read_text(encoding="utf-8").splitlines():
        event, payload = line.split("\t", 1)
        rows.append((event, json.loads(payload)))
    return rows


def _outcome(event: str, doc: dict[str, object]) -> tuple[object, ...]:
    """What Switchboard's own hook parser makes of one recorded payload."""
    parsed = parse_hook("gemini", event, json.dumps(doc))
    return event, parsed.activity, parsed.activity_reason, parsed.runtime


def _wait(socket: Path, check: object, what: str) -> None:
    assert callable(check)
    assert retry_until(check, WAIT_S, 0.3), f"timed out waiting for {what}:\n{_screen(socket)}"


_GROUPS: list[int] = []
"""Process groups of the panes this module started: Gemini CLI (node) does not always
end when its tmux server goes, so each is ended by its group, not by name."""


def _end_groups() -> None:
    end_process_groups(_GROUPS)
    _GROUPS.clear()


@pytest.fixture(autouse=True)
def _no_cli_outlives_its_test() -> Iterator[None]:
    yield
    _end_groups()


def _start(socket: Path, project: Path, env: dict[str, str], argv: tuple[str, ...]) -> None:
    """A server of its own: the one before is gone (its socket too, its CLI's process
    group too) first."""
    _tmux(socket, "kill-server")
    _end_groups()
    deadline = time.monotonic() + 5
    while socket.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    # Gemini CLI refuses its interactive mode when it sees a CI variable (`is-in-ci`:
    # CI, CONTINUOUS_INTEGRATION, any CI_*): the CI runner's own must not reach the pane.
    ci_vars = [k for k in os.environ
               if k in ("CI", "CONTINUOUS_INTEGRATION") or k.startswith("CI_")]
    _tmux(socket, "-f", "/dev/null", "new-session", "-d", "-x", "150", "-y", "45", "-c",
          str(project), "env", *(f"-u{k}" for k in ci_vars),
          *(f"{k}={v}" for k, v in env.items()), *argv)
    _tmux(socket, "set-option", "-g", "remain-on-exit", "on")
    pid = _tmux(socket, "display-message", "-p", "#{pane_pid}").strip()
    assert pid.isdigit(), f"no pane started: {pid!r}"
    _GROUPS.append(os.getpgid(int(pid)))


def _type(socket: Path, text: str) -> None:
    _tmux(socket, "send-keys", "-l", text)
    _wait(socket, lambda: text in _screen(socket), f"{text!r} on screen")
    _tmux(socket, "send-keys", "Enter")


def _approve(socket: Path) -> None:
    """Enter on "1. Allow once" until the question is gone (a key that arrives while the
    dialog is still drawing is dropped)."""
    _wait(socket, lambda: "Allow once" in _screen(socket), "the permission dialog")

    def gone() -> bool:
        if "Allow once" not in _screen(socket):
            return True
        _tmux(socket, "send-keys", "Enter")
        time.sleep(1.0)
        return "Allow once" not in _screen(socket)
    _wait(socket, gone, "the dialog to close")


def _person_with_project(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A person's home whose own ~/.gemini picks the API key and trusts the project:
    (home, project, their .gemini folder)."""
    person = tmp_path / "person"
    project = tmp_path / "src" / "demo"
    project.mkdir(parents=True)
    theirs = person / ".gemini"
    theirs.mkdir(parents=True)
    (theirs / "settings.json").write_text(
        json.dumps({"security": {"auth": {"selectedType": "gemini-api-key"}}}), encoding="utf-8")
    (theirs / "trustedFolders.json").write_text(json.dumps({str(project): "TRUST_FOLDER"}),
                                                encoding="utf-8")
    return person, project, theirs


def _hook_recorder(tmp_path: Path) -> tuple[Path, Path]:
    """The recording hook script and the file it appends each event to."""
    recorder = tmp_path / "record_hook.py"
    recorder.write_text(_RECORDER, encoding="utf-8")
    return recorder, tmp_path / "hooks.tsv"


def test_a_turn_is_working_then_ready_from_its_own_hooks_and_resumes_by_id(
        tmp_path: Path, tmux_socket: Path) -> None:
    binary = _gemini()
    person, project, theirs = _person_with_project(tmp_path)
    before = (theirs / "settings.json").read_bytes()
    recorder, out = _hook_recorder(tmp_path)
    hook_command = (sys.executable, str(recorder), str(out))
    run_dir = tmp_path / "run"
    person_env = {"HOME": str(person), "PATH": f"{binary.parent}:/usr/bin:/bin",
                  "TERM": "xterm-256color"}

    with GeminiStandin() as api:
        base = {**person_env, "GEMINI_API_KEY": API_KEY, "GOOGLE_GEMINI_BASE_URL": api.url}
        launch = plan((str(binary),), LaunchAction.NEW, SID, None, run_dir, hook_command,
                      None, person_env)
        _start(tmux_socket, project, {**base, **dict(launch.env)}, launch.argv)
        _wait(tmux_socket, lambda: PROMPT_READY in _screen(tmux_socket), "the prompt")
        _type(tmux_socket, "hello there")
        _wait(tmux_socket, lambda: "AfterAgent" in [e for e, _ in _events(out)], "AfterAgent")

        rows = _events(out)
        assert {doc["session_id"] for _, doc in rows} == {SID}
        outcomes = [_outcome(event, doc) for event, doc in rows]
        assert outcomes[0] == ("SessionStart", None, None, RuntimePresence.LIVE)
        assert outcomes[1:] == [
            ("BeforeAgent", Activity.WORKING, None, None),
            ("AfterAgent", Activity.READY, ActivityReason.TURN_COMPLETE, None)]
        assert "STANDIN-OK" in _screen(tmux_socket)
        assert [t.headers.get("x-goog-api-key") for t in api.turns()] == [API_KEY]

        # the same session again, by its id: the conversation comes back
        out.unlink()
        again = plan((str(binary),), LaunchAction.RESUME, SID, None, run_dir, hook_command,
                     None, person_env)
        _start(tmux_socket, project, {**base, **dict(again.env)}, again.argv)
        _wait(tmux_socket, lambda: "SessionStart" in [e for e, _ in _events(out)],
              "the resumed SessionStart")
        # the first launch's late SessionEnd (Gemini often sends it twice) may land here too
        start = next(payload for event, payload in _events(out) if event == "SessionStart")
        assert (start["session_id"], start["source"]) == (SID, "resume")
        _wait(tmux_socket, lambda: PROMPT_READY in _screen(tmux_socket), "the prompt")
        _type(tmux_socket, "and again")
        _wait(tmux_socket, lambda: "AfterAgent" in [e for e, _ in _events(out)],
              "the resumed AfterAgent")
        texts = json.dumps(api.turns()[-1].body)
        assert "hello there" in texts and "and again" in texts
    _tmux(tmux_socket, "kill-server")
    assert (theirs / "settings.json").read_bytes() == before
    chats = list((theirs / "tmp").rglob("session-*.jsonl"))
    assert chats, "the session was written into the person's own ~/.gemini/tmp"


def test_the_agent_tools_are_reachable_and_only_the_approved_ones_run_unasked(
        tmp_path: Path, tmux_socket: Path) -> None:
    """The control line's ``transition_claim`` (approved by the launch's policy) runs
    without a question, its server given the capability by variable name; ``task_push``
    (not approved) asks the person, announced by Notification(ToolPermission)."""
    binary = _gemini()
    person, project, theirs = _person_with_project(tmp_path)
    recorder, out = _hook_recorder(tmp_path)
    calls = tmp_path / "calls.log"
    secret = "cap-" + "5" * 32
    server = Path(__file__).with_name("gemini_mcp_server.py")
    tools = McpServer(argv=(sys.executable, str(server), str(calls), "SB_TEST_CAP"),
                      env_vars=("SB_TEST_CAP",), approved_tools=("transition_claim",))
    person_env = {"HOME": str(person), "PATH": f"{binary.parent}:/usr/bin:/bin",
                  "TERM": "xterm-256color"}
    with GeminiStandin() as api:
        launch = plan((str(binary),), LaunchAction.NEW, SID, None, tmp_path / "run",
                      (sys.executable, str(recorder), str(out)), tools, person_env)
        _start(tmux_socket, project, {**person_env, "GEMINI_API_KEY": API_KEY,
                                      "GOOGLE_GEMINI_BASE_URL": api.url,
                                      "SB_TEST_CAP": secret, **dict(launch.env)}, launch.argv)
        _wait(tmux_socket, lambda: PROMPT_READY in _screen(tmux_socket), "the prompt")
        _type(tmux_socket, CONTROL_TEMPLATE)
        _wait(tmux_socket, lambda: "AfterAgent" in [e for e, _ in _events(out)], "AfterAgent")
        assert "mcp_switchboard_transition_claim" in api.turns()[0].tool_names
        assert calls.read_text(encoding="utf-8") == f"transition_claim\t{secret}\n"
        assert "Notification" not in [e for e, _ in _events(out)]

        _type(tmux_socket, "CALLTOOL task_push")
        _wait(tmux_socket, lambda: "Notification" in [e for e, _ in _events(out)],
              "the permission question")
        [asked] = [doc for e, doc in _events(out) if e == "Notification"]
        assert _outcome("Notification", asked)[1:3] == (
            Activity.NEEDS_INPUT, ActivityReason.PERMISSION)
        assert "task_push" not in calls.read_text(encoding="utf-8")
        _approve(tmux_socket)
        _wait(tmux_socket, lambda: [e for e, _ in _events(out)].count("AfterAgent") == 2,
              "the second AfterAgent")
        assert calls.read_text(encoding="utf-8").endswith(f"task_push\t{secret}\n")
    _tmux(tmux_socket, "kill-server")
    for path in (tmp_path / "run").rglob("*"):
        if path.is_file() and not path.is_symlink():
            assert secret not in path.read_text(encoding="utf-8"), path


def test_over_http_the_token_goes_as_a_bearer_header_from_the_environment(
        tmp_path: Path, tmux_socket: Path) -> None:
    """``[agent_tools] transport = "http"``: the CLI connects to the URL with
    ``Authorization: Bearer <token>``, the token expanded from the pane environment
    (the per-launch files name only the variable)."""
    binary = _gemini()
    person, project, theirs = _person_with_project(tmp_path)
    recorder, out = _hook_recorder(tmp_path)
    calls = tmp_path / "calls.log"
    token = "tok-" + "7" * 40
    person_env = {"HOME": str(person), "PATH": f"{binary.parent}:/usr/bin:/bin",
                  "TERM": "xterm-256color"}
    with GeminiStandin() as api, HttpToolServer(str(calls)) as tools_server:
        tools = McpServer(argv=("unused",), env_vars=(), approved_tools=("transition_claim",),
                          http=HttpEndpoint(tools_server.url, token))
        launch = plan((str(binary),), LaunchAction.NEW, SID, None, tmp_path / "run",
                      (sys.executable, str(recorder), str(out)), tools, person_env)
        assert dict(launch.env)[ENV_TOKEN] == token
        _start(tmux_socket, project, {**person_env, "GEMINI_API_KEY": API_KEY,
                                      "GOOGLE_GEMINI_BASE_URL": api.url, **dict(launch.env)},
               launch.argv)
        _wait(tmux_socket, lambda: PROMPT_READY in _screen(tmux_socket), "the prompt")
        _type(tmux_socket, CONTROL_TEMPLATE)
        _wait(tmux_socket, lambda: "AfterAgent" in [e for e, _ in _events(out)], "AfterAgent")
        assert calls.read_text(encoding="utf-8") == "transition_claim\t\n"
        assert "Notification" not in [e for e, _ in _events(out)]
        assert tools_server.auth and set(tools_server.auth) <= {f"Bearer {token}"}
    _tmux(tmux_socket, "kill-server")
    for path in (tmp_path / "run").rglob("*"):
        if path.is_file() and not path.is_symlink():
            assert token not in path.read_text(encoding="utf-8"), path
