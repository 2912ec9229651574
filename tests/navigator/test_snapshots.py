"""Snapshots of the main screens at 80x24 and in a 40-column sidebar (40x40), plus the
compact (26x23) and too-small (12x23) navigator panes.

Registries come from the frozen scenario (fixed clock, sequential ids), so
every pixel is deterministic. Update deliberately: ``pytest --snapshot-update``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable

import pytest
from textual.pilot import Pilot
from textual.widgets import Input

from navigator.app import SwitchboardApp
from tests.navigator.helpers import select_frame, settle
from tests.navigator.scenario import Scenario
from tests.navigator.test_session_detail import record_frame_work, utc  # noqa: F401

WIDE = (80, 24)
SIDEBAR = (40, 40)


def loaded(scenario: Scenario | None = None, frame: str | None = None,
           keys: Iterable[str] = (), pause: float = 0.0) -> Callable[[Pilot], Awaitable[None]]:
    """Wait for the first state, optionally select a frame (and rest on it ``pause``
    seconds, e.g. for the preview) and press keys."""

    async def run_before(pilot: Pilot) -> None:
        await settle(pilot)
        if scenario is not None and frame is not None:
            await select_frame(pilot, scenario, frame)
            if pause:
                await pilot.pause(pause)
                await settle(pilot)
        for key in keys:
            await pilot.press(key)
            await pilot.pause()
        for field in pilot.app.query(Input):  # no blinking cursor in a snapshot
            field.cursor_blink = False
        for screen in pilot.app.screen_stack:
            for field in screen.query(Input):
                field.cursor_blink = False
        await settle(pilot)
        pilot.app.clear_notifications()  # toasts carry timing, not layout
        await pilot.pause()

    return run_before


@pytest.mark.parametrize("size", [WIDE, SIDEBAR], ids=["80x24", "40x40"])
def test_main_screen(snap_compare, demo: Scenario, size: tuple[int, int]) -> None:
    assert snap_compare(SwitchboardApp(demo.client), terminal_size=size,
                        run_before=loaded(demo, "Fix login"))


@pytest.mark.parametrize("size", [WIDE, SIDEBAR], ids=["80x24", "40x40"])
def test_first_run_screen(snap_compare, empty: Scenario, size: tuple[int, int]) -> None:
    assert snap_compare(SwitchboardApp(empty.client), terminal_size=size,
                        run_before=loaded())


@pytest.mark.parametrize("size", [WIDE, SIDEBAR], ids=["80x24", "40x40"])
def test_complete_dialog(snap_compare, demo: Scenario, size: tuple[int, int]) -> None:
    assert snap_compare(SwitchboardApp(demo.client), terminal_size=size,
                        run_before=loaded(demo, "Fix login", ["c", *"login fixed"]))


@pytest.mark.parametrize("size", [WIDE, SIDEBAR], ids=["80x24", "40x40"])
def test_new_task_dialog(snap_compare, demo: Scenario, size: tuple[int, int]) -> None:
    keys = ["p", *"Add docs", "enter", *"Write the README section for worktrees."]
    assert snap_compare(SwitchboardApp(demo.client), terminal_size=size,
                        run_before=loaded(demo, "beta", keys))


def test_close_confirmation(snap_compare, demo: Scenario) -> None:
    assert snap_compare(SwitchboardApp(demo.client), terminal_size=SIDEBAR,
                        run_before=loaded(demo, "Write docs", ["x"]))


@pytest.mark.parametrize("size", [WIDE, SIDEBAR], ids=["80x24", "40x40"])
def test_help_screen(snap_compare, demo: Scenario, size: tuple[int, int]) -> None:
    assert snap_compare(SwitchboardApp(demo.client), terminal_size=size,
                        run_before=loaded(demo, None, ["question_mark"]))


def test_search_filter(snap_compare, demo: Scenario) -> None:
    assert snap_compare(SwitchboardApp(demo.client), terminal_size=WIDE,
                        run_before=loaded(demo, None, ["slash", *"login"]))


def test_bound_view_in_direct_mode(snap_compare, demo: Scenario) -> None:
    """A navigator pane bound to its view, after m switched it to direct mode."""
    app = SwitchboardApp(demo.client, view_id=demo.views["alpha"])
    assert snap_compare(app, terminal_size=SIDEBAR,
                        run_before=loaded(demo, "Write docs", ["m"]))


@pytest.mark.parametrize("size", [WIDE, SIDEBAR], ids=["80x24", "40x40"])
def test_session_timeline(snap_compare, demo: Scenario, utc: None,  # noqa: F811
                          size: tuple[int, int]) -> None:
    """The i screen on a frame that failed, fixed and handed off (fixed times, UTC)."""
    record_frame_work(demo, "Fix login")
    assert snap_compare(SwitchboardApp(demo.client), terminal_size=size,
                        run_before=loaded(demo, "Fix login", ["i"]))


COMPACT = (26, 23)  # the navigator pane when an 80x24 terminal attaches to a view
TOO_SMALL = (12, 23)


def test_compact_sidebar(snap_compare, demo: Scenario) -> None:
    """Narrower than the configured width: top-edge titles, the recovery kept in
    sight, an idle inbox hidden, a one-row footer."""
    assert snap_compare(SwitchboardApp(demo.client), terminal_size=COMPACT,
                        run_before=loaded(demo, "Fix login"))


def test_too_small_pane(snap_compare, demo: Scenario) -> None:
    """Below the compact minimum: one line that says what the pane needs."""
    assert snap_compare(SwitchboardApp(demo.client), terminal_size=TOO_SMALL,
                        run_before=loaded(demo, "Fix login"))


@pytest.mark.parametrize("size", [WIDE, SIDEBAR], ids=["80x24", "40x40"])
def test_parked_agent_preview(snap_compare, demo: Scenario, size: tuple[int, int]) -> None:
    """Resting on a parked working agent shows what its pane last printed."""
    from core.context.requests import new_request_id
    from core.model.enums import Activity
    from tests.navigator.scenario import set_activity

    demo.engine.view_focus(new_request_id(), demo.views["alpha"], demo.frames["Write docs"])
    set_activity(demo, "Fix login", Activity.WORKING, "live")
    demo.client.preview = lambda frame_id: [  # type: ignore[method-assign]
        "$ python -m pytest -q tests/test_login.py",
        "F..", "FAILED tests/test_login.py::test_expired_token", "1 failed, 2 passed in 0.31s",
        "● Fixing the token expiry check in auth.py"]
    assert snap_compare(SwitchboardApp(demo.client), terminal_size=size,
                        run_before=loaded(demo, "Fix login", [], pause=0.8))
