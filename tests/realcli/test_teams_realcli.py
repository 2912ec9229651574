"""Agent teams with the real Claude Code CLI: a teammate never splits the view's window.

``teammateMode = "auto"`` (a person's own setting; 2.1.300 and 2.1.332 default to
``in-process``) gives each teammate a tmux pane of its own by splitting the window the
CLI runs in, and in Switchboard that window is the view (navigator + main). Every
Claude launch therefore passes ``--teammate-mode in-process`` (``core.providers.claude``),
which wins over the setting for that launch only. Here the person's settings say
``auto``, the stand-in answers ``TEAMTEST`` with the ``Agent`` tool and a teammate
``name``, agent teams are on, and the view keeps exactly its two panes while the
teammate runs and answers (without the flag the CLI splits it: measured, and this test
fails then). The person's settings file is left as it was. The CLI reports the
teammate's lifetime as SubagentStart/SubagentStop (2.1.332): its evidence row runs and
completes, and the tree counts none running once it is done.

The second test runs what a ``[providers.claude] teammates = "frames"`` mode would have
to run (``--teammate-mode tmux``) and pins why the config refuses it: the teammate's pane
is named exactly in the CLI's team file, but it is split into the view's window.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.context.requests import new_request_id
from core.model.enums import Provider
from core.providers import claude as claude_provider
from core.state.state_builder import build_navigator_state
from storage.session_db import open_session_db_readonly, session_db_path
from tests.integration.journey_env import one, tmux
from tests.realcli.anthropic_standin import TEAMMATE_NAME, TEAMMATE_PROMPT, Recorded
from tests.realcli.harness import main_pane, type_prompt, xdg_home
from tests.realcli.install import RealCli, RealClis, newest
from tests.realcli.test_claude_journey import SLOW, World, _world
from tests.waiting import retry_until

TEAMS_ENV = {"CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS": "1"}


@pytest.fixture
def teams_world(request: pytest.FixtureRequest, tmp_path: Path, tmux_socket: Path,
                claude_cli: RealCli, real_clis: RealClis,
                monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    with _world(request, tmp_path, tmux_socket, claude_cli, real_clis, monkeypatch,
                extra_env=TEAMS_ENV) as made:
        yield made


def _window_panes(world: World, pane: str) -> list[str]:
    window = tmux(world.socket, "display-message", "-p", "-t", pane, "#{window_id}").strip()
    return tmux(world.socket, "list-panes", "-t", window, "-F", "#{pane_id}").split()


def _evidence(world: World, key: str, sql: str) -> list[str]:
    conn = open_session_db_readonly(session_db_path(xdg_home(world.root).root, key))
    try:
        return [r[0] for r in conn.execute(sql)]
    finally:
        conn.close()


def _hook_events(world: World, key: str) -> list[str]:
    return _evidence(world, key, "SELECT source_id FROM events ORDER BY timestamp, rowid")


def _subagent_rows(world: World, key: str) -> list[str]:
    return _evidence(world, key, "SELECT status FROM agents WHERE type = 'subagent'")


def _teammate_asked(item: Recorded) -> bool:
    """A model call of the teammate itself: its conversation starts with its task."""
    if not item.is_turn:
        return False
    messages = (item.body or {}).get("messages") or []
    return bool(messages) and TEAMMATE_PROMPT in json.dumps(messages[0])


@pytest.mark.parametrize("claude_cli", [newest(Provider.CLAUDE)], indirect=True,
                         ids=lambda v: f"claude-{v}")
def test_a_teammate_runs_in_process_and_the_view_keeps_its_two_panes(
        teams_world: World) -> None:
    world = teams_world
    engine = world.engine
    settings = world.home / ".claude" / "settings.json"
    mine = json.loads(settings.read_text())
    mine["teammateMode"] = "auto"
    settings.write_text(json.dumps(mine))
    route = engine.project_enter(new_request_id(), "alpha")
    started = engine.frame_start(new_request_id(), route.frame_id, Provider.CLAUDE)
    assert retry_until(lambda: one(engine, "SELECT state FROM launch_intents WHERE launch_id = ?",
                                   started.launch_id) == ("bound",), SLOW)
    main = main_pane(engine)
    world.wait_prompt(main)
    view = _window_panes(world, main)
    assert len(view) == 2 and main in view, view  # navigator + main
    before = sorted(world.panes())
    type_prompt(world.socket, main, "TEAMTEST please")
    seen: set[tuple[str, ...]] = set()

    def teammate_answered() -> bool:
        seen.add(tuple(_window_panes(world, main)))
        return any(_teammate_asked(item) for item in world.api.journal.snapshot())
    assert retry_until(teammate_answered, SLOW), world.dump()
    assert "Agent" in world.api.journal.tool_calls(), world.dump()
    # a split pane would come with the teammate; watch a little longer for a late one
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline:
        seen.add(tuple(_window_panes(world, main)))
        time.sleep(0.25)
    assert seen == {tuple(view)}, (seen, world.dump())
    assert sorted(world.panes()) == before, world.dump()  # no new pane anywhere else
    assert json.loads(settings.read_text()) == mine  # the person's own setting untouched
    key = str(one(engine, "SELECT current_session_key FROM frames WHERE frame_id = ?",
                  route.frame_id)[0])
    # the teammate's lifetime came as SubagentStart/SubagentStop (2.1.332, measured): its
    # row in the session's evidence ran and completed, and the tree counts none running
    events = _hook_events(world, key)
    assert events.count("SubagentStart") == 1 and "SubagentStop" in events, events
    assert retry_until(lambda: _subagent_rows(world, key) == ["completed"], SLOW), \
        (events, _subagent_rows(world, key))
    frame = next(f for p in build_navigator_state(engine).projects for f in p.frames
                 if f.frame_id == route.frame_id)
    assert frame.current_session is not None and frame.current_session.subagents is None


def _team_file(world: World, session_id: str) -> dict | None:
    """The CLI's own record of the lead's team (2.1.332: ``~/.claude/teams/session-<first
    8 of the lead's id>/config.json``), or None before it is written."""
    path = world.home / ".claude" / "teams" / f"session-{session_id[:8]}" / "config.json"
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _width(world: World, pane: str) -> int:
    return int(tmux(world.socket, "display-message", "-p", "-t", pane, "#{pane_width}"))


@pytest.mark.parametrize("claude_cli", [newest(Provider.CLAUDE)], indirect=True,
                         ids=lambda v: f"claude-{v}")
def test_tmux_teammates_still_split_the_view_which_is_why_frames_is_refused(
        teams_world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """What a ``frames`` mode would have to run: ``--teammate-mode tmux``.

    Pins both halves of the decision (docs/cli-versions.md "Which pane is which
    teammate"): the CLI names the teammate's pane exactly (the team file's
    ``tmuxPaneId`` under the lead's ``leadSessionId``), but it splits the window of its
    own pane, the view, and lays it out again; there is no option to aim it elsewhere.
    If a release stops splitting the view, this fails and ``frames`` can be built. The
    foreign-pane rule then moves the pane out (still running, an extra pane of the lead's
    frame) and the navigator gets its width back.
    """
    world = teams_world
    engine = world.engine
    monkeypatch.setattr(claude_provider, "TEAMMATE_MODE", ("--teammate-mode", "tmux"))
    route = engine.project_enter(new_request_id(), "alpha")
    started = engine.frame_start(new_request_id(), route.frame_id, Provider.CLAUDE)
    assert retry_until(lambda: one(engine, "SELECT state FROM launch_intents WHERE launch_id = ?",
                                   started.launch_id) == ("bound",), SLOW)
    main = main_pane(engine)
    world.wait_prompt(main)
    view = _window_panes(world, main)
    navigator = next(p for p in view if p != main)
    width = _width(world, navigator)
    key = str(one(engine, "SELECT current_session_key FROM frames WHERE frame_id = ?",
                  route.frame_id)[0])
    session_id = key.rsplit(":", 1)[1]
    type_prompt(world.socket, main, "TEAMTEST please")
    in_view: set[str] = set()

    def teammate_pane() -> str | None:
        in_view.update(_window_panes(world, main))
        team = _team_file(world, session_id) or {}
        panes = [m.get("tmuxPaneId") for m in team.get("members", [])
                 if m.get("name") == TEAMMATE_NAME and m.get("backendType") == "tmux"]
        return panes[0] if panes and str(panes[0]).startswith("%") else None
    assert retry_until(lambda: teammate_pane() is not None, SLOW), world.dump()
    pane = teammate_pane()
    assert pane is not None
    assert (_team_file(world, session_id) or {}).get("leadSessionId") == session_id

    def seen_in_view() -> bool:
        in_view.update(_window_panes(world, main))
        return pane in in_view
    # the CLI split the view: the teammate's pane was in the view's window
    assert retry_until(seen_in_view, SLOW), (pane, in_view, world.dump())

    def moved_out() -> bool:
        return sorted(_window_panes(world, main)) == sorted(view)
    assert retry_until(moved_out, SLOW), world.dump()
    extra = engine.stage.snapshot().pane(pane)
    assert extra is not None and extra.parked and extra.frame_id == route.frame_id, extra
    assert retry_until(lambda: _width(world, navigator) == width, SLOW), \
        (_width(world, navigator), width)
