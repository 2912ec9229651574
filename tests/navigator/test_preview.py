"""The preview panel follows the selection: a parked live agent shows its last lines
after a short rest; the shown frame, a stopped one or a moved cursor shows none.

The pane itself is read by core.runtime.preview (tested on a real tmux server in
tests/integration/test_preview.py); here the client's read is recorded, so the
test sees exactly which frames the navigator asked about and how often."""

from __future__ import annotations

from core.model.enums import Activity
from navigator.app import SwitchboardApp
from navigator.widgets.preview import PanePreview
from tests.navigator.helpers import select_frame, settle
from tests.navigator.scenario import Scenario, set_activity

SIZE = (100, 40)


async def test_preview_shows_a_parked_agent_and_only_on_rest(demo: Scenario) -> None:
    from core.context.requests import new_request_id

    # Write docs is shown in main; Fix login's agent works parked
    demo.engine.view_focus(new_request_id(), demo.views["alpha"], demo.frames["Write docs"])
    set_activity(demo, "Write docs", Activity.WORKING, "live")
    set_activity(demo, "Fix login", Activity.WORKING, "live")
    asked: list[str] = []

    def recorded_preview(frame_id: str) -> list[str]:
        asked.append(frame_id)
        return ["$ pytest -q", "1 failed, 3 passed"]

    demo.client.preview = recorded_preview  # type: ignore[method-assign]
    app = SwitchboardApp(demo.client)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        preview = app.query_one(PanePreview)
        await select_frame(pilot, demo, "Fix login")
        await pilot.pause(0.6)
        await settle(pilot)
        assert preview.has_class("-visible")
        assert "1 failed, 3 passed" in str(preview.render())
        assert asked == [demo.frames["Fix login"]]
        # the frame shown in main needs no preview; nothing is read for it
        await select_frame(pilot, demo, "Write docs")
        await pilot.pause(0.6)
        await settle(pilot)
        assert not preview.has_class("-visible")
        assert asked == [demo.frames["Fix login"]]
        # passing over a frame without resting reads nothing (debounced)
        await select_frame(pilot, demo, "Fix login")
        await select_frame(pilot, demo, "Write docs")
        await pilot.pause(0.6)
        assert asked == [demo.frames["Fix login"]]
