"""``frame fork`` with the real CLIs: the fork's first request carries the parent's
earlier messages, under a session id of its own, and the parent keeps its session.

Claude Code runs ``--resume PARENT --fork-session --session-id NEW``; Codex runs
``codex fork PARENT``. Each talks only to its loopback stand-in, which records the
requests: the first model request of the fork (its first prompt, FORKCHECK) holds the
parent's earlier prompt (FORKWORD) as an earlier message, and the parent's own file
never sees the fork's prompt. Run targeted: ``-k fork``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.config.home import Home
from core.context.requests import new_request_id
from core.model.enums import Provider
from tests.integration.journey_env import one
from tests.realcli.harness import main_pane, type_prompt
from tests.realcli.harness_claude import transcript
from tests.realcli.harness_codex import (
    PROJECT,
    act_as_person,
    make_codex_engine,
    make_person,
    switchboard_home,
)
from tests.realcli.harness_codex import screen as codex_screen
from tests.realcli.harness_codex import type_prompt as codex_type_prompt
from tests.realcli.install import RealCli, RealClis
from tests.realcli.openai_standin import OpenAIStandin
from tests.realcli.test_claude_journey import SLOW, World, _world
from tests.waiting import fail_unless, retry_until

pytestmark = [pytest.mark.tmux, pytest.mark.timeout(480)]

EARLIER = "remember the word FORKWORD-PELICAN"
CHECK = "FORKCHECK which word did I ask you to remember"


def _session(engine, frame_id: str) -> tuple[str, str] | None:
    """(session_key, provider_session_id) of a frame's current session."""
    row = one(engine, "SELECT s.session_key, s.provider_session_id FROM frames f JOIN"
                      " provider_sessions s ON s.session_key = f.current_session_key"
                      " WHERE f.frame_id = ?", frame_id)
    return None if row is None else (row[0], row[1])


def _pane_of(engine, frame_id: str) -> str | None:
    row = one(engine, "SELECT s.pane_id FROM surfaces s JOIN frames f ON"
                      " f.current_session_key = s.session_key WHERE f.frame_id = ?"
                      " AND s.lifecycle_state = 'live'", frame_id)
    return None if row is None else row[0]


def _bound(engine, frame_id: str) -> bool:
    row = one(engine, "SELECT l.state FROM launch_intents l JOIN frames f ON"
                      " l.session_key = f.current_session_key WHERE f.frame_id = ?"
                      " ORDER BY l.created_at DESC", frame_id)
    return row is not None and row[0] == "bound"


@pytest.fixture
def world(request: pytest.FixtureRequest, tmp_path: Path, tmux_socket: Path,
          claude_cli: RealCli, real_clis: RealClis,
          monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    """The Claude journey's world: an isolated HOME, the Anthropic stand-in."""
    with _world(request, tmp_path, tmux_socket, claude_cli, real_clis, monkeypatch) as made:
        yield made


def test_real_claude_fork_carries_the_conversation(world: World) -> None:
    engine, socket = world.engine, world.socket
    route = engine.project_enter(new_request_id(), "alpha")
    parent = route.frame_id
    engine.frame_start(new_request_id(), parent, Provider.CLAUDE)
    assert retry_until(lambda: _bound(engine, parent), SLOW), world.dump()
    pane = main_pane(engine)
    world.wait_prompt(pane)
    type_prompt(socket, pane, EARLIER)
    world.wait_activity(parent, "ready")
    parent_key, parent_id = _session(engine, parent) or ("", "")

    fork = engine.frame_fork(new_request_id(), parent)
    fork_key, fork_id = _session(engine, fork.frame_id) or ("", "")
    assert fork_id != parent_id and fork_key != parent_key
    fork_pane = main_pane(engine)
    assert retry_until(lambda: world.pane_of(fork.frame_id) == fork_pane, SLOW), world.dump()
    assert fork_pane != world.pane_of(parent)
    world.wait_prompt(fork_pane)
    # 2.1.332 names the fork's own id from its SessionStart on; older releases name the
    # parent's there (ignored: a foreign id) and the fork's from its first prompt on.
    type_prompt(socket, fork_pane, CHECK)
    assert retry_until(lambda: _bound(engine, fork.frame_id), SLOW), world.dump()
    world.wait_activity(fork.frame_id, "ready")
    assert _session(engine, fork.frame_id) == (fork_key, fork_id)

    asked = [turn for turn in world.api.turns() if CHECK in json.dumps(turn.body)]
    assert asked, world.dump()
    first = asked[0].body or {}
    user_id = json.loads(first["metadata"]["user_id"])
    assert user_id["session_id"] == fork_id, user_id
    earlier = [message for message in first["messages"][:-1] if EARLIER in json.dumps(message)]
    assert earlier and earlier[0]["role"] == "user", first["messages"]
    # The parent keeps its session: the same id, and its file never saw the fork's prompt.
    assert _session(engine, parent) == (parent_key, parent_id)
    parent_file = transcript(world.home, parent_id)
    fork_file = transcript(world.home, fork_id)
    assert parent_file is not None and fork_file is not None and parent_file != fork_file
    # the CLI writes its file a moment after the turn's Stop
    assert retry_until(lambda: CHECK in fork_file.read_text(), SLOW), fork_file.read_text()
    assert EARLIER in parent_file.read_text() and CHECK not in parent_file.read_text()


@pytest.mark.parametrize("worktree", [False, True], ids=["here", "worktree"])
def test_real_codex_fork_carries_the_conversation(
        codex_cli: RealCli, codex_clis: RealClis, tmp_path: Path, tmux_socket: Path,
        monkeypatch: pytest.MonkeyPatch, worktree: bool) -> None:
    """``codex fork PARENT``, in the project's folder or in a worktree of its own (a
    folder the person trusts too: Codex asks about a new one)."""
    import hashlib

    turn_s = 90.0
    with OpenAIStandin() as standin:
        person = make_person(tmp_path, codex_clis, standin.base_url)
        act_as_person(monkeypatch, tmp_path, person)
        assert Home.from_env() == switchboard_home(tmp_path)
        engine = make_codex_engine(tmp_path, tmux_socket, codex_clis)
        route = engine.project_enter(new_request_id(), PROJECT)
        engine.frame_start(new_request_id(), route.frame_id, Provider.CODEX)
        pane = main_pane(engine)
        fail_unless(lambda: "Ask Codex to do anything" in codex_screen(tmux_socket, pane),
                    turn_s, lambda: codex_screen(tmux_socket, pane))
        time.sleep(1.0)
        codex_type_prompt(tmux_socket, pane, EARLIER)
        fail_unless(lambda: _bound(engine, route.frame_id) and one(
            engine, "SELECT s.activity FROM frames f JOIN provider_sessions s ON"
                    " s.session_key = f.current_session_key WHERE f.frame_id = ?",
            route.frame_id) == ("ready",), turn_s, lambda: codex_screen(tmux_socket, pane))
        parent_key, parent_id = _session(engine, route.frame_id) or ("", "")
        assert not parent_id.startswith("pending")
        before = len(standin.responses_requests())
        request = new_request_id()
        if worktree:
            _git_init(person.project)
            tree = person.project.parent / \
                f"{PROJECT}-fork-{hashlib.sha256(request.encode()).hexdigest()[:8]}"
            with person.config.open("a", encoding="utf-8") as config:
                config.write(f'\n[projects."{tree}"]\ntrust_level = "trusted"\n')

        fork = engine.frame_fork(request, route.frame_id, worktree=worktree)
        fail_unless(lambda: _pane_of(engine, fork.frame_id) is not None, turn_s,
                    lambda: "the fork has no pane")
        fork_pane = _pane_of(engine, fork.frame_id) or ""
        assert fork_pane != pane
        fail_unless(lambda: "Ask Codex to do anything" in codex_screen(tmux_socket, fork_pane),
                    turn_s, lambda: codex_screen(tmux_socket, fork_pane))
        time.sleep(1.0)
        codex_type_prompt(tmux_socket, fork_pane, CHECK)
        fail_unless(lambda: _bound(engine, fork.frame_id), turn_s,
                    lambda: codex_screen(tmux_socket, fork_pane))
        fork_key, fork_id = _session(engine, fork.frame_id) or ("", "")
        assert fork_id != parent_id and not fork_id.startswith("pending"), fork_id
        fail_unless(lambda: any(CHECK in json.dumps(r.body) for r in
                                standin.responses_requests()[before:]), turn_s,
                    lambda: codex_screen(tmux_socket, fork_pane))
        first = next(r for r in standin.responses_requests()[before:]
                     if CHECK in json.dumps(r.body))
        items = [item for item in (first.body or {}).get("input") or []
                 if isinstance(item, dict) and item.get("role") == "user"]
        texts = [json.dumps(item) for item in items]
        assert any(EARLIER in text for text in texts[:-1]), texts
        assert CHECK in texts[-1]
        # The parent keeps its thread and its rollout never saw the fork's prompt.
        assert _session(engine, route.frame_id) == (parent_key, parent_id)
        (parent_file,) = person.session_files(parent_id)
        (fork_file,) = person.session_files(fork_id)
        # Codex writes its rollout on its own schedule: the request can come first
        fail_unless(lambda: CHECK in fork_file.read_text(), turn_s,
                    lambda: fork_file.read_text()[-2000:])
        assert CHECK not in parent_file.read_text()
        # 0.171's rollout of a fork names its parent instead of copying it (its first
        # line: forked_from_id), so the parent's rollout is part of the fork's history.
        meta = json.loads(fork_file.read_text().splitlines()[0])
        assert meta["type"] == "session_meta", meta
        assert meta["payload"].get("forked_from_id") == parent_id, meta["payload"]


def _git_init(folder: Path) -> None:
    import subprocess

    for args in (["init", "-q", "-b", "main"], ["config", "user.email", "t@example.invalid"],
                 ["config", "user.name", "t"], ["commit", "-q", "--allow-empty", "-m", "one"]):
        subprocess.run(["git", "-C", str(folder), *args], check=True, capture_output=True)


def test_real_claude_fork_in_a_worktree(world: World) -> None:
    """The fork's agent runs in a git worktree of its own (another folder, so another
    project slug in ``~/.claude/projects``) and still continues the parent's
    conversation: Claude Code finds a session of the same repository's worktree."""
    import hashlib

    engine, socket = world.engine, world.socket
    _git_init(world.project)
    route = engine.project_enter(new_request_id(), "alpha")
    parent = route.frame_id
    engine.frame_start(new_request_id(), parent, Provider.CLAUDE)
    assert retry_until(lambda: _bound(engine, parent), SLOW), world.dump()
    pane = main_pane(engine)
    world.wait_prompt(pane)
    type_prompt(socket, pane, EARLIER)
    world.wait_activity(parent, "ready")
    parent_key, parent_id = _session(engine, parent) or ("", "")
    request = new_request_id()
    tree = world.project.parent / f"alpha-fork-{hashlib.sha256(request.encode()).hexdigest()[:8]}"
    state_file = world.home / ".claude.json"  # the person trusts the new folder
    state = json.loads(state_file.read_text())
    state["projects"][str(tree)] = dict(state["projects"][str(world.project)])
    state_file.write_text(json.dumps(state))

    fork = engine.frame_fork(request, parent, worktree=True)
    fork_key, fork_id = _session(engine, fork.frame_id) or ("", "")
    assert tree.is_dir() and fork_id != parent_id
    assert retry_until(lambda: world.pane_of(fork.frame_id) is not None, SLOW), world.dump()
    fork_pane = world.pane_of(fork.frame_id) or ""
    world.wait_prompt(fork_pane)
    type_prompt(socket, fork_pane, CHECK)
    assert retry_until(lambda: _bound(engine, fork.frame_id), SLOW), world.dump()
    world.wait_activity(fork.frame_id, "ready")
    asked = [turn for turn in world.api.turns() if CHECK in json.dumps(turn.body)]
    assert asked, world.dump()
    first = asked[0].body or {}
    assert json.loads(first["metadata"]["user_id"])["session_id"] == fork_id
    assert any(EARLIER in json.dumps(message) for message in first["messages"][:-1]), \
        first["messages"]
    assert _session(engine, parent) == (parent_key, parent_id)
