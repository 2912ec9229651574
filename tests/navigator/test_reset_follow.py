"""A navigator running through `switchboard reset` shows the new, empty registry, not
frames that no longer exist (issue 31.8)."""

from __future__ import annotations

from core.config.registry import reset_registry
from navigator.app import SwitchboardApp
from tests.navigator.helpers import settle, wait_until
from tests.navigator.scenario import Scenario


def _titles(app: SwitchboardApp) -> set[str]:
    state = app.navigator_state
    return set() if state is None else {f.title for p in state.projects for f in p.frames}


async def test_the_tree_follows_a_reset(demo: Scenario) -> None:
    app = SwitchboardApp(demo.client)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert "Fix login" in _titles(app)
        reset_registry(demo.home, confirm_generation=demo.engine.generation_id)
        await wait_until(pilot, lambda: "Fix login" not in _titles(app), timeout=20)
        assert demo.client.engine.generation_id != demo.engine.generation_id
