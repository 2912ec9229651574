"""Messages send the person to a key, not to a panel the layout may hide (issue 40.8).

A low or narrow navigator hides the Recoveries and Inbox panels (a compact one below
14 rows shows neither; the 40x23 sidebar of an 80x24 terminal gives them only the
rows its tree leaves). Each message that sent the person "to the Recoveries panel"
now names the palette entry, and the palette entry works at such a size.
"""

from __future__ import annotations

from textual.pilot import Pilot

from core.model.enums import Actionability, RecoveryKind
from navigator.app import SwitchboardApp
from navigator.screens.recovery import RecoveryExplanationScreen
from navigator.widgets.inbox import ACK_TITLE, InboxList
from navigator.widgets.recoveries import (
    DISMISS_ANYWHERE,
    DISMISS_TITLE,
    OPEN_ANYWHERE,
    OPEN_TITLE,
    RecoveryList,
)
from tests.navigator.helpers import notices, settle
from tests.navigator.scenario import Scenario, add_recovery

SHORT = (40, 12)
"""A navigator too low for the Recoveries panel (compact and short)."""


def test_the_words_name_the_palette_entries_they_send_to() -> None:
    assert OPEN_ANYWHERE == f"ctrl+p › {OPEN_TITLE}" == "ctrl+p › Open recovery"
    assert DISMISS_ANYWHERE == f"ctrl+p › {DISMISS_TITLE}" == "ctrl+p › Dismiss recovery"
    assert ACK_TITLE == "Acknowledge message"


async def _palette(pilot: Pilot[None], title: str) -> None:
    """ctrl+p, the entry's title typed, enter: what a person does with the words."""
    await pilot.press("ctrl+p")
    await pilot.pause()
    await pilot.press(*title)
    await pilot.pause(0.3)
    await pilot.press("enter")
    await settle(pilot)


async def test_a_hidden_recovery_is_dismissed_with_the_key_d_names(demo: Scenario) -> None:
    (recovery_id,) = demo.recoveries
    app = SwitchboardApp(demo.client)
    async with app.run_test(size=SHORT) as pilot:
        await settle(pilot)
        assert app.query_one(RecoveryList).selected_recovery is not None
        assert app.has_class("-short") and not app.query_one(RecoveryList).display
        await pilot.press("d")  # outside its (hidden) panel: it says where it works
        await pilot.pause()
        said = [m for _, m in notices(app)]
        assert any(f"or {DISMISS_ANYWHERE} from anywhere" in m for m in said), said
        await _palette(pilot, DISMISS_TITLE)  # what it said, typed
    row = demo.engine.conn.execute("SELECT state FROM recoveries WHERE recovery_id = ?",
                                   (recovery_id,)).fetchone()
    assert row[0] == "dismissed"


async def test_a_hidden_recovery_is_opened_with_the_key_the_toasts_name(
        demo: Scenario) -> None:
    demo.client.dismiss_recovery(demo.recoveries[0])
    add_recovery(demo, "Write docs", RecoveryKind.PANE_VANISHED, Actionability.MANUAL,
                 "Look at the pane of Write docs yourself.")
    app = SwitchboardApp(demo.client)
    async with app.run_test(size=SHORT) as pilot:
        await settle(pilot)
        assert not app.query_one(RecoveryList).display
        await _palette(pilot, OPEN_TITLE)
        assert isinstance(app.screen, RecoveryExplanationScreen)


async def test_a_and_r_without_a_target_do_not_send_to_a_panel(demo: Scenario) -> None:
    demo.client.dismiss_recovery(demo.recoveries[0])
    app = SwitchboardApp(demo.client)
    async with app.run_test(size=SHORT) as pilot:
        await settle(pilot)
        assert not app.query_one(InboxList).display
        await pilot.press("R")
        await pilot.pause()
        said = [m for _, m in notices(app)]
        assert "No recovery selected: none is open." in said, said
        assert not any("panel." in m for m in said), said
