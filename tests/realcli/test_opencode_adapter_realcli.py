"""The OpenCode adapter's launch (core/providers/opencode.py) run by OpenCode 1.18.33.

The launch is exactly what ``plan`` gives (argv, environment, the plugin it writes
into the private run folder); the person's own config (here: their provider, which is
the loopback stand-in, and bash set to ask) is in their config folder and must come out
byte for byte as it went in. The hook command is a recorder script, so the test sees
each hook process: its argv and the event on stdin.
"""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path

import pytest

from core.model.files import private_dir
from core.model.session_enums import LaunchAction
from core.providers.agent_http import ENV_TOKEN, HttpEndpoint
from core.providers.base import McpServer
from core.providers.opencode import CONFIG_ENV, PLUGIN_FILE, plan
from core.providers.opencode_usage import USAGE_FILE, read_opencode
from tests.realcli.gemini_mcp_server import HttpToolServer
from tests.realcli.install import RealCliUnavailable, ensure_opencode
from tests.realcli.opencode_harness import TURN_S, private_env, start_pane, wait_for
from tests.realcli.opencode_standin import OCTOOL_COMMAND, OpencodeStandin

HOOK_SCRIPT = """\
import json, sys
with open(sys.argv[1], "a", encoding="utf-8") as out:
    out.write(json.dumps({"argv": sys.argv[2:], "event": json.load(sys.stdin)}) + "\\n")
"""


@pytest.fixture(scope="module")
def opencode_binary() -> Path:
    try:
        return ensure_opencode()
    except RealCliUnavailable as exc:  # the tier fails, never skips
        pytest.fail(f"real-CLI tier cannot run: {exc}", pytrace=False)


def _hooks(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip()]


def _names(path: Path) -> list[str]:
    return [hook["argv"][-1] for hook in _hooks(path)]


def test_adapter_launch_delivers_hooks_and_resumes_by_id(
        opencode_binary: Path, tmp_path: Path, tmux_socket: Path) -> None:
    hooks = tmp_path / "hooks.jsonl"
    script = tmp_path / "hook.py"
    script.write_text(HOOK_SCRIPT, encoding="utf-8")
    hook_command = (sys.executable, str(script), str(hooks))
    run_dir = private_dir(tmp_path / "run")
    person = tmp_path / "config" / "opencode" / "opencode.json"
    with OpencodeStandin() as api:
        person.parent.mkdir(parents=True)
        # With "$schema" as OpenCode leaves it: a config file without one is rewritten by
        # OpenCode itself on every load (1.18.33 inserts the line), launched by us or not.
        person.write_text(json.dumps({"$schema": "https://opencode.ai/config.json",
                                      **api.provider_config(),
                                      "permission": {"bash": "ask"}}), encoding="utf-8")
        theirs = person.read_bytes()
        launch = plan((str(opencode_binary),), LaunchAction.NEW, None, None, run_dir,
                      hook_command, None)
        assert launch.session_id is None  # learned from session.created
        plugin = run_dir / PLUGIN_FILE
        assert stat.S_IMODE(plugin.stat().st_mode) == 0o600
        tui = start_pane(tmp_path, tmux_socket, hooks, launch.argv,
                         {**private_env(tmp_path), **dict(launch.env)})
        tui.type_line("hello adapter")
        wait_for("session.idle through the hook", lambda: "session.idle" in _names(hooks),
                 TURN_S, tui.screen)
        tui.type_line("OCTOOL please")
        wait_for("permission.asked through the hook",
                 lambda: "permission.asked" in _names(hooks), TURN_S, tui.screen)
        tui.press("Enter")
        wait_for("the second session.idle", lambda: _names(hooks).count("session.idle") >= 2,
                 TURN_S, tui.screen)
        first = _hooks(hooks)
        tui.tmux("kill-server")
        created = [h["event"] for h in first if h["argv"][-1] == "session.created"]
        assert len(created) == 1
        ident = created[0]["properties"]["sessionID"]
        again = plan((str(opencode_binary),), LaunchAction.RESUME, ident, None, run_dir,
                     hook_command, None)
        assert again.argv[-2:] == ("--session", ident) and again.session_id == ident
        resumed = start_pane(tmp_path, tmux_socket.with_name("tmux-resume.sock"), hooks,
                             again.argv, {**private_env(tmp_path), **dict(again.env)})
        resumed.type_line("hello again")
        wait_for("session.idle of the resumed session",
                 lambda: _names(hooks).count("session.idle") >= 3, TURN_S, resumed.screen)
        later = _hooks(hooks)[len(first):]
        resumed.tmux("kill-server")
    # Each hook process got --provider opencode <event>; only the wanted events came.
    assert all(h["argv"][:2] == ["--provider", "opencode"] for h in first + later)
    assert set(_names(hooks)) <= {"session.created", "chat.message", "session.status",
                                  "tool.execute.before", "tool.execute.after",
                                  "permission.asked", "permission.replied", "session.idle"}
    order = [name for name in _names(hooks) if name != "session.status"]
    assert order[:3] == ["session.created", "chat.message", "session.idle"] or \
        order[:3] == ["chat.message", "session.created", "session.idle"], order
    asked = [h["event"] for h in first if h["argv"][-1] == "permission.asked"]
    assert asked[0]["properties"]["metadata"]["command"] == OCTOOL_COMMAND
    # The resumed launch is the same session: no new one, every event names it.
    assert "session.created" not in [h["argv"][-1] for h in later]
    assert {h["event"].get("properties", h["event"].get("input", {})).get("sessionID")
            for h in later} == {ident}
    # The person's own config came out as it went in.
    assert person.read_bytes() == theirs
    # Usage: each turn end names the plugin's file, which holds every completed model
    # request of the session (first turn 1, tool turn 2, resumed turn 1), 0600.
    usage = run_dir / USAGE_FILE
    idle = [h["event"] for h in first + later if h["argv"][-1] == "session.idle"]
    assert {event["transcript_path"] for event in idle} == {str(usage)}
    assert stat.S_IMODE(usage.stat().st_mode) == 0o600
    batch = read_opencode(usage.read_bytes(), {})
    assert batch.bad_lines == 0 and batch.per_model["claude-sonnet-4-5"].requests == 4


def test_agent_tools_over_http_with_the_launch_token_and_the_approved_tool_unasked(
        opencode_binary: Path, tmp_path: Path, tmux_socket: Path) -> None:
    """The person asks before every tool (``"*": "ask"``); the launch's rule for the
    approved agent tool wins for exactly that tool, reached over Streamable HTTP with
    ``Authorization: Bearer`` from the pane environment, the token in no file."""
    hooks = tmp_path / "hooks.jsonl"
    script = tmp_path / "hook.py"
    script.write_text(HOOK_SCRIPT, encoding="utf-8")
    run_dir = private_dir(tmp_path / "run")
    calls = tmp_path / "calls.log"
    token = "tok-opencode-launch-4242"
    person = tmp_path / "config" / "opencode" / "opencode.json"
    with OpencodeStandin() as api, HttpToolServer(str(calls)) as tools:
        person.parent.mkdir(parents=True)
        person.write_text(json.dumps({"$schema": "https://opencode.ai/config.json",
                                      **api.provider_config(), "permission": {"*": "ask"}}),
                          encoding="utf-8")
        agent_tools = McpServer(("unused",), (), approved_tools=("transition_claim",),
                                http=HttpEndpoint(tools.url, token))
        launch = plan((str(opencode_binary),), LaunchAction.NEW, None, None, run_dir,
                      (sys.executable, str(script), str(hooks)), agent_tools)
        assert token not in dict(launch.env)[CONFIG_ENV]
        assert all(token not in f.read_text(encoding="utf-8") for f in run_dir.iterdir())
        tui = start_pane(tmp_path, tmux_socket, hooks, launch.argv,
                         {**private_env(tmp_path), **dict(launch.env)})
        tui.type_line("OCMCP please")
        wait_for("session.idle after the agent tool", lambda: "session.idle" in _names(hooks),
                 TURN_S, tui.screen)
        tui.tmux("kill-server")
        seen = tools.auth
    assert calls.read_text(encoding="utf-8").split("\t")[0] == "transition_claim"
    assert seen and set(seen) == {f"Bearer {token}"}
    assert "permission.asked" not in _names(hooks)
    assert ENV_TOKEN in dict(launch.env)
