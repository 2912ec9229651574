"""``frame fork`` with the fake agent on a real private tmux server: the fork is a
sibling task (a fork of the workspace a child task), its agent runs with the CLI's
fork arguments and a session id of its own, its transcript starts with the parent's
messages, the original keeps its session; bad input is refused in one line and
changes nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from core.context.requests import new_request_id
from core.model.errors import SwitchboardError
from core.providers.fake import transcript
from tests.integration.journey_env import make_live_engine, tmux, type_line
from tests.waiting import retry_until

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def live(tmp_path: Path, tmux_socket: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("SWITCHBOARD_HOME", str(tmp_path))
    monkeypatch.setenv("SWITCHBOARD_CONFIG", str(tmp_path / "config.toml"))
    return make_live_engine(tmp_path, tmux_socket)


def _session(engine, frame_id: str):
    return engine.conn.execute(
        "SELECT ps.* FROM frames f JOIN provider_sessions ps"
        " ON ps.session_key = f.current_session_key WHERE f.frame_id = ?",
        (frame_id,)).fetchone()


def _pane(engine, session_key: str) -> str:
    return engine.conn.execute("SELECT pane_id FROM surfaces WHERE session_key = ?"
                               " AND pane_id IS NOT NULL ORDER BY rowid DESC",
                               (session_key,)).fetchone()[0]


def _bound(engine, launch_id: str) -> bool:
    return engine.conn.execute("SELECT state FROM launch_intents WHERE launch_id = ?",
                               (launch_id,)).fetchone()[0] == "bound"


def _said(engine, frame_id: str) -> list[tuple[str, str]]:
    session = _session(engine, frame_id)
    found = transcript.find(session["provider"], session["provider_session_id"],
                            str(engine.config.projects[0].root))
    return transcript.messages(found) if found is not None else []


def _ready_after(engine, socket: Path, frame_id: str, line: str) -> None:
    """Type one line into the frame's agent and wait for its answer and its Stop."""
    key = _session(engine, frame_id)["session_key"]
    before = len(_said(engine, frame_id))
    type_line(socket, _pane(engine, key), line)
    assert retry_until(lambda: len(_said(engine, frame_id)) == before + 2, 30)
    assert retry_until(lambda: engine.conn.execute(
        "SELECT activity FROM provider_sessions WHERE session_key = ?",
        (key,)).fetchone()[0] == "ready", 30)


def _started_workspace(engine, socket: Path, provider: str | None = None):
    from core.model.enums import Provider

    route = engine.project_enter(new_request_id(), "alpha")
    started = engine.frame_start(new_request_id(), route.frame_id,
                                 Provider(provider) if provider else None)
    assert retry_until(lambda: _bound(engine, started.launch_id), 30)
    _ready_after(engine, socket, route.frame_id, "remember the word PELICAN")
    return route


def _fork_transcript(engine, frame_id: str) -> list[tuple[str, str]]:
    said = _said(engine, frame_id)
    assert said, "the fork wrote no transcript"
    return said


@pytest.mark.parametrize("provider", ["claude", "codex"])
def test_fork_of_a_task_is_a_sibling_that_continues_the_conversation(
        live, tmux_socket: Path, provider: str) -> None:
    from core.model.enums import Provider

    engine = live
    route = engine.project_enter(new_request_id(), "alpha")
    started = engine.frame_start(new_request_id(), route.frame_id, Provider(provider))
    assert retry_until(lambda: _bound(engine, started.launch_id), 30)
    pushed = engine.frame_push(new_request_id(), route.frame_id, "Task A", "do A")
    task = pushed.target_frame_id
    assert retry_until(lambda: _session(engine, task) is not None and
                       not _session(engine, task)["provider_session_id"].startswith("pending"),
                       30)
    assert retry_until(lambda: len(_said(engine, task)) == 2, 30)
    assert retry_until(lambda: engine.conn.execute(
        "SELECT COUNT(*) FROM view_transitions WHERE state NOT IN"
        " ('completed', 'cancelled', 'superseded', 'failed')").fetchone()[0] == 0, 30)
    _ready_after(engine, tmux_socket, task, "remember the word PELICAN")
    original = dict(_session(engine, task))
    earlier = transcript.messages(transcript.find(
        provider, original["provider_session_id"], str(engine.config.projects[0].root)))
    assert len(earlier) == 4 and earlier[2] == ("user", "remember the word PELICAN")

    fork = engine.frame_fork(new_request_id(), task)

    row = engine.conn.execute("SELECT * FROM frames WHERE frame_id = ?",
                              (fork.frame_id,)).fetchone()
    source = engine.conn.execute("SELECT * FROM frames WHERE frame_id = ?", (task,)).fetchone()
    assert row["parent_frame_id"] == source["parent_frame_id"] == route.frame_id
    assert row["depth"] == source["depth"] and row["role"] == "task"
    assert row["title"] == "fork of Task A"
    key = row["current_session_key"]
    assert key and key != original["session_key"]
    launch = engine.conn.execute("SELECT * FROM launch_intents WHERE session_key = ?",
                                 (key,)).fetchone()
    assert retry_until(lambda: _bound(engine, launch["launch_id"]), 30)
    forked = _session(engine, fork.frame_id)
    assert forked["provider"] == provider
    assert forked["provider_session_id"] != original["provider_session_id"]
    # The fork's pane says the CLI read fork arguments and carried the conversation.
    pane = _pane(engine, forked["session_key"])
    assert retry_until(lambda: f"forked from {original['provider_session_id']}: 4 earlier"
                       in tmux(tmux_socket, "capture-pane", "-p", "-t", pane), 30)
    start_command = tmux(tmux_socket, "display-message", "-p", "-t", pane,
                         "#{pane_start_command}")
    if provider == "claude":
        assert f"--resume {original['provider_session_id']} --fork-session --session-id " \
               f"{forked['provider_session_id']}" in start_command
    else:
        assert f"fork --cd . {original['provider_session_id']}" in start_command
    _ready_after(engine, tmux_socket, fork.frame_id, "which word?")
    said = _fork_transcript(engine, fork.frame_id)
    assert said[:4] == earlier and said[4] == ("user", "which word?")
    # The original keeps its session, its id and its transcript.
    after = dict(_session(engine, task))
    assert after["session_key"] == original["session_key"]
    assert after["provider_session_id"] == original["provider_session_id"]
    assert transcript.messages(transcript.find(
        provider, original["provider_session_id"], str(engine.config.projects[0].root))) \
        == earlier
    assert engine.conn.execute("SELECT runtime_presence FROM provider_sessions WHERE"
                               " session_key = ?", (original["session_key"],)
                               ).fetchone()[0] == "live"


def test_fork_of_the_workspace_is_a_child_task(live, tmux_socket: Path) -> None:
    engine = live
    route = _started_workspace(engine, tmux_socket)
    fork = engine.frame_fork(new_request_id(), route.frame_id, title="try the other way")
    row = engine.conn.execute("SELECT * FROM frames WHERE frame_id = ?",
                              (fork.frame_id,)).fetchone()
    assert (row["parent_frame_id"], row["depth"], row["title"]) == \
        (route.frame_id, 1, "try the other way")
    launch = engine.conn.execute("SELECT launch_id FROM launch_intents WHERE session_key = ?",
                                 (row["current_session_key"],)).fetchone()[0]
    assert retry_until(lambda: _bound(engine, launch), 30)
    assert ("user", "remember the word PELICAN") in _fork_transcript(engine, fork.frame_id)


def _cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}
    env.update(SWITCHBOARD_HOME=str(home), SWITCHBOARD_CONFIG=str(home / "config.toml"),
               PYTHONPATH=str(REPO_ROOT))
    return subprocess.run([sys.executable, "-m", "navigator.cli", "frame", "fork", *args],
                          env=env, capture_output=True, text=True, timeout=120)


def _counts(engine) -> tuple[int, int, int]:
    return tuple(engine.conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
                 for table in ("frames", "provider_sessions", "launch_intents"))


def test_bad_input_is_refused_in_one_line_and_changes_nothing(live, tmp_path: Path,
                                                              tmux_socket: Path) -> None:
    engine = live
    route = engine.project_enter(new_request_id(), "alpha")
    before = _counts(engine)
    # No session yet: nothing to fork.
    with pytest.raises(SwitchboardError, match="no agent session to fork"):
        engine.frame_fork(new_request_id(), route.frame_id)
    done = _cli(tmp_path, route.frame_id)
    assert done.returncode != 0 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "no agent session to fork" in done.stderr
    # An unknown frame, a title with a control character, an empty title.
    for args, words in (((" nope",), "nope"),
                        ((route.frame_id, "--title", "a\x1b[31mred"), "title"),
                        ((route.frame_id, "--title", "  "), "non-empty title")):
        done = _cli(tmp_path, *args)
        assert done.returncode != 0, done.stdout
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr
        assert words in done.stderr
    assert _counts(engine) == before


def test_cli_fork_prints_the_fork(live, tmp_path: Path, tmux_socket: Path) -> None:
    engine = live
    route = _started_workspace(engine, tmux_socket)
    done = _cli(tmp_path, route.frame_id, "--no-start", "--json")
    assert done.returncode == 0, done.stderr
    fork_id = json.loads(done.stdout)["frame_id"]
    row = engine.conn.execute("SELECT parent_frame_id, current_session_key FROM frames"
                              " WHERE frame_id = ?", (fork_id,)).fetchone()
    assert row["parent_frame_id"] == route.frame_id and row["current_session_key"] is None
    # Started later (n), its first session is still the fork.
    started = engine.frame_start(new_request_id(), fork_id)
    assert retry_until(lambda: _bound(engine, started.launch_id), 30)
    assert ("user", "remember the word PELICAN") in _fork_transcript(engine, fork_id)
    # Once the fork ran, a fresh start is a plain new session and the origin is gone.
    from core.runtime import forks

    forked_key = _session(engine, fork_id)["session_key"]
    assert forks.origin_of(engine, fork_id) is not None
    engine.frame_stop(new_request_id(), fork_id)
    resumed = engine.frame_start(new_request_id(), fork_id)  # n: the fork's own session
    assert retry_until(lambda: _bound(engine, resumed.launch_id), 30)
    assert resumed.session_key == forked_key and forks.origin_of(engine, fork_id) is None
    engine.frame_stop(new_request_id(), fork_id)
    fresh = engine.frame_start(new_request_id(), fork_id, fresh=True)
    assert retry_until(lambda: _bound(engine, fresh.launch_id), 30)
    pane = _pane(engine, _session(engine, fork_id)["session_key"])
    assert "--fork-session" not in tmux(tmux_socket, "display-message", "-p", "-t", pane,
                                        "#{pane_start_command}")
    assert _said(engine, fork_id) == []  # a new conversation: nothing carried over


# --- the launch plans and the fake's argv, in-process ------------------------------

SID = "11111111-1111-4111-8111-111111111111"
NEW = "33333333-3333-4333-8333-333333333333"
TID = "019a0000-0000-7000-8000-000000000001"


def test_claude_fork_argv_and_refusals(tmp_path: Path) -> None:
    from core.model.enums import LaunchAction
    from core.model.errors import ProviderError
    from core.providers.claude import ClaudeAdapter

    adapter = ClaudeAdapter()
    plan = adapter.launch_plan(LaunchAction.NEW, NEW, None, None, fork_from=SID)
    assert plan.argv[:6] == ("claude", "--resume", SID, "--fork-session", "--session-id", NEW)
    assert plan.session_id == NEW
    for action, session, parent, words in (
            (LaunchAction.RESUME, NEW, SID, "cannot resume"),
            (LaunchAction.NEW, NEW, "not-a-uuid", "must be a UUID"),
            (LaunchAction.NEW, SID, SID, "of its own")):
        with pytest.raises(ProviderError, match=words):
            adapter.launch_plan(action, session, None, None, fork_from=parent)


def test_codex_fork_argv_and_refusals() -> None:
    from core.model.enums import LaunchAction
    from core.model.errors import ProviderError
    from core.providers.codex import CodexAdapter

    adapter = CodexAdapter()
    plan = adapter.launch_plan(LaunchAction.NEW, None, "go on", None, fork_from=TID)
    assert plan.argv == ("codex", "fork", "--cd", ".", TID, "go on") and plan.session_id is None
    with pytest.raises(ProviderError, match="cannot resume"):
        adapter.launch_plan(LaunchAction.RESUME, TID, None, None, fork_from=TID)
    with pytest.raises(ProviderError, match="must be a UUID"):
        adapter.launch_plan(LaunchAction.NEW, None, None, None, fork_from="--last")


def test_the_fake_reads_fork_argv_as_the_real_clis_do() -> None:
    """Each refusal's words and exit code as Claude Code 2.1.332 / Codex 0.171.0 print
    them (``codex fork`` observed with stdin closed: clap's errors come first)."""
    from core.providers.fake.agent import parse_args
    from core.providers.fake.argv import ArgvError, parse

    launch = parse_args(["--provider", "claude", "--resume", SID, "--fork-session",
                         "--session-id", NEW])
    assert (launch.fork_from, launch.resume, launch.session_id) == (SID, None, NEW)
    launch = parse_args(["--provider", "codex", "-c", "a=1", "fork", TID, "hello"])
    assert (launch.fork_from, launch.resume, launch.prompt) == (TID, None, "hello")
    assert parse_args(["--provider", "codex", "resume", TID]).fork_from is None
    for argv, code, first in (
            (["--provider", "claude", "--resume", SID, "--session-id", NEW], 1,
             "Error: --session-id can only be used with --continue or --resume if "
             "--fork-session is also specified."),
            (["--provider", "codex", "fork", "--include-non-interactive", TID], 2,
             "error: unexpected argument '--include-non-interactive' found"),
            (["--provider", "codex", "fork", "--last", "x", "y", "z"], 2,
             "error: unexpected argument 'z' found"),
            (["--provider", "codex", "fork"], 1,
             "fake_agent: the fork picker and --last are not emulated; give the SESSION_ID")):
        with pytest.raises(ArgvError) as caught:
            parse(argv)
        assert (caught.value.exit_code, caught.value.message.splitlines()[0]) == (code, first)
    with pytest.raises(ArgvError) as caught:
        parse(["--provider", "codex", "fork", "--include-non-interactive", TID])
    assert "Usage: codex fork [OPTIONS] [SESSION_ID] [PROMPT]" in caught.value.message


@pytest.mark.parametrize("provider", ["claude", "codex"])
def test_the_fake_refuses_to_fork_a_session_it_never_saw(tmp_path: Path, provider: str,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SWITCHBOARD_HOME", str(tmp_path))
    argv = ["--resume", SID, "--fork-session"] if provider == "claude" else ["fork", TID]
    done = subprocess.run([sys.executable, "-m", "core.providers.fake.agent", "--provider",
                           provider, *argv], capture_output=True, text=True, timeout=60,
                          cwd=tmp_path, stdin=subprocess.DEVNULL,
                          env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
    assert done.returncode == 1
    assert done.stderr.strip() == (f"No conversation found with session ID: {SID}"
                                   if provider == "claude" else
                                   f"No saved session found with ID {TID}.")


def test_a_fork_whose_parent_session_is_gone_does_not_start(live, tmux_socket: Path) -> None:
    """The origin names a session the registry does not hold: the launch is refused by
    name before any pane exists and the start is undone (the fork stays, stopped)."""
    from core.runtime import forks

    engine = live
    route = _started_workspace(engine, tmux_socket)
    fork = engine.frame_fork(new_request_id(), route.frame_id, start=False)
    forks.record_origin(engine, fork.frame_id, "host:claude:" + NEW)
    panes = set(tmux(tmux_socket, "list-panes", "-a", "-F", "#{pane_id}").split())
    with pytest.raises(SwitchboardError, match="no longer holds"):
        engine.frame_start(new_request_id(), fork.frame_id)
    assert set(tmux(tmux_socket, "list-panes", "-a", "-F", "#{pane_id}").split()) == panes
    assert engine.conn.execute("SELECT state FROM frame_placements WHERE frame_id = ? AND"
                               " state <> 'orphaned'", (fork.frame_id,)
                               ).fetchone()[0] == "stopped_affinity"
    assert engine.conn.execute("SELECT state FROM launch_intents WHERE frame_id = ?",
                               (fork.frame_id,)).fetchone()[0] == "failed"


def _git_init(folder: Path) -> None:
    for args in (["init", "-q", "-b", "main"], ["config", "user.email", "t@example.invalid"],
                 ["config", "user.name", "t"], ["commit", "-q", "--allow-empty", "-m", "one"]):
        subprocess.run(["git", "-C", str(folder), *args], check=True, capture_output=True)


def test_fork_in_its_own_worktree(live, tmp_path: Path, tmux_socket: Path) -> None:
    engine = live
    root = Path(engine.config.projects[0].root)
    route = _started_workspace(engine, tmux_socket)
    # A project that is not a git checkout: one line, no worktree, no fork.
    before = _counts(engine)
    done = _cli(tmp_path, route.frame_id, "--worktree")
    assert done.returncode != 0 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "is not a git checkout; worktrees need git" in done.stderr
    assert _counts(engine) == before and len(engine.config.projects) == 2
    _git_init(root)
    original = dict(_session(engine, route.frame_id))

    fork = engine.frame_fork(new_request_id(), route.frame_id, worktree=True)

    row = engine.conn.execute("SELECT * FROM frames WHERE frame_id = ?",
                              (fork.frame_id,)).fetchone()
    project = engine.config.project(row["project_id"])
    assert project.name.startswith("alpha-fork-") and row["project_id"] != \
        engine.config.projects[0].project_id
    tree = Path(project.root)
    assert tree != root and (tree / ".git").is_file()  # a git worktree beside alpha
    workspace = engine.conn.execute("SELECT frame_id FROM frames WHERE project_id = ? AND"
                                    " role = 'workspace'", (row["project_id"],)).fetchone()[0]
    assert (row["parent_frame_id"], row["depth"]) == (workspace, 1)
    launch = engine.conn.execute("SELECT launch_id FROM launch_intents WHERE session_key = ?",
                                 (row["current_session_key"],)).fetchone()[0]
    assert retry_until(lambda: _bound(engine, launch), 30)
    pane = _pane(engine, row["current_session_key"])
    assert Path(tmux(tmux_socket, "display-message", "-p", "-t", pane,
                     "#{pane_current_path}").strip()).resolve() == tree.resolve()
    said = transcript.messages(transcript.find(
        "claude", _session(engine, fork.frame_id)["provider_session_id"], str(tree)))
    assert ("user", "remember the word PELICAN") in said
    assert dict(_session(engine, route.frame_id))["provider_session_id"] == \
        original["provider_session_id"]
