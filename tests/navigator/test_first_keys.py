"""A key typed before the navigator's first state waits for it (``navigator.first_keys``).

The registry read is held back by a gate the test opens, so "before the first
state" is a fact of the test, not a race with the machine.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

import navigator.app
from navigator import loading
from navigator.app import SwitchboardApp
from navigator.screens.new_task import NewTaskScreen
from tests.navigator.helpers import notices, wait_until
from tests.navigator.scenario import Scenario

SIZE = (80, 24)


@pytest.fixture
def first_read(monkeypatch: pytest.MonkeyPatch) -> Iterator[asyncio.Event]:
    """Open it to let the navigator's registry reads through."""
    gate = asyncio.Event()
    real = loading.read_state_async

    async def gated(*args: Any, **kwargs: Any) -> Any:
        await gate.wait()
        return await real(*args, **kwargs)

    monkeypatch.setattr(loading, "read_state_async", gated)
    yield gate
    gate.set()


async def test_a_key_typed_before_the_first_state_acts_once_it_is_there(
        demo: Scenario, first_read: asyncio.Event) -> None:
    app = SwitchboardApp(demo.client, view_id=demo.views["alpha"])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("p")
        await pilot.pause(0.1)
        # nothing acted yet, and nothing was refused
        assert app.navigator_state is None
        assert not isinstance(app.screen, NewTaskScreen)
        assert notices(app) == []
        first_read.set()
        await wait_until(pilot, lambda: isinstance(app.screen, NewTaskScreen))
        assert notices(app) == []
        # once the state is there, keys pass straight on
        await pilot.press("escape")
        await pilot.press("p")
        await wait_until(pilot, lambda: isinstance(app.screen, NewTaskScreen))


async def test_keys_wait_no_longer_than_the_limit_for_a_read_that_never_comes(
        demo: Scenario, first_read: asyncio.Event, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(navigator.app, "HOLD_LIMIT_S", 0.3)
    app = SwitchboardApp(demo.client, view_id=demo.views["alpha"])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("p")
        # the key acts on what the navigator has (no state): it says why it does nothing
        # (``wait_until`` would wait for the gated load's worker too)
        for _ in range(60):
            if notices(app):
                break
            await pilot.pause(0.05)
        assert notices(app) == [("warning", "Select the frame the new task goes under.")]
        assert not isinstance(app.screen, NewTaskScreen)
