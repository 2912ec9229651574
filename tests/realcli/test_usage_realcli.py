"""Usage and limits from real CLIs (issue 26): what a real turn used, recorded exactly.

The loopback stand-ins answer every model call with fixed, distinct usage numbers
(``anthropic_standin.USAGE``, ``openai_standin.USAGE``), so each stored turn row must
be exactly a whole number of those answers; the Claude stand-in answers
``LIMITTEST`` with a 429 rate-limit error, which the real CLI ends its turn on.
Short on purpose: one start, one or two turns per CLI.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import replace
from pathlib import Path

import pytest

from core.config.config import LimitsConfig
from core.config.home import Home
from core.context.requests import new_request_id
from core.model.control_line import CONTINUE_TEMPLATE
from core.model.enums import Provider
from core.reconcile.reconcile import reconcile
from core.reconcile.usage_sweep import QUIET_MS
from core.state.state_builder import build_navigator_state
from navigator.cli import main
from navigator.widgets.badges import BadgeKind
from navigator.widgets.frames import frame_badge
from storage import session_db
from storage.session_usage import UsageRow, turn_usage
from tests.integration.journey_env import one
from tests.realcli import anthropic_standin, openai_standin
from tests.realcli.harness import main_pane, screen, type_prompt
from tests.realcli.harness_claude import transcript
from tests.realcli.harness_codex import (
    PROJECT,
    SCRUBBED_PREFIXES,
    act_as_person,
    make_codex_engine,
    make_person,
    person_env,
    switchboard_home,
)
from tests.realcli.harness_codex import screen as codex_screen
from tests.realcli.harness_codex import type_prompt as codex_type
from tests.realcli.install import RealCli, RealClis
from tests.realcli.test_claude_journey import SLOW, World, world  # noqa: F401 - fixture
from tests.waiting import fail_unless, retry_until

pytestmark = [pytest.mark.tmux, pytest.mark.timeout(300)]


def _rows(root: Path, session_key: str) -> list[UsageRow]:
    path = session_db.session_db_path(root, session_key)
    if not path.exists():
        return []
    conn = session_db.open_session_db_readonly(path)
    try:
        return turn_usage(conn, session_key)
    finally:
        conn.close()


def _key(world_engine: object, frame_id: str) -> str:
    return str(one(world_engine, "SELECT current_session_key FROM frames WHERE frame_id = ?",
                   frame_id)[0])  # type: ignore[arg-type]


def _activity(engine: object, frame_id: str) -> str:
    return str(one(engine, "SELECT s.activity FROM frames f JOIN provider_sessions s ON"  # type: ignore[arg-type]
                           " s.session_key = f.current_session_key WHERE f.frame_id = ?",
                   frame_id)[0])


def _continues(home: Path, session_id: str) -> list[str]:
    """The continue lines the CLI recorded as typed by the person, from its own file."""
    record = transcript(home, session_id)
    if record is None:
        return []
    typed = []
    for line in record.read_text().splitlines():
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line the CLI is still writing
        if entry.get("type") == "user" and CONTINUE_TEMPLATE in json.dumps(
                entry.get("message", {}).get("content")):
            typed.append(line)
    return typed


def _tail(home: Path, session_id: str) -> str:
    """The end of the CLI's own file, for a failing wait's message."""
    record = transcript(home, session_id)
    return "no transcript" if record is None else record.read_text()[-3000:]


def _badge(engine: object, frame_id: str) -> BadgeKind:
    """The tree's badge of the frame, from the state a navigator builds."""
    state = build_navigator_state(engine)  # type: ignore[arg-type]
    frame = next(f for p in state.projects for f in p.frames if f.frame_id == frame_id)
    return frame_badge(frame, None, None)


def test_real_claude_turn_usage_and_rate_limit(world: World,  # noqa: F811 - the fixture
                                               capsys: pytest.CaptureFixture[str]) -> None:
    engine, socket = world.engine, world.socket
    route = engine.project_enter(new_request_id(), "alpha")
    engine.frame_start(new_request_id(), route.frame_id, Provider.CLAUDE)
    pane = main_pane(engine)
    world.wait_prompt(pane)
    type_prompt(socket, pane, "hello usage")
    world.wait_activity(route.frame_id, "ready")
    key, root = _key(engine, route.frame_id), Home.from_env().root
    assert retry_until(lambda: len(_rows(root, key)) == 1, SLOW), world.dump()
    (row,) = _rows(root, key)
    usage = anthropic_standin.USAGE
    calls = row.requests
    assert calls == len(world.api.turns()) >= 1, (row, len(world.api.turns()))
    assert (row.input_tokens, row.output_tokens, row.cache_read_tokens,
            row.cache_write_tokens) == (usage["input_tokens"] * calls,
                                        usage["output_tokens"] * calls,
                                        usage["cache_read_input_tokens"] * calls,
                                        usage["cache_creation_input_tokens"] * calls), row
    assert row.model_id and row.model_id != "<synthetic>" and row.limit_kind is None

    # a turn the service refuses with a rate limit: the CLI ends it (StopFailure), the
    # frame is limited (a needs-input kind of badge) with a recovery that says why
    engine.config = replace(engine.config, limits=LimitsConfig(auto_resume=True))
    type_prompt(socket, pane, f"{anthropic_standin.LIMIT_WORD} go on")
    assert retry_until(lambda: len(_rows(root, key)) == 2, SLOW), world.dump()
    limited = _rows(root, key)[1]
    assert limited.limit_kind == "rate_limit", limited
    assert "rate limit" in (limited.limit_message or "") and limited.limit_reset_at, limited
    assert _badge(engine, route.frame_id) is BadgeKind.LIMITED, world.dump()
    (recovery,) = engine.conn.execute("SELECT state, bounded_explanation FROM recoveries"
                                      " WHERE kind = 'usage_limit'").fetchall()
    assert recovery[0] == "open" and "try again in" in recovery[1], tuple(recovery)
    assert main(["limits", "--json"]) == 0
    (entry,) = json.loads(capsys.readouterr().out)["limited"]
    assert (entry["session_key"], entry["kind"]) == (key, "rate_limit")
    assert main(["usage", "--json", "--turns"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["total"]["input"] == sum(t["input"] for t in document["turns"]) \
        == usage["input_tokens"] * calls

    # auto-resume: nothing before the stated reset, exactly one continue line after it
    assert reconcile(engine).resumed_after_limit == 0
    assert retry_until(lambda: reconcile(engine).resumed_after_limit == 1,
                       anthropic_standin.LIMIT_RESET_S + SLOW), world.dump()
    assert retry_until(lambda: _activity(engine, route.frame_id) == "ready", SLOW), \
        world.dump()
    for _ in range(2):
        assert reconcile(engine).resumed_after_limit == 0
    # the CLI's own record of what was typed: one continue line (a request the CLI
    # repeats, or sends again with the next prompt, is still the one line). The CLI
    # writes its file on its own schedule, so under load the Stop hook can come first:
    # wait for the line, then look again after a pause for a second one
    session_id = world.session_id(route.frame_id)
    assert retry_until(lambda: len(_continues(world.home, session_id)) >= 1, SLOW), (
        world.dump(), screen(socket, pane), _tail(world.home, session_id))
    time.sleep(1.0)
    typed = _continues(world.home, session_id)
    assert len(typed) == 1, typed
    assert screen(socket, pane).count(CONTINUE_TEMPLATE) == 1
    assert _badge(engine, route.frame_id) is BadgeKind.READY


def test_real_codex_turn_usage(codex_cli: RealCli, codex_clis: RealClis, tmp_path: Path,
                               tmux_socket: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with openai_standin.OpenAIStandin() as standin:
        person = make_person(tmp_path, codex_clis, standin.base_url)
        act_as_person(monkeypatch, tmp_path, person)
        engine = make_codex_engine(tmp_path, tmux_socket, codex_clis)
        try:
            route = engine.project_enter(new_request_id(), PROJECT)
            engine.frame_start(new_request_id(), route.frame_id, Provider.CODEX)
            pane = main_pane(engine)
            fail_unless(lambda: "Ask Codex to do anything" in codex_screen(tmux_socket, pane),
                        60, lambda: codex_screen(tmux_socket, pane))
            time.sleep(1.0)
            codex_type(tmux_socket, pane, "hello usage")
            root = switchboard_home(tmp_path).root

            def rows() -> list[UsageRow]:
                return _rows(root, _key(engine, route.frame_id))
            fail_unless(lambda: len(rows()) == 1, 60,
                        lambda: f"{rows()}\n{codex_screen(tmux_socket, pane)}")
            (row,) = rows()
        finally:
            engine.conn.close()
    usage = openai_standin.USAGE
    calls = row.requests
    cached = usage["input_tokens_details"]["cached_tokens"]
    assert 1 <= calls <= len(standin.responses_requests()), row
    assert (row.input_tokens, row.cache_read_tokens, row.output_tokens,
            row.reasoning_tokens) == ((usage["input_tokens"] - cached) * calls, cached * calls,
                                      usage["output_tokens"] * calls,
                                      usage["output_tokens_details"]["reasoning_tokens"]
                                      * calls), row
    assert row.model_id == "gpt-5.4" and row.provider == "codex"


def test_real_switch_from_claude_to_codex(claude_cli: RealCli, codex_clis: RealClis,
                                          tmp_path: Path, tmux_socket: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The person moves a task from real Claude Code to real Codex: Claude is stopped,
    Codex starts in the same checkout with the claim line and claims the handover (the
    task's state so far); Claude's session stays readable in the frame's history."""
    from core.evidence.store import session_detail
    from core.runtime.handover import handover_path
    from core.usage.switch_provider import switch_provider
    from tests.realcli.harness import make_real_engine, xdg_home
    from tests.realcli.harness_claude import claude_command, seed_home

    root = tmp_path / "person"
    with anthropic_standin.AnthropicStandin() as claude_api, \
            openai_standin.OpenAIStandin() as openai_api:
        person = make_person(root, codex_clis, openai_api.base_url)
        for name in list(os.environ):
            if name.startswith(SCRUBBED_PREFIXES):
                monkeypatch.delenv(name)
        for name, value in person_env(person).items():
            monkeypatch.setenv(name, value)
        for name in ("SWITCHBOARD_HOME", "SWITCHBOARD_CONFIG"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("XDG_STATE_HOME", str(root / ".local" / "state"))
        monkeypatch.setenv("XDG_CONFIG_HOME", str(root / ".config"))
        claude_home = seed_home(tmp_path / "claude-home", [person.project], claude_cli.version)
        engine = make_real_engine(
            root, tmux_socket,
            {Provider.CLAUDE: claude_command(claude_cli.binary, claude_home, claude_api.url),
             Provider.CODEX: (str(codex_clis.codex),)}, home=xdg_home(root))
        try:
            route = engine.project_enter(new_request_id(), PROJECT)
            engine.frame_start(new_request_id(), route.frame_id, Provider.CLAUDE)
            pane = main_pane(engine)
            assert retry_until(lambda: "? for shortcuts" in screen(tmux_socket, pane), SLOW), \
                screen(tmux_socket, pane)
            type_prompt(tmux_socket, pane, "hello before the move")
            assert retry_until(lambda: _activity(engine, route.frame_id) == "ready", SLOW), \
                screen(tmux_socket, pane)
            old_key = _key(engine, route.frame_id)

            moved = switch_provider(engine, new_request_id(), route.frame_id, Provider.CODEX)
            assert moved.stopped and moved.old_session_key == old_key
            home = xdg_home(root)
            claimed = handover_path(home, route.frame_id).with_suffix(".claimed")
            codex_pane = main_pane(engine)
            assert retry_until(claimed.exists, SLOW), codex_screen(tmux_socket, codex_pane)
            assert retry_until(lambda: "Claimed brief" in codex_screen(tmux_socket,
                                                                       codex_pane), SLOW), \
                codex_screen(tmux_socket, codex_pane)
            outputs = [json.dumps(r.body) for r in openai_api.responses_requests()]
            assert any("taking over the task" in body and "from a claude agent" in body
                       for body in outputs)
            new_key = _key(engine, route.frame_id)
            assert ":codex:" in new_key and new_key != old_key
            sessions = engine.conn.execute(
                "SELECT s.provider FROM frame_sessions fs JOIN provider_sessions s"
                " ON s.session_key = fs.session_key WHERE fs.frame_id = ? ORDER BY fs.rowid",
                (route.frame_id,)).fetchall()
            assert [r[0] for r in sessions] == ["claude", "codex"]
            old = session_detail(home, old_key)  # the earlier session stays readable
            assert old.recorded and old.provider == "claude" and old.timeline
        finally:
            engine.conn.close()


def test_real_codex_usage_limit(codex_cli: RealCli, codex_clis: RealClis, tmp_path: Path,
                                tmux_socket: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Real Codex refused with 429 usage_limit_reached: the frame is limited (badge and
    recovery) from what Codex wrote into its rollout file."""
    with openai_standin.OpenAIStandin() as standin:
        person = make_person(tmp_path, codex_clis, standin.base_url)
        act_as_person(monkeypatch, tmp_path, person)
        engine = make_codex_engine(tmp_path, tmux_socket, codex_clis)
        try:
            route = engine.project_enter(new_request_id(), PROJECT)
            engine.frame_start(new_request_id(), route.frame_id, Provider.CODEX)
            pane = main_pane(engine)
            fail_unless(lambda: "Ask Codex to do anything" in codex_screen(tmux_socket, pane),
                        60, lambda: codex_screen(tmux_socket, pane))
            time.sleep(1.0)
            codex_type(tmux_socket, pane, f"{openai_standin.LIMIT_WORD} please")
            # Codex fires no Stop for the refused turn: the reader its first hook started,
            # or the next reconcile (after QUIET_MS without a hook), finds the error

            def limited() -> bool:
                reconcile(engine)
                return _badge(engine, route.frame_id) is BadgeKind.LIMITED
            fail_unless(limited, 60 + QUIET_MS / 1000,
                        lambda: f"{_activity(engine, route.frame_id)}\n"
                                f"{codex_screen(tmux_socket, pane)}")
            (recovery,) = engine.conn.execute(
                "SELECT state, bounded_explanation FROM recoveries WHERE kind = 'usage_limit'"
            ).fetchall()
            assert recovery[0] == "open" and "usage limit" in recovery[1], tuple(recovery)
            (row,) = _rows(switchboard_home(tmp_path).root, _key(engine, route.frame_id))
            assert row.limit_kind == "usage_limit" and row.requests == 0, row
        finally:
            engine.conn.close()
