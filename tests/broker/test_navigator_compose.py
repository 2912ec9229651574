"""The person composes a message to the selected frame's agent from the navigator."""

from __future__ import annotations

from typing import Any

from navigator.app import SwitchboardApp
from tests.navigator.conftest import _demo_template, demo  # noqa: F401 - fixtures
from tests.navigator.helpers import notices, select_frame, settle
from tests.navigator.scenario import Scenario

SIZE = (100, 30)


class _Client:
    """The real client; only the broker send is recorded (the broker is tested on its own)."""

    def __init__(self, scenario: Scenario) -> None:
        self._client = scenario.client
        self.sent: list[tuple[str, str]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def message_frame(self, frame_id: str, text: str) -> None:
        self.sent.append((frame_id, text))


async def test_t_composes_a_message_for_the_selected_frame(demo: Scenario) -> None:  # noqa: F811
    client = _Client(demo)
    app = SwitchboardApp(client)  # type: ignore[arg-type]
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select_frame(pilot, demo, "Fix login")
        frame_id = demo.frames["Fix login"]
        await pilot.press("t")
        await settle(pilot)
        await pilot.press("enter")  # empty: refused in the dialog, nothing sent
        await settle(pilot)
        assert client.sent == []
        for key in "hi there":
            await pilot.press("space" if key == " " else key)
        await pilot.press("enter")
        await settle(pilot)
        assert client.sent == [(frame_id, "hi there")]
        assert any("Message for Fix login sent" in text for _, text in notices(app))
