"""Enter on a recovery does what its actionability says: run, go and look, or explain.

Recoveries are written with the storage layer's named operation (as the
reconciler and sagas do) about real rows of the demo registry: a push's
control turn, a view, a launch, a surface.
"""

from __future__ import annotations

from core.apps.client import SubjectPlace
from core.model.enums import Actionability, RecoveryKind
from navigator.app import SwitchboardApp
from navigator.screens.recovery import RecoveryExplanationScreen
from navigator.widgets.frames import FrameTree, frame_key
from navigator.widgets.recoveries import RecoveryList
from tests.navigator.helpers import notices, settle
from tests.navigator.scenario import Scenario, add_recovery

SIZE = (80, 24)


def _one(demo: Scenario, sql: str, *args: str) -> str:
    return demo.engine.conn.execute(sql, args).fetchone()[0]


def _push_control_turn(demo: Scenario, title: str) -> str:
    """The control turn of the push that created ``title`` (it targets that child)."""
    return _one(demo, "SELECT c.control_turn_id FROM control_turns c JOIN view_transitions t"
                      " ON t.transition_id = c.transition_id WHERE t.kind = 'push'"
                      " AND c.target_frame_id = ?", demo.frames[title])


def _launch(demo: Scenario, title: str) -> str:
    return _one(demo, "SELECT launch_id FROM launch_intents WHERE frame_id = ?",
                demo.frames[title])


async def _press_enter_on(pilot, recovery_id: str) -> None:  # noqa: ANN001 - Pilot
    panel = pilot.app.query_one(RecoveryList)
    panel.focus()
    assert panel.highlight_key(recovery_id)
    await pilot.pause()
    await pilot.press("enter")
    await settle(pilot)


def _enter_label(app: SwitchboardApp) -> str:
    return app.screen.active_bindings["enter"].binding.description


def _state(demo: Scenario, recovery_id: str) -> str:
    return _one(demo, "SELECT state FROM recoveries WHERE recovery_id = ?", recovery_id)


def test_client_finds_the_view_and_frame_of_each_subject(demo: Scenario) -> None:
    client, alpha_view = demo.client, demo.views["alpha"]
    fix_login, alpha = demo.frames["Fix login"], demo.frames["alpha"]
    turn = _push_control_turn(demo, "Fix login")
    transition = _one(demo, "SELECT transition_id FROM control_turns WHERE control_turn_id = ?",
                      turn)
    surface = _one(demo, "SELECT surface_id FROM surfaces WHERE launch_id = ?",
                   _launch(demo, "Fix login"))
    assert client.recovery_subject("view", alpha_view) == SubjectPlace(alpha_view, alpha)
    assert client.recovery_subject("frame", fix_login) == SubjectPlace(alpha_view, fix_login)
    assert client.recovery_subject("control_turn", turn) == SubjectPlace(alpha_view, fix_login)
    assert client.recovery_subject("transition", transition) == SubjectPlace(alpha_view,
                                                                             fix_login)
    assert client.recovery_subject("launch", _launch(demo, "Fix login")) == \
        SubjectPlace(alpha_view, fix_login)
    assert client.recovery_subject("surface", surface) == SubjectPlace(alpha_view, fix_login)
    assert client.recovery_subject("surface", "no-such-surface") == SubjectPlace(None, None)
    assert client.recovery_subject("tmux_server", "x") == SubjectPlace(None, None)


async def test_enter_on_an_open_view_recovery_shows_its_frame(demo: Scenario) -> None:
    recovery = add_recovery(
        demo, "Fix login", RecoveryKind.CONTROL_SUBMIT_UNCERTAIN, Actionability.OPEN_VIEW,
        "No prompt evidence after the claim line was sent; open the view and check the agent.",
        subject=("control_turn", _push_control_turn(demo, "Fix login")))
    assert demo.view_row("alpha")["active_frame_id"] == demo.frames["alpha"]
    app = SwitchboardApp(demo.client)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        panel = app.query_one(RecoveryList)
        panel.focus()
        panel.highlight_key(recovery)
        await pilot.pause()
        assert _enter_label(app) == "Go to"
        await _press_enter_on(pilot, recovery)
        assert not [m for s, m in notices(app) if s == "error"], notices(app)
        frames = app.query_one(FrameTree)
        assert app.focused is frames
        assert frames.cursor_key == frame_key(demo.frames["Fix login"])
        assert app.current_view_id == demo.views["alpha"]
        assert any("check the agent" in m for _, m in notices(app))
    assert demo.view_row("alpha")["active_frame_id"] == demo.frames["Fix login"]  # shown
    assert _state(demo, recovery) == "open"  # looking is not resolving


async def test_enter_on_a_view_recovery_selects_what_it_shows_and_moves_nothing(
        demo: Scenario) -> None:
    recovery = add_recovery(
        demo, "alpha", RecoveryKind.TRANSITION_INTERRUPTED, Actionability.OPEN_VIEW,
        "A focus was interrupted; open the view and repeat the action if it is still wanted.",
        subject=("view", demo.views["alpha"]))
    revision = demo.view_row("alpha")["revision"]
    app = SwitchboardApp(demo.client)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.query_one(FrameTree).select_key(frame_key(demo.frames["beta"]))
        await _press_enter_on(pilot, recovery)
        assert app.query_one(FrameTree).cursor_key == frame_key(demo.frames["alpha"])
        assert app.target_view().view_id == demo.views["alpha"]
        assert not [m for s, m in notices(app) if s == "error"]
    assert demo.view_row("alpha")["revision"] == revision  # already shown: no request
    assert _state(demo, recovery) == "open"


async def test_enter_on_a_manual_recovery_explains_it(demo: Scenario) -> None:
    recovery = add_recovery(
        demo, "Fix login", RecoveryKind.LAUNCH_UNCERTAIN, Actionability.MANUAL,
        "The launch stopped before its pane was recorded. Press n on the frame to start it "
        "again.", subject=("launch", _launch(demo, "Fix login")))
    app = SwitchboardApp(demo.client)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        panel = app.query_one(RecoveryList)
        panel.focus()
        panel.highlight_key(recovery)
        await pilot.pause()
        assert _enter_label(app) == "Explain"
        await _press_enter_on(pilot, recovery)
        screen = app.screen
        assert isinstance(screen, RecoveryExplanationScreen)
        assert "Press n on the frame" in str(screen.query_one("#explanation").render())
        assert "Fix login (alpha)" in str(screen.query_one("#about").render())
        assert not [m for s, m in notices(app) if s == "error"]  # no refused-recover toast
        await pilot.press("escape")
        await settle(pilot)
        assert not isinstance(app.screen, RecoveryExplanationScreen)
    assert _state(demo, recovery) == "open"


async def test_enter_label_follows_the_highlighted_recovery(demo: Scenario) -> None:
    manual = add_recovery(demo, "Write docs", RecoveryKind.BIND_TIMEOUT, Actionability.MANUAL,
                          "The agent never reported its session.",
                          subject=("launch", _launch(demo, "Write docs")))
    app = SwitchboardApp(demo.client)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        panel = app.query_one(RecoveryList)
        panel.focus()
        panel.highlight_key(demo.recoveries[0])  # the demo's safe_auto one
        await pilot.pause()
        assert _enter_label(app) == "Recover"
        panel.highlight_key(manual)
        await pilot.pause()
        assert _enter_label(app) == "Explain"
