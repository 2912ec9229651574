"""What agents wrote is drawn spelled out: a message with ESC[2J to the person does not
wipe the navigator, a legacy title is shown escaped, a preview keeps colours only."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.text import Text
from textual.content import Content

from core.model.enums import Activity
from core.model.text import sgr_only
from navigator.app import SwitchboardApp
from navigator.widgets.inbox import InboxList
from navigator.widgets.preview import PanePreview
from tests.navigator.helpers import select_frame, settle
from tests.navigator.scenario import Scenario, set_activity

SIZE = (100, 40)
WIPE = "\x1b[2J\x1b[Hwiped\x07"


@dataclass(frozen=True)
class _Message:
    message_id: int
    sender: str
    text: str


class _HostileInbox:
    """The real client, with an inbox holding what a steered agent could send."""

    def __init__(self, scenario: Scenario) -> None:
        self._client = scenario.client

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def inbox(self, view_id: str) -> list[_Message]:
        return [_Message(9, "evil\x1b]0;title\x07", f"look {WIPE} \u009b31m \u202eesrever")]


async def test_a_message_with_escapes_is_drawn_spelled_out(demo: Scenario) -> None:
    app = SwitchboardApp(_HostileInbox(demo))  # type: ignore[arg-type]
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        prompt = app.query_one(InboxList).get_option("9").prompt
        plain = prompt.plain if isinstance(prompt, Text) else str(prompt)
        assert plain == ("evil\\x1b]0;title\\x07: look \\x1b[2J\\x1b[Hwiped\\x07 \\x9b31m "
                         "\\u202eesrever")


async def test_a_legacy_title_is_shown_escaped(demo: Scenario) -> None:
    with demo.engine.conn:  # a row written before the rule existed
        demo.engine.conn.execute("UPDATE frames SET title = ? WHERE frame_id = ?",
                                 ("Fix\x1b[8m login\nforged row", demo.frames["Fix login"]))
    app = SwitchboardApp(demo.client)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        titles = [f.title for p in app.navigator_state.projects for f in p.frames]
        assert "Fix\\x1b[8m login\\nforged row" in titles
        assert not any("\x1b" in t or "\n" in t for t in titles)


async def test_a_preview_keeps_colours_and_nothing_else(demo: Scenario) -> None:
    from core.context.requests import new_request_id

    demo.engine.view_focus(new_request_id(), demo.views["alpha"], demo.frames["Write docs"])
    set_activity(demo, "Fix login", Activity.WORKING, "live")
    captured = "\x1b[31mred\x1b[0m then \x1b]52;c;ZXZpbA==\x07\x1b[2Jafter"

    def preview(frame_id: str) -> list[str]:  # what core.runtime.preview returns
        return [sgr_only(captured)]

    demo.client.preview = preview  # type: ignore[method-assign]
    app = SwitchboardApp(demo.client)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select_frame(pilot, demo, "Fix login")
        await pilot.pause(0.6)
        await settle(pilot)
        shown = app.query_one(PanePreview).render()
        assert isinstance(shown, Content)
        assert shown.plain == "red then \\x1b]52;c;ZXZpbA==\\x07\\x1b[2Jafter"
        coloured = [(s.start, s.end) for s in shown.spans]
        assert coloured == [(0, 3)]  # "red" keeps its colour
