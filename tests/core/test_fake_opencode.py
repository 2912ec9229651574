"""The fake agent as OpenCode 1.18.33 (issue 41): it takes the argv the adapter builds and
refuses what the real binary refuses (measured: usage and exit 1 for an unknown option,
its own lines for --fork alone and for a session it cannot open), learns its hook command
from the launch's plugin, makes the ``ses_`` id at the first prompt, and sends the events
the hook parser reads as the recording.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from core.model.enums import LaunchAction
from core.model.files import private_dir
from core.model.session_enums import Activity, ActivityReason, RuntimePresence
from core.providers.fake import argv as fake_argv
from core.providers.hooks import parse_hook
from core.providers.opencode import (
    INSTALL_DIR,
    INSTALL_PLUGIN,
    USAGE_ENV,
    installed_plugin,
    launch_argv,
    plan,
)
from core.providers.opencode_events import is_session_id

ID = "ses_db3705247ffeaxo2gytFH4CNh9"
ROOT = Path(__file__).resolve().parents[2]
RECORDER = ("import sys, json\n"
            "line = json.dumps(json.loads(sys.stdin.read()))\n"
            "open(sys.argv[1], 'a', encoding='utf-8').write(sys.argv[-1] + '\\t' + line + '\\n')\n")


def _fake(*args: str, env: dict[str, str], cwd: Path,
          stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "core.providers.fake.agent", "--provider",
                           "opencode", *args], input=stdin, capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=60)


@pytest.fixture
def world(tmp_path: Path) -> tuple[dict[str, str], Path, list[str]]:
    """(the person's environment, the project folder, the recording hook argv)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENCODE_")}
    env.update(HOME=str(tmp_path / "person"), XDG_CONFIG_HOME=str(tmp_path / "person" / "cfg"),
               SWITCHBOARD_HOME=str(tmp_path / "sb"), PYTHONPATH=str(ROOT))
    project = tmp_path / "src" / "demo"
    project.mkdir(parents=True)
    recorder = tmp_path / "record.py"
    recorder.write_text(RECORDER, encoding="utf-8")
    return env, project, [sys.executable, str(recorder), str(tmp_path / "events.tsv")]


def _events(hook: list[str]) -> list[tuple[str, dict]]:
    path = Path(hook[-1])
    if not path.exists():
        return []
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        event, payload = line.split("\t", 1)
        rows.append((event, json.loads(payload)))
    return rows


def _their_rules(env: dict[str, str], rules: dict[str, str]) -> None:
    """The person's own global OpenCode config with these permission rules."""
    path = Path(env["XDG_CONFIG_HOME"]) / "opencode" / "opencode.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"$schema": "https://opencode.ai/config.json",
                                "permission": rules}), encoding="utf-8")


def test_the_adapters_argv_is_read_as_opencode_reads_it() -> None:
    new = fake_argv.parse([*launch_argv((), LaunchAction.NEW, None, "--help me"),
                           "--provider", "opencode"])
    assert (new.prompt, new.session_id) == ("--help me", None)
    resumed = fake_argv.parse([*launch_argv((), LaunchAction.RESUME, ID, None),
                               "--provider", "opencode"])
    assert (resumed.session_id, resumed.get("fork")) == (ID, None)
    forked = fake_argv.parse([*launch_argv((), LaunchAction.NEW, None, None, fork_from=ID),
                              "--provider", "opencode"])
    assert (forked.session_id, forked.get("fork")) == (ID, True)
    assert fake_argv.parse(["--provider", "opencode", "-s", ID, "-m", "a/b"]).session_id == ID


@pytest.mark.parametrize(("argv", "message"), [
    (["--bogus"], "Commands:"),                      # the usage, naming nothing
    (["--log-level", "LOUD"], "Options:"),
    (["--prompt", "--help me"], "Commands:"),        # a separate word with - is an option
    (["two", "words"], "Commands:"),
    (["--fork"], "--fork requires --continue or --session"),
])
def test_what_opencode_refuses_the_fake_refuses(argv: list[str], message: str) -> None:
    with pytest.raises(fake_argv.ArgvError) as refused:
        fake_argv.parse(["--provider", "opencode", *argv])
    assert message in refused.value.message and refused.value.exit_code == 1


def test_a_turn_sends_opencodes_events_which_parse_as_the_recording(world) -> None:
    env, project, hook = world
    _their_rules(env, {"bash": "ask"})
    done = _fake("--hook-command", " ".join(hook), env=env, cwd=project,
                 stdin="hello\nTOOLTEST please\ny\n")
    assert done.returncode == 0, done.stderr
    assert "ctrl+p commands" in done.stdout and "Permission required" in done.stdout
    rows = _events(hook)
    assert [name for name, _ in rows] == [
        "session.created", "chat.message", "session.status", "session.status", "session.idle",
        "chat.message", "session.status", "tool.execute.before", "permission.asked",
        "permission.replied", "tool.execute.after", "session.status", "session.idle"]
    parsed = [parse_hook("opencode", name, json.dumps(document)) for name, document in rows]
    (session,) = {event.provider_session_id for event in parsed}
    assert is_session_id(session)  # ses_ and 26 letters or digits, made at the first prompt
    assert all(event.turn_id is None for event in parsed)
    assert (parsed[0].activity, parsed[0].runtime) == (None, RuntimePresence.LIVE)
    assert [(e.activity, e.activity_reason) for e in parsed[5:]] == [
        (Activity.WORKING, None), (Activity.WORKING, None), (Activity.WORKING, None),
        (Activity.NEEDS_INPUT, ActivityReason.PERMISSION), (Activity.WORKING, None),
        (Activity.WORKING, None), (None, None), (Activity.READY, ActivityReason.TURN_COMPLETE)]
    assert parse_hook("opencode", "chat.message", json.dumps(rows[1][1])).is_control_prompt \
        is False
    after = rows[10][1]
    assert (after["input"]["tool"], after["output"]["metadata"]["exit"]) == ("bash", 0)


def test_bash_runs_unasked_by_default_and_a_deny_rule_refuses_it(world) -> None:
    """1.18.33's build agent runs bash without asking unless a rule says otherwise."""
    env, project, hook = world
    done = _fake("--hook-command", " ".join(hook), env=env, cwd=project,
                 stdin="TOOLTEST please\n")
    assert done.returncode == 0 and "Permission required" not in done.stdout
    assert "permission.asked" not in [name for name, _ in _events(hook)]
    assert "tool.execute.after" in [name for name, _ in _events(hook)]
    Path(hook[-1]).unlink()
    _their_rules(env, {"*": "deny"})
    done = _fake("--hook-command", " ".join(hook), env=env, cwd=project,
                 stdin="TOOLTEST please\n")
    assert "denied by the permission rules" in done.stdout
    assert "tool.execute.after" not in [name for name, _ in _events(hook)]


def test_a_session_is_resumed_by_its_id_and_one_it_cannot_open_is_refused(world) -> None:
    env, project, hook = world
    assert _fake("--hook-command", " ".join(hook), env=env, cwd=project,
                 stdin="hello\n").returncode == 0
    made = _events(hook)[0][1]["properties"]["sessionID"]
    Path(hook[-1]).unlink()
    again = _fake("--session", made, "--hook-command", " ".join(hook), env=env, cwd=project,
                  stdin="more\n")
    assert again.returncode == 0, again.stderr
    names = [name for name, _ in _events(hook)]
    assert names[0] == "chat.message" and "session.created" not in names  # nothing at start
    assert {doc.get("input", doc.get("properties", {})).get("sessionID")
            for _, doc in _events(hook)} == {made}
    unknown = _fake("--session", ID, env=env, cwd=project)
    assert unknown.returncode == 1 and f"Session not found: {ID}" in unknown.stderr
    invalid = _fake("--session", "abc", env=env, cwd=project)
    assert invalid.returncode == 1 and "Invalid session ID: unknown error" in invalid.stderr
    forked = _fake("--session", made, "--fork", "--hook-command", " ".join(hook), env=env,
                   cwd=project, stdin="forked\n")
    assert forked.returncode == 0
    copy = _events(hook)[-5:]  # created, chat.message, busy, idle, session.idle
    assert copy[0][0] == "session.created" and copy[0][1]["properties"]["sessionID"] != made
    version = _fake("--version", env=env, cwd=project)
    assert version.stdout == "1.18.33\n"
    usage = _fake("--help", env=env, cwd=project)
    assert usage.stdout == "" and "  opencode run  (emulated)" in usage.stderr


def test_hooks_come_from_the_launchs_plugin_with_the_usage_file(world, tmp_path: Path) -> None:
    """The adapter's plan is what the fake reads: the plugin named in the inline config,
    the hook argv from the variable the plugin names, each event with the usage file as
    its transcript_path; the person's own rules stay in force."""
    env, project, hook = world
    _their_rules(env, {"bash": "ask"})
    run_dir = private_dir(tmp_path / "run")
    launch = plan(("opencode",), LaunchAction.NEW, None, "first words", run_dir, hook, None)
    done = _fake(*launch.argv[1:], env={**env, **dict(launch.env)}, cwd=project,
                 stdin="TOOLTEST\n\n")
    assert done.returncode == 0, done.stderr
    rows = _events(hook)
    assert [name for name, _ in rows][:2] == ["session.created", "chat.message"]
    assert rows[1][1]["output"]["parts"][0]["text"] == "first words"
    assert "permission.asked" in [name for name, _ in rows]
    assert {doc["transcript_path"] for _, doc in rows} == {dict(launch.env)[USAGE_ENV]}


def test_a_project_plugin_installed_by_hooks_install_is_loaded(world) -> None:
    env, project, hook = world
    plugin = project / INSTALL_DIR / INSTALL_PLUGIN
    plugin.parent.mkdir(parents=True)
    plugin.write_text(installed_plugin(hook), encoding="utf-8")
    done = _fake(env=env, cwd=project, stdin="hello\n")
    assert done.returncode == 0, done.stderr
    assert [name for name, _ in _events(hook)] == [
        "session.created", "chat.message", "session.status", "session.status", "session.idle"]
