"""In a browser (`switchboard serve` runs `ui --browser`) no tmux view is on screen, so
the preview also reads the agent its view shows; in tmux that frame is never read.

As in test_preview, the client's read is recorded (the real pane read is
core.runtime.preview, tested on a real tmux server in tests/integration/test_preview.py).
"""

from __future__ import annotations

from core.context.requests import new_request_id
from core.model.enums import Activity
from navigator.app import SwitchboardApp
from navigator.widgets.preview import PanePreview
from tests.navigator.helpers import select_frame, settle
from tests.navigator.scenario import Scenario, set_activity

SIZE = (100, 40)


async def test_the_browser_previews_the_agent_a_view_shows(demo: Scenario) -> None:
    demo.engine.view_focus(new_request_id(), demo.views["alpha"], demo.frames["Write docs"])
    set_activity(demo, "Write docs", Activity.NEEDS_INPUT, "live")
    asked: list[str] = []

    def recorded_preview(frame_id: str) -> list[str]:
        asked.append(frame_id)
        return ["Allow Bash(rm -rf build)?", "1. Yes  2. No"]

    demo.client.preview = recorded_preview  # type: ignore[method-assign]
    for browser, expected in ((False, []), (True, [demo.frames["Write docs"]])):
        asked.clear()
        app = SwitchboardApp(demo.client, browser=browser)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            preview = app.query_one(PanePreview)
            await select_frame(pilot, demo, "Write docs")
            await pilot.pause(0.6)
            await settle(pilot)
            assert asked == expected
            assert preview.has_class("-visible") is browser
            if browser:
                assert "Allow Bash(rm -rf build)?" in str(preview.render())
