"""The i screen's usage section (issue 26): per turn and in total, with cost estimates
and a turn that ended on a rate limit; a snapshot at 80x24 and the pilot's view of it.

The rows are read from a transcript shaped like Claude Code's own by the same reader the
Stop hook starts, at fixed times (UTC), so every cell is deterministic.
"""

from __future__ import annotations

import json
from pathlib import Path

from textual.widgets import Static

from core.usage.worker import read_usage
from navigator.app import SwitchboardApp
from navigator.screens.session_detail import SessionDetailScreen
from tests.navigator.helpers import notices, settle
from tests.navigator.scenario import Scenario
from tests.navigator.test_session_detail import T0, record_frame_work, utc  # noqa: F401
from tests.navigator.test_snapshots import WIDE, loaded


def claude_line(msg_id: str, inp: int, out: int, cread: int, cwrite: int) -> str:
    return json.dumps({"type": "assistant", "message": {
        "id": msg_id, "model": "claude-sonnet-4-5", "role": "assistant", "content": [],
        "usage": {"input_tokens": inp, "output_tokens": out, "cache_read_input_tokens": cread,
                  "cache_creation_input_tokens": cwrite}}}) + "\n"


LIMIT = json.dumps({"type": "assistant", "isApiErrorMessage": True, "error": "rate_limit",
                    "apiErrorStatus": 429, "message": {"id": "e", "model": "<synthetic>",
                    "content": [{"type": "text", "text": "Claude AI usage limit reached|"
                                 "1700003600"}]}}) + "\n"


def record_usage(scenario: Scenario, title: str) -> str:
    """Two turns of the frame's session and a third that ended on a rate limit."""
    key = scenario.frame_row(title)["current_session_key"]
    transcript = scenario.home.root / "claude-transcript.jsonl"
    root = Path(scenario.home.root)
    for index, lines in enumerate([
            claude_line("m1", 1234, 56, 789, 321) + claude_line("m2", 2000, 300, 40_000, 0),
            claude_line("m3", 15_000, 1_200, 52_000, 8_000),
            LIMIT]):
        with transcript.open("a") as handle:
            handle.write(lines)
        read_usage(root, key, "claude", str(transcript), f"t-{index}", T0 + 10_000 * index)
    return key


def test_usage_section(snap_compare, demo: Scenario, utc: None) -> None:  # noqa: F811
    record_frame_work(demo, "Fix login")
    record_usage(demo, "Fix login")
    assert snap_compare(SwitchboardApp(demo.client), terminal_size=WIDE,
                        run_before=loaded(demo, "Fix login", ["i"]))


async def test_usage_section_totals(demo: Scenario, utc: None) -> None:  # noqa: F811
    record_frame_work(demo, "Fix login")
    record_usage(demo, "Fix login")
    app = SwitchboardApp(demo.client)
    async with app.run_test(size=WIDE) as pilot:
        await loaded(demo, "Fix login", ["i"])(pilot)
        assert isinstance(app.screen, SessionDetailScreen)
        usage = app.screen.query_one("#usage", Static)
        text = str(usage.render())
        assert usage.has_class("-shown")
        # 3 turns; the total is the sum of the rows (k: rounded to a tenth)
        assert "3 turns · in 18.2k out 1.6k · cache 92.8k/8.3k" in text, text
        assert "limited (rate_limit, resets 23:13:20)" in text, text


async def test_no_usage_no_section(demo: Scenario, utc: None) -> None:  # noqa: F811
    record_frame_work(demo, "Fix login")
    app = SwitchboardApp(demo.client)
    async with app.run_test(size=WIDE) as pilot:
        await loaded(demo, "Fix login", ["i"])(pilot)
        await settle(pilot)
        assert not app.screen.query_one("#usage", Static).has_class("-shown")


def test_usage_in_the_tree(snap_compare, demo: Scenario, utc: None) -> None:  # noqa: F811
    """u: tokens and estimated cost after each frame that used any, the fleet's on the
    Projects border."""
    record_frame_work(demo, "Fix login")
    record_usage(demo, "Fix login")
    assert snap_compare(SwitchboardApp(demo.client), terminal_size=WIDE,
                        run_before=loaded(demo, "Fix login", ["u"]))


async def test_u_shows_and_hides_usage(demo: Scenario, utc: None) -> None:  # noqa: F811
    from navigator.widgets.frames import FrameTree

    record_frame_work(demo, "Fix login")
    record_usage(demo, "Fix login")
    app = SwitchboardApp(demo.client)
    async with app.run_test(size=WIDE) as pilot:
        await loaded(demo, "Fix login", ["u"])(pilot)
        tree = app.query_one(FrameTree)
        frame = demo.frame_row("Fix login")["frame_id"]
        # 18,234 input + 1,556 output + 92,789 + 8,321 cache = 120,900 tokens (3 turns)
        assert tree._usage == {frame: "120.9k ~$0.14"}
        assert tree.border_subtitle.startswith("Σ 120.9k tokens · ~$0.14")
        await pilot.press("u")
        await settle(pilot)
        assert tree._usage == {} and tree.border_subtitle == ""


async def test_p_asks_then_moves_the_task_to_the_other_provider(demo: Scenario) -> None:
    from navigator.screens.confirm import ConfirmScreen

    frame = demo.frame_row("Fix login")
    app = SwitchboardApp(demo.client)
    async with app.run_test(size=WIDE) as pilot:
        await loaded(demo, "Fix login", ["P"])(pilot)
        assert isinstance(app.screen, ConfirmScreen)
        assert "carry the task on with codex" in str(app.screen.query_one("#question").render())
        await pilot.press("escape")  # not confirmed: nothing moves
        await settle(pilot)
        assert demo.frame_row("Fix login")["current_session_key"] == \
            frame["current_session_key"]
        await pilot.press("P")
        await pilot.pause()
        await pilot.press("enter")
        await settle(pilot)
        assert not [n for severity, n in notices(app) if severity == "error"]
        key = demo.frame_row("Fix login")["current_session_key"]
        assert key != frame["current_session_key"] and ":codex:" in key
