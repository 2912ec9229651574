"""Subagents counted live under their frame, from the CLIs' SubagentStart/SubagentStop.

The fake agent (both providers) starts N subagents on "/subagents N" (one SubagentStart
each, left running, as a background subagent is) and stops them all on "/subagents
done". Through the real hook path on a real tmux server, each start and stop moves the
subagent's row in the session's evidence file; the navigator state carries the live
count in the frame's session, the tree label shows "2 subagents", ``i`` (session detail)
says how many run and lists them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from core.config.home import Home
from core.context.requests import new_request_id
from core.evidence.store import session_detail
from core.model.enums import Provider
from core.state.state_builder import build_navigator_state
from navigator.widgets.frames import subagents_suffix
from storage.session_db import open_session_db_readonly, session_db_path
from tests.integration.journey_env import make_live_engine, one, tmux, type_line
from tests.waiting import retry_until


def _frame(engine, frame_id: str):  # noqa: ANN001, ANN202
    state = build_navigator_state(engine)
    return next(f for p in state.projects for f in p.frames if f.frame_id == frame_id)


def _count(engine, frame_id: str) -> int | None:  # noqa: ANN001
    frame = _frame(engine, frame_id)
    return frame.current_session.subagents if frame.current_session else None


@pytest.mark.parametrize("provider", [Provider.CLAUDE, Provider.CODEX])
def test_subagents_are_counted_live_in_the_tree_and_in_the_session_detail(
        tmp_path: Path, tmux_socket: Path, monkeypatch: pytest.MonkeyPatch,
        provider: Provider) -> None:
    monkeypatch.setenv("SWITCHBOARD_HOME", str(tmp_path))
    engine = make_live_engine(tmp_path, tmux_socket)
    home = Home(root=tmp_path, config_path=tmp_path / "config.toml")
    route = engine.project_enter(new_request_id(), "alpha")
    frame_id = route.frame_id
    engine.frame_start(new_request_id(), frame_id, provider)
    main = one(engine, "SELECT main_pane_id FROM user_views")[0]

    def screen() -> str:
        return tmux(tmux_socket, "capture-pane", "-p", "-t", main)
    assert retry_until(lambda: ">" in screen().split(), 15), screen()
    type_line(tmux_socket, main, "hello")  # Codex names its session on the first prompt
    assert retry_until(lambda: one(engine, "SELECT s.activity FROM provider_sessions s JOIN"
                                           " frames f ON f.current_session_key = s.session_key"
                                           " WHERE f.frame_id = ?", frame_id) == ("ready",), 15)
    assert _count(engine, frame_id) is None  # none yet: the JSON is as it was

    type_line(tmux_socket, main, "/subagents 2")
    assert retry_until(lambda: _count(engine, frame_id) == 2, 15), screen()
    frame = _frame(engine, frame_id)
    assert subagents_suffix(frame) == "  · 2 subagents"
    key = one(engine, "SELECT current_session_key FROM frames WHERE frame_id = ?", frame_id)[0]
    detail = session_detail(home, key)
    assert detail.counts.subagents == 2
    assert sorted((a.type, a.status) for a in detail.agents if a.type == "subagent") == [
        ("subagent", "running"), ("subagent", "running")]

    type_line(tmux_socket, main, "/subagents 1")  # one more: three at once
    assert retry_until(lambda: _count(engine, frame_id) == 3, 15), screen()

    type_line(tmux_socket, main, "/subagents done")
    assert retry_until(lambda: _count(engine, frame_id) is None, 15), screen()
    assert subagents_suffix(_frame(engine, frame_id)) == ""
    detail = session_detail(home, key)
    assert detail.counts.subagents == 0
    assert [a.status for a in detail.agents if a.type == "subagent"] == ["completed"] * 3


@pytest.mark.parametrize("provider", [Provider.CLAUDE, Provider.CODEX])
def test_a_subagent_that_starts_after_the_leads_turn_leaves_the_lead_ready(
        tmp_path: Path, tmux_socket: Path, monkeypatch: pytest.MonkeyPatch,
        provider: Provider) -> None:
    """A background subagent starting after the lead's Stop (the Codex fake also sends the
    subagent's own UserPromptSubmit under the lead's session with its agent_id, as Codex
    0.171.0 does) is counted, and the lead stays ready: nothing of the subagent's would
    ever end a "working" it caused."""
    monkeypatch.setenv("SWITCHBOARD_HOME", str(tmp_path))
    engine = make_live_engine(tmp_path, tmux_socket)
    route = engine.project_enter(new_request_id(), "alpha")
    frame_id = route.frame_id
    engine.frame_start(new_request_id(), frame_id, provider)
    main = one(engine, "SELECT main_pane_id FROM user_views")[0]

    def screen() -> str:
        return tmux(tmux_socket, "capture-pane", "-p", "-t", main)

    def activity() -> str | None:
        row = one(engine, "SELECT s.activity FROM provider_sessions s JOIN frames f"
                          " ON f.current_session_key = s.session_key WHERE f.frame_id = ?",
                  frame_id)
        return None if row is None else str(row[0])
    assert retry_until(lambda: ">" in screen().split(), 15), screen()
    type_line(tmux_socket, main, "hello")
    assert retry_until(lambda: activity() == "ready", 15), screen()
    type_line(tmux_socket, main, "/subagents after 1")
    assert retry_until(lambda: _count(engine, frame_id) == 1, 15), screen()
    key = one(engine, "SELECT current_session_key FROM frames WHERE frame_id = ?", frame_id)[0]

    def prompts() -> list[str]:
        conn = open_session_db_readonly(session_db_path(tmp_path, key))
        try:
            return [str(r[0]) for r in conn.execute(
                "SELECT source_id FROM events WHERE source_id = 'UserPromptSubmit'")]
        finally:
            conn.close()
    # the Codex subagent's own prompt arrives (and is recorded) after the lead's Stop
    expected = 3 if provider is Provider.CODEX else 2
    assert retry_until(lambda: len(prompts()) == expected, 15), prompts()
    assert activity() == "ready", screen()
