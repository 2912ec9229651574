"""i opens the selected frame's session evidence (read in a worker, shown read-only)."""

from __future__ import annotations

from navigator.app import SwitchboardApp
from navigator.screens.session_detail import SessionDetailScreen
from storage.session_db import open_session_db, record_hook_event, session_db_path
from tests.navigator.helpers import notices, select_frame, select_project, settle
from tests.navigator.scenario import Scenario

SIZE = (80, 24)


def record_tool_run(scenario: Scenario, title: str) -> str:
    key = scenario.frame_row(title)["current_session_key"]
    conn = open_session_db(session_db_path(scenario.home.root, key), now_ms=1_000)
    try:
        for event, kind, at in (("PreToolUse", "tool_started", 1_000),
                                ("PostToolUse", "tool_finished", 1_250)):
            record_hook_event(conn, session_key=key, provider="claude", project_id="p",
                              project_root="/src", event=event, kind=kind, now_ms=at,
                              turn_id="t-1", tool_name="Bash")
    finally:
        conn.close()
    return key


async def test_i_shows_the_selected_frames_tool_runs_and_events(demo: Scenario) -> None:
    record_tool_run(demo, "Fix login")
    app = SwitchboardApp(demo.client)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select_frame(pilot, demo, "Fix login")
        await pilot.press("i")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, SessionDetailScreen)
        assert screen.detail.counts.ok == 1 and screen.detail.counts.events == 2
        assert screen.detail.tool_runs[0].duration_ms == 250
        shown = app.export_screenshot().replace("&#160;", " ")
        assert "Bash" in shown and "250 ms" in shown and "PreToolUse" in shown
        (agent,) = screen.detail.agents  # one provider session, running after its tool
        assert (agent.type, agent.status) == ("claude", "running")
        assert "Agent" in shown and "running" in shown
        await pilot.press("escape")
        await settle(pilot)
        assert not isinstance(app.screen, SessionDetailScreen)


async def test_i_on_a_frame_without_evidence_says_so(demo: Scenario) -> None:
    app = SwitchboardApp(demo.client)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select_frame(pilot, demo, "Write docs")
        await pilot.press("i")
        await settle(pilot)
        assert isinstance(app.screen, SessionDetailScreen)
        assert not app.screen.detail.recorded


async def test_i_without_a_frame_warns(demo: Scenario) -> None:
    alpha_id = next(p.project_id for p in demo.engine.config.projects if p.name == "beta")
    app = SwitchboardApp(demo.client)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select_project(pilot, alpha_id)
        await pilot.press("i")
        await settle(pilot)
        assert not isinstance(app.screen, SessionDetailScreen)
        assert any(severity == "warning" for severity, _ in notices(app))
