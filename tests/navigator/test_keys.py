"""Every navigator key against a real registry: press the key, then read the rows."""

from __future__ import annotations

from textual.widgets import Static

from core.context.requests import new_request_id
from core.model.enums import Activity
from navigator.app import SwitchboardApp
from navigator.screens.complete import CompleteReturnScreen
from navigator.screens.confirm import ConfirmScreen
from navigator.screens.help import HelpScreen
from navigator.widgets.frames import frame_key
from navigator.widgets.recoveries import RecoveryList
from tests.navigator.helpers import notices, select_frame, select_project, settle, tree
from tests.navigator.scenario import Scenario, set_activity

SIZE = (80, 24)


async def test_enter_on_a_project_creates_its_view_and_workspace(empty: Scenario) -> None:
    engine = empty.engine
    alpha_id = next(p.project_id for p in engine.config.projects if p.name == "alpha")
    app = SwitchboardApp(empty.client)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select_project(pilot, alpha_id)
        await pilot.press("enter")
        await settle(pilot)
        view = engine.conn.execute("SELECT * FROM user_views WHERE project_id = ?",
                                   (alpha_id,)).fetchone()
        assert view is not None
        workspace = engine.conn.execute("SELECT * FROM frames WHERE frame_id = ?",
                                        (view["active_frame_id"],)).fetchone()
        assert workspace["role"] == "workspace"
        assert app.current_view_id == view["view_id"]
        # the tree now shows the workspace under alpha, marked as shown
        ref = tree(app).frame_nodes()[frame_key(workspace["frame_id"])].data
        assert ref is not None and ref.shown


async def test_enter_on_an_open_frame_focuses_it(demo: Scenario) -> None:
    app = SwitchboardApp(demo.client)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select_frame(pilot, demo, "Write docs")
        await pilot.press("enter")
        await settle(pilot)
        assert demo.view_row("alpha")["active_frame_id"] == demo.frames["Write docs"]
        # navigation only: nothing closed
        assert demo.frame_row("Fix login")["lifecycle_state"] == "open"


async def test_b_goes_back_to_the_parent_and_keeps_the_task_open(demo: Scenario) -> None:
    demo.engine.view_focus(new_request_id(), demo.views["alpha"], demo.frames["Fix login"])
    app = SwitchboardApp(demo.client)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select_frame(pilot, demo, "Fix login")
        await pilot.press("b")
        await settle(pilot)
        assert demo.view_row("alpha")["active_frame_id"] == demo.frames["alpha"]
        assert demo.frame_row("Fix login")["lifecycle_state"] == "open"


async def test_b_on_a_workspace_is_refused_with_what_to_do(demo: Scenario) -> None:
    revision = demo.view_row("alpha")["revision"]
    app = SwitchboardApp(demo.client)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select_frame(pilot, demo, "alpha")
        await pilot.press("b")
        await settle(pilot)
        errors = [m for severity, m in notices(app) if severity == "error"]
        assert errors and "no parent" in errors[-1]
        assert "Traceback" not in errors[-1]
    assert demo.view_row("alpha")["revision"] == revision


async def test_n_starts_a_session_in_the_selected_frame(demo: Scenario) -> None:
    assert demo.frame_row("beta")["current_session_key"] is None
    app = SwitchboardApp(demo.client)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select_frame(pilot, demo, "beta")
        await pilot.press("n")
        await settle(pilot)
    key = demo.frame_row("beta")["current_session_key"]
    assert key is not None
    launch = demo.engine.conn.execute("SELECT * FROM launch_intents WHERE frame_id = ?",
                                      (demo.frames["beta"],)).fetchone()
    assert launch is not None and launch["session_key"] == key


async def test_c_asks_for_a_handoff_and_completes_the_task(demo: Scenario) -> None:
    app = SwitchboardApp(demo.client)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select_frame(pilot, demo, "Fix login")
        await pilot.press("c")
        await pilot.pause()
        assert isinstance(app.screen, CompleteReturnScreen)
        await pilot.press(*"login fixed", "enter", *"ship it", "enter")
        await settle(pilot)
        assert not isinstance(app.screen, CompleteReturnScreen)
    frame = demo.frame_row("Fix login")
    assert frame["lifecycle_state"] in ("closing", "closed")
    assert frame["close_reason"] == "completed"
    handoff = demo.engine.conn.execute(
        "SELECT summary, next_action FROM completion_handoffs WHERE source_frame_id = ?",
        (demo.frames["Fix login"],)).fetchone()
    assert tuple(handoff) == ("login fixed", "ship it")


async def test_c_requires_a_summary_and_escape_cancels(demo: Scenario) -> None:
    app = SwitchboardApp(demo.client)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select_frame(pilot, demo, "Fix login")
        await pilot.press("c")
        await pilot.pause()
        await pilot.click("#ok")
        await pilot.pause()
        assert isinstance(app.screen, CompleteReturnScreen)  # still asking
        await pilot.press("escape")
        await settle(pilot)
        assert not isinstance(app.screen, CompleteReturnScreen)
    assert demo.frame_row("Fix login")["lifecycle_state"] == "open"


async def test_c_on_the_workspace_explains_instead_of_asking(demo: Scenario) -> None:
    app = SwitchboardApp(demo.client)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select_frame(pilot, demo, "alpha")
        await pilot.press("c")
        await pilot.pause()
        assert not isinstance(app.screen, CompleteReturnScreen)
        assert any("has no parent" in m for _, m in notices(app))


async def test_x_closes_the_task_after_confirmation(demo: Scenario) -> None:
    app = SwitchboardApp(demo.client)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select_frame(pilot, demo, "Write docs")
        await pilot.press("x")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("y")
        await settle(pilot)
    frame = demo.frame_row("Write docs")
    assert frame["close_reason"] == "dismissed"
    assert frame["lifecycle_state"] in ("closing", "closed")


async def test_confirm_dialog_arrows_move_between_its_buttons(demo: Scenario) -> None:
    app = SwitchboardApp(demo.client)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select_frame(pilot, demo, "Write docs")
        await pilot.press("x")
        await pilot.pause()
        assert app.focused is not None and app.focused.id == "yes"  # what x asked for
        assert "enter: Close task" in str(app.screen.query_one("#keys").render())
        await pilot.press("right")
        assert app.focused is not None and app.focused.id == "no"
        assert "enter: cancel" in str(app.screen.query_one("#keys").render())
        await pilot.press("left")
        assert app.focused is not None and app.focused.id == "yes"
        await pilot.press("enter")  # Enter does what x asked (issue 31.7)
        await settle(pilot)
    assert demo.frame_row("Write docs")["close_reason"] == "dismissed"


async def test_x_then_no_keeps_the_task(demo: Scenario) -> None:
    app = SwitchboardApp(demo.client)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select_frame(pilot, demo, "Write docs")
        await pilot.press("x")
        await pilot.pause()
        await pilot.press("n")  # "no" in the dialog, not "start"
        await settle(pilot)
    assert demo.frame_row("Write docs")["lifecycle_state"] == "open"
    assert demo.frame_row("Write docs")["current_session_key"] is not None


async def test_r_reopens_a_closed_frame_from_history(demo: Scenario) -> None:
    assert demo.frame_row("Old spike")["lifecycle_state"] == "closed"
    app = SwitchboardApp(demo.client)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select_frame(pilot, demo, "Old spike")
        await pilot.press("enter")  # History is read-only: enter only explains
        await settle(pilot)
        assert demo.frame_row("Old spike")["lifecycle_state"] == "closed"
        assert any("press r to reopen" in m for _, m in notices(app))
        await pilot.press("r")
        await settle(pilot)
        assert demo.frame_row("Old spike")["lifecycle_state"] == "open"
        ref = tree(app).frame_nodes()[frame_key(demo.frames["Old spike"])].data
        assert ref is not None and not ref.in_history  # moved out of History


async def test_m_toggles_the_view_mode(demo: Scenario) -> None:
    app = SwitchboardApp(demo.client)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select_frame(pilot, demo, "Fix login")
        await pilot.press("m")
        await settle(pilot)
        assert demo.view_row("alpha")["mode"] == "direct"
        # direct mode hides the navigator: the toast says how to get it back
        assert any("prefix + S" in m for _, m in notices(app))
        await pilot.press("m")
        await settle(pilot)
        assert demo.view_row("alpha")["mode"] == "navigator"
    assert demo.view_row("beta")["mode"] == "navigator"


async def test_shift_r_runs_the_selected_recovery(demo: Scenario) -> None:
    recovery_id = demo.recoveries[0]
    app = SwitchboardApp(demo.client)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.query_one(RecoveryList).focus()
        await pilot.pause()
        await pilot.press("R")
        await settle(pilot)
        assert not [m for s, m in notices(app) if s == "error"]
        assert app.query_one(RecoveryList).highlighted_key is None  # panel emptied
    state = demo.engine.conn.execute("SELECT state FROM recoveries WHERE recovery_id = ?",
                                     (recovery_id,)).fetchone()[0]
    assert state == "resolved"


async def test_d_dismisses_the_selected_recovery(demo: Scenario) -> None:
    recovery_id = demo.recoveries[0]
    app = SwitchboardApp(demo.client)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.query_one(RecoveryList).focus()
        await pilot.press("d")
        await settle(pilot)
    state = demo.engine.conn.execute("SELECT state FROM recoveries WHERE recovery_id = ?",
                                     (recovery_id,)).fetchone()[0]
    assert state == "dismissed"


async def test_slash_filters_the_tree_and_escape_clears(demo: Scenario) -> None:
    app = SwitchboardApp(demo.client)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("slash", *"docs")
        await pilot.pause()
        keys = set(tree(app).frame_nodes())
        assert frame_key(demo.frames["Write docs"]) in keys
        assert frame_key(demo.frames["Fix login"]) not in keys
        assert frame_key(demo.frames["beta"]) not in keys
        await pilot.press("enter")  # keep the filter, back to the tree, on the match
        assert app.focused is tree(app)
        assert tree(app).selected_ref is not None
        assert tree(app).selected_ref.key == frame_key(demo.frames["Write docs"])
        await pilot.press("escape")  # escape in the tree clears the kept filter too
        await pilot.pause()
        assert frame_key(demo.frames["Fix login"]) in tree(app).frame_nodes()
        await pilot.press("slash", *"login", "escape")
        await pilot.pause()
        assert frame_key(demo.frames["Write docs"]) in tree(app).frame_nodes()


async def test_question_mark_shows_every_key(demo: Scenario) -> None:
    app = SwitchboardApp(demo.client)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        listed = dict(app.screen.keys)
        for key in ("n", "s", "b", "c", "x", "w", "r", "m", "R", "i", "/", "?", "enter", "d",
                    "a"):
            assert key in listed, key
        await pilot.press("b")  # engine keys are off while the help is open
        await pilot.press("escape")
        await settle(pilot)
        assert not isinstance(app.screen, HelpScreen)
    assert demo.view_row("alpha")["active_frame_id"] == demo.frames["alpha"]


async def test_s_stops_the_frames_agent_after_confirmation(demo: Scenario) -> None:
    app = SwitchboardApp(demo.client)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select_frame(pilot, demo, "beta")
        await pilot.press("n")
        await settle(pilot)
        key = demo.frame_row("beta")["current_session_key"]
        await pilot.press("s")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("y")
        await settle(pilot)
    placement = demo.engine.conn.execute(
        "SELECT state FROM frame_placements WHERE frame_id = ? AND state <> 'orphaned'",
        (demo.frames["beta"],)).fetchone()
    assert placement["state"] == "stopped_affinity"
    launch = demo.engine.conn.execute(
        "SELECT state FROM launch_intents WHERE session_key = ?", (key,)).fetchone()
    assert launch["state"] == "superseded"  # the planned start never ran
    assert demo.frame_row("beta")["current_session_key"] == key  # session kept for resume


async def test_help_says_how_to_reach_the_agent_pane_and_come_back(demo: Scenario) -> None:
    app = SwitchboardApp(demo.client)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        text = str(app.screen.query_one("#tmux-keys", Static).render())
        assert "prefix + S" in text and "prefix + arrow" in text


async def test_a_and_d_outside_their_panels_say_where_they_work(demo: Scenario) -> None:
    app = SwitchboardApp(demo.client)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select_frame(pilot, demo, "Fix login")
        recovery_id = demo.recoveries[0]
        await pilot.press("d")
        await pilot.press("a")
        await pilot.pause()
        said = [m for _, m in notices(app)]
        assert any("Recoveries panel (tab there), or ctrl+p › Dismiss recovery from "
                   "anywhere" in m for m in said), said
        assert any("Nothing to acknowledge" in m for m in said), said
        # nothing was dismissed from the tree
        state = demo.client.state()
        assert any(r.recovery_id == recovery_id and r.state == "open"
                   for r in state.recoveries)
        # the palette offers no acknowledging with an empty inbox
        commands = [c.title for c in app.get_system_commands(app.screen)]
        assert "Acknowledge message" not in commands
        assert "Dismiss recovery" in commands


async def test_w_withdraws_a_push_that_waits_for_its_agents_stop(demo: Scenario) -> None:
    """alpha's agent is working, so its push waits (prepared) for its Stop; w cancels it:
    the never-started task is closed and the view takes navigation again."""
    demo.engine.frame_start(new_request_id(), demo.frames["alpha"])
    set_activity(demo, "alpha", Activity.WORKING, "live")
    waiting = demo.engine.frame_push(new_request_id(), demo.frames["alpha"], "Later",
                                     "do it later")
    assert waiting.state == "prepared"
    app = SwitchboardApp(demo.client)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select_frame(pilot, demo, "alpha")
        await pilot.press("w")
        await settle(pilot)
        assert not [m for severity, m in notices(app) if severity == "error"]
    state = demo.engine.conn.execute("SELECT state FROM view_transitions WHERE"
                                     " transition_id = ?", (waiting.transition_id,)).fetchone()
    assert state[0] == "cancelled"
    child = demo.engine.conn.execute("SELECT lifecycle_state, close_reason FROM frames"
                                     " WHERE frame_id = ?", (waiting.target_frame_id,)).fetchone()
    assert tuple(child) == ("closed", "dismissed")
    demo.engine.view_focus(new_request_id(), demo.views["alpha"], demo.frames["Write docs"])


async def test_w_on_a_waiting_return_says_how_to_run_it_instead(demo: Scenario) -> None:
    waiting = demo.engine.frame_complete(new_request_id(), demo.frames["Fix login"],
                                         "half done", "finish it")
    assert waiting.state == "prepared"  # 'Fix login' is working: it waits for its Stop
    app = SwitchboardApp(demo.client)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select_frame(pilot, demo, "Fix login")
        await pilot.press("w")
        await settle(pilot)
        errors = [m for severity, m in notices(app) if severity == "error"]
        assert errors and "press s" in errors[-1] and "Fix login" in errors[-1]


async def test_p_pushes_a_new_task_under_the_selected_frame(demo: Scenario) -> None:
    from navigator.screens.new_task import NewTaskScreen

    app = SwitchboardApp(demo.client)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select_frame(pilot, demo, "beta")
        await pilot.press("p")
        await pilot.pause()
        assert isinstance(app.screen, NewTaskScreen)
        await pilot.press("ctrl+s")  # nothing typed: refused in the dialog, nothing sent
        await pilot.pause()
        assert isinstance(app.screen, NewTaskScreen)
        await pilot.press(*"Add docs", "enter", *"Write the README section.", "ctrl+s")
        await settle(pilot)
        assert not isinstance(app.screen, NewTaskScreen)
    row = demo.engine.conn.execute(
        "SELECT f.title, f.parent_frame_id, t.kind, b.brief FROM frames f"
        " JOIN view_transitions t ON t.target_frame_id = f.frame_id"
        " JOIN transition_briefs b ON b.transition_id = t.transition_id"
        " WHERE f.title = 'Add docs'").fetchone()
    assert tuple(row) == ("Add docs", demo.frames["beta"], "push",
                          "Write the README section.")


async def test_p_under_a_task_says_how_deep_tasks_may_go_and_how_to_raise_it(
        demo: Scenario) -> None:
    """The default allows one level of tasks; the refusal the person meets names the
    setting, its value and where to raise it (issue 31.5), and nothing is created."""
    app = SwitchboardApp(demo.client)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select_frame(pilot, demo, "Fix login")  # a task under the workspace
        await pilot.press("p")
        await pilot.pause()
        await pilot.press(*"Nested", "enter", *"A task under a task.", "ctrl+s")
        await settle(pilot)
        errors = [text for severity, text in notices(app) if severity == "error"]
    assert errors, notices(app)
    assert "initial_max_depth = 1" in errors[-1] and "initial_max_depth = 2" in errors[-1]
    assert "under [automation]" in errors[-1] and "depth_exceeded" not in errors[-1]
    assert demo.engine.conn.execute("SELECT COUNT(*) FROM frames WHERE title = 'Nested'"
                                    ).fetchone()[0] == 0


async def test_enter_on_the_stop_confirmation_stops_the_agent(demo: Scenario) -> None:
    """s then Enter does what s asked: the action's button has the focus (issue 31.7)."""
    app = SwitchboardApp(demo.client)
    async with app.run_test(size=(26, 23)) as pilot:  # the navigator of an 80x24 terminal
        await settle(pilot)
        await select_frame(pilot, demo, "beta")
        await pilot.press("n")
        await settle(pilot)
        await pilot.press("s")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        assert app.focused is not None and app.focused.id == "yes"
        await pilot.press("enter")
        await settle(pilot)
        assert not isinstance(app.screen, ConfirmScreen)
    placement = demo.engine.conn.execute(
        "SELECT state FROM frame_placements WHERE frame_id = ? AND state <> 'orphaned'",
        (demo.frames["beta"],)).fetchone()
    assert placement["state"] == "stopped_affinity"
