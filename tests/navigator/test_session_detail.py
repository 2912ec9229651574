"""i opens the selected frame's session evidence (read in a worker, shown read-only)."""

from __future__ import annotations

import pytest
from textual.widgets import OptionList

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


# ----------------------------------------------------------------- the frame's timeline

T0 = 1_700_000_000_000  # 22:13:20 UTC
PYTEST_FAIL = ("F                                                     [100%]\n"
               "FAILED test_calc.py::test_add - assert -1 == 5\n1 failed in 0.02s\n")


def record_frame_work(scenario: Scenario, title: str) -> str:
    """A frame's session that did real-shaped work: attempt, prompt, a failing pytest run,
    a Read, the passing run, and a claimed handoff; fixed times."""
    from core.evidence.capture import CommandFacts, Outcome
    from core.evidence.hook import prepare_command
    from storage.session_lineage import (
        SessionFacts,
        TaskFacts,
        WorkspaceFacts,
        record_attempt,
        record_handoff,
    )

    row = scenario.frame_row(title)
    key = row["current_session_key"]
    path = session_db_path(scenario.home.root, key)
    conn = open_session_db(path, now_ms=T0)
    session = SessionFacts(key, "claude", "p", "/src/alpha", row["frame_id"])
    common = {"session_key": key, "provider": "claude", "project_id": "p",
              "project_root": "/src/alpha", "frame_id": row["frame_id"], "turn_id": "t-1"}
    try:
        record_attempt(conn, session, TaskFacts(row["frame_id"], title, "ab" * 32, "tr-1",
                                                None), 1,
                       WorkspaceFacts("/src/alpha", "main", None, "main"), T0)
        record_hook_event(conn, event="UserPromptSubmit", kind="prompt_submitted",
                          now_ms=T0 + 1_000, prompt="Make the login test pass", **common)
        steps = [("toolu_1", "python -m pytest -q", PYTEST_FAIL, 1, 2_000, 3_400),
                 ("toolu_2", None, None, None, 4_000, 4_012),
                 ("toolu_3", "python -m pytest -q", "1 passed in 0.01s\n", 0, 6_000, 7_250)]
        for tool_use_id, command, output, code, start, end in steps:
            name = "Bash" if command else "Read"
            for event, kind, at in (("PreToolUse", "tool_started", start),
                                    ("PostToolUse", "tool_finished", end)):
                record = None
                if command:
                    facts = CommandFacts(command, "/src/alpha", finished=kind == "tool_finished",
                                         stdout=output if kind == "tool_finished" else "",
                                         exit_code=code if kind == "tool_finished" else None,
                                         exit_source="tool_response",
                                         outcome=(Outcome.PASSED if code == 0 else Outcome.FAILED)
                                         if kind == "tool_finished" else Outcome.UNKNOWN)
                    record = prepare_command(conn, path.parent, key, facts)
                record_hook_event(conn, event=event, kind=kind, now_ms=T0 + at, tool_name=name,
                                  tool_use_id=tool_use_id, command=record,
                                  failed=bool(record and record.outcome == "failed"), **common)
        record_handoff(conn, session, row["frame_id"], "tr-2", "Login fixed: add() added",
                       "review and merge", None, T0 + 9_000)
    finally:
        conn.close()
    return key


@pytest.fixture
def utc(monkeypatch: pytest.MonkeyPatch):
    """Local time is UTC here, so times in the screen and snapshots are the same anywhere."""
    import time

    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


async def open_details(pilot, scenario: Scenario, title: str) -> SessionDetailScreen:
    await settle(pilot)
    await select_frame(pilot, scenario, title)
    await pilot.press("i")
    await settle(pilot)
    screen = pilot.app.screen
    assert isinstance(screen, SessionDetailScreen)
    return screen


def shown_text(app: SwitchboardApp) -> str:
    return app.export_screenshot().replace("&#160;", " ")


async def test_timeline_shows_prompt_commands_failures_and_handoff(demo: Scenario,
                                                                   utc: None) -> None:
    record_frame_work(demo, "Fix login")
    app = SwitchboardApp(demo.client)
    async with app.run_test(size=(100, 50)) as pilot:
        screen = await open_details(pilot, demo, "Fix login")
        kinds = [(e.kind.value, e.text, e.status) for e in screen.detail.timeline]
        assert kinds == [
            ("task", "attempt 1 started", None),
            ("prompt", "Make the login test pass", None),
            ("command", "python -m pytest -q", "failed"),
            ("tool", "Read", "ok"),
            ("command", "python -m pytest -q", "passed"),
            ("handoff", "handoff claimed by the parent", None),
        ]
        failed, passed = screen.detail.commands
        assert (failed.exit_code, failed.duration_ms, failed.diagnostics) == (1, 1400, 1)
        assert (passed.exit_code, passed.duration_ms) == (0, 1250)
        (group,) = screen.detail.diagnostics
        assert (group.toolchain, group.file, group.code, group.count, group.fixed) == \
            ("pytest", "test_calc.py", "test_add", 1, True)
        timeline = screen.query_one("#timeline", OptionList)
        lines = [timeline.get_option_at_index(i).prompt.plain
                 for i in range(timeline.option_count)]
        assert lines[2] == "22:13:22 $ python -m pytest -q  failed exit 1  1400 ms"
        assert lines[4] == "22:13:26 $ python -m pytest -q  passed exit 0  1250 ms"
        assert lines[3] == "22:13:24 · Read  ok  12 ms"
        shown = shown_text(app)
        for text in ("Make the login test pass", "test_calc.py test_add: ", "assert -1 == 5",
                     "Login fixed: add() added", "next: review and merge", "Failures by signature",
                     "a all", "f failures"):
            assert text in shown, text

        await pilot.press("f")
        await pilot.pause()
        assert [e.status for e in screen.shown] == ["failed"]
        await pilot.press("t")
        await pilot.pause()
        assert [e.text for e in screen.shown] == ["python -m pytest -q", "Read",
                                                  "python -m pytest -q"]
        await pilot.press("c")
        await pilot.pause()
        assert [e.kind.value for e in screen.shown] == ["command", "command"]
        await pilot.press("a")
        await pilot.pause()
        assert len(screen.shown) == 6


async def test_enter_on_a_command_opens_its_output_in_the_pager(
        demo: Scenario, utc: None, tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The app is suspended and $PAGER (with its own arguments) gets the stored files."""
    from contextlib import contextmanager

    record_frame_work(demo, "Fix login")
    opened = tmp_path / "opened.txt"
    pager = tmp_path / "pager.sh"
    pager.write_text(f'#!/bin/sh\necho "$1" >> {opened}\ncat "$2" >> {opened}\n')
    pager.chmod(0o755)
    monkeypatch.setenv("PAGER", f"{pager} --flag")
    suspended = []
    app = SwitchboardApp(demo.client)

    @contextmanager
    def suspend():
        suspended.append(True)
        yield

    async with app.run_test(size=(100, 50)) as pilot:
        monkeypatch.setattr(app, "suspend", suspend)  # headless drivers cannot suspend
        await open_details(pilot, demo, "Fix login")
        await pilot.press("c")  # commands only: the failing run is first
        await pilot.pause()
        timeline = app.screen.query_one("#timeline")
        timeline.focus()
        timeline.highlighted = 0
        await pilot.press("enter")
        await pilot.pause()
        assert suspended == [True]
        assert opened.read_text() == "--flag\n" + PYTEST_FAIL
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, SessionDetailScreen)


def test_pager_argv_defaults_to_less() -> None:
    from navigator.screens.session_detail import pager_argv

    assert pager_argv(["/x"], {}) == ["less", "-R", "/x"]
    assert pager_argv(["/x", "/y"], {"PAGER": "most -s"}) == ["most", "-s", "/x", "/y"]


def test_prompts_and_outputs_stay_out_of_host_and_navigator_state(demo: Scenario) -> None:
    """Only the session's own file holds them: the states shared with frontends and
    other hosts never read it."""
    import json

    from core.state.state_builder import build_host_state
    from navigator.commands.output import to_plain

    record_frame_work(demo, "Fix login")
    for state in (demo.client.state(), build_host_state(demo.engine)):
        text = json.dumps(to_plain(state))
        for secret in ("Make the login test pass", "assert -1 == 5", "Login fixed",
                       "python -m pytest"):
            assert secret not in text, (type(state).__name__, secret)
