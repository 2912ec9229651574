"""F in the navigator: asks first, then makes the fork a sibling of the selected task; a
frame without an agent is refused in words; ? lists the key."""

from __future__ import annotations

from navigator.app import SwitchboardApp
from navigator.intents import KEY_BINDINGS
from navigator.screens.help import key_help
from tests.navigator.helpers import notices, settle
from tests.navigator.scenario import Scenario
from tests.navigator.test_snapshots import WIDE, loaded


def _frames(demo: Scenario) -> set[str]:
    return {row[0] for row in demo.client.engine.conn.execute("SELECT frame_id FROM frames")}


async def test_f_asks_then_forks_the_task_beside_it(demo: Scenario) -> None:
    from navigator.screens.confirm import ConfirmScreen

    source = demo.frame_row("Fix login")
    before = _frames(demo)
    app = SwitchboardApp(demo.client)
    async with app.run_test(size=WIDE) as pilot:
        await loaded(demo, "Fix login", ["F"])(pilot)
        assert isinstance(app.screen, ConfirmScreen)
        assert "copy of its conversation" in str(app.screen.query_one("#question").render())
        await pilot.press("escape")  # not confirmed: nothing is made
        await settle(pilot)
        assert _frames(demo) == before
        await pilot.press("F")
        await pilot.pause()
        await pilot.press("enter")
        await settle(pilot)
        assert not [n for severity, n in notices(app) if severity == "error"], notices(app)
    (made,) = _frames(demo) - before
    fork = demo.client.engine.conn.execute("SELECT * FROM frames WHERE frame_id = ?",
                                           (made,)).fetchone()
    assert (fork["parent_frame_id"], fork["depth"], fork["title"]) == \
        (source["parent_frame_id"], source["depth"], "fork of Fix login")
    assert demo.frame_row("Fix login")["current_session_key"] == source["current_session_key"]


async def test_f_on_a_frame_without_an_agent_says_so(demo: Scenario) -> None:
    before = _frames(demo)
    app = SwitchboardApp(demo.client)
    async with app.run_test(size=WIDE) as pilot:
        await loaded(demo, "beta")(pilot)
        await pilot.press("F")
        await settle(pilot)
        said = notices(app)
    assert _frames(demo) == before
    assert any("beta has no agent yet: n starts one, then F forks it." in text
               for _, text in said), said


def test_help_lists_f() -> None:
    keys = dict(key_help(binding for binding in KEY_BINDINGS if hasattr(binding, "key")))
    assert "F" in keys and "conversation" in keys["F"]
