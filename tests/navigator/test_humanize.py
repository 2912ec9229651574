"""Toasts name frames, projects and views by their titles, not by UUID."""

from __future__ import annotations

from navigator.app import SwitchboardApp
from navigator.lookup import humanize
from tests.navigator.helpers import notices, select_frame, settle
from tests.navigator.scenario import Scenario


def test_known_ids_become_titles_and_unknown_ones_shrink(demo: Scenario) -> None:
    state = demo.client.state()
    fix = demo.frames["Fix login"]
    alpha = next(p.project_id for p in state.projects if p.name == "alpha")
    stranger = "0b6c2b3e-5d0a-4c47-9d3b-2f4f1e8a9c10"
    text = f"frame {fix} of project {alpha} blocks {stranger}; stop it"
    assert humanize(text, state) == \
        "frame “Fix login” of project “alpha” blocks 0b6c2b3e; stop it"
    assert humanize(text, None) == \
        f"frame {fix[:8]} of project {alpha[:8]} blocks 0b6c2b3e; stop it"


async def test_a_refusal_toast_names_the_frame(demo: Scenario) -> None:
    app = SwitchboardApp(demo.client)
    async with app.run_test(size=(100, 40)) as pilot:
        await settle(pilot)
        await select_frame(pilot, demo, "Fix login")  # running: the engine refuses a start
        await pilot.press("n")
        await settle(pilot)
    refusals = [m for severity, m in notices(app) if severity == "error"]
    assert refusals, notices(app)
    assert "“Fix login”" in refusals[-1] and demo.frames["Fix login"] not in refusals[-1]
