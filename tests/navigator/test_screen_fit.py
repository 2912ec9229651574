"""Issue 40 items 3 and 4: the navigator at the sizes people use, every key in sight.

The navigator pane of a real terminal is smaller than the terminal: 90x30 and
100x30 give a 40x29 sidebar (the status line takes a row), 100x34 a 40x33 one,
80x24 a 26x23 one, 60x20 a 19x19 one and 40x12 a 16x11 one (``navigator_width_for``;
``tests/integration/test_screen_sizes.py`` drives a real tmux client at each).
Each test here runs the real app on the demo registry at the pane's size and
types the keys a person would.
"""

from __future__ import annotations

import pytest
from textual.widget import Widget
from textual.widgets import Button, Static

from navigator.app import SwitchboardApp
from navigator.intents import KEY_BINDINGS
from navigator.layout import share_stack
from navigator.screens.help import HelpScreen, key_help
from navigator.widgets.breadcrumb import Breadcrumb
from navigator.widgets.footer import KeyFooter
from navigator.widgets.frames import FrameTree
from navigator.widgets.inbox import InboxList
from navigator.widgets.preview import PanePreview
from navigator.widgets.recoveries import RecoveryList
from navigator.widgets.views import ViewList
from tests.navigator.helpers import select_frame, settle
from tests.navigator.scenario import Scenario


def _inside(app: SwitchboardApp, widget: Widget) -> bool:
    """Drawn whole on the screen (not cut by its edge or its container)."""
    region = widget.region
    return (region.area > 0 and region.y >= 0 and region.right <= app.size.width
            and region.bottom <= app.size.height and widget.outer_size.height <= region.height
            + widget.styles.margin.height)


def _tree_lines_shown(app: SwitchboardApp) -> int:
    return app.query_one(FrameTree).scrollable_content_region.height


def test_share_stack_gives_the_tree_its_rows_first() -> None:
    # 40x29: 20 rows under the views; the tree wants 10, recoveries 5, inbox 3, preview 11
    assert share_stack(20, 10, [5, 3, 11], 3) == (10, (5, 3, 0))
    # four more rows (40x33): the preview gets them
    assert share_stack(24, 10, [5, 3, 11], 3) == (10, (5, 3, 6))
    # a long tree keeps the reserve for an open recovery, and scrolls
    assert share_stack(20, 40, [5, 3, 11], 3, reserve=3) == (17, (3, 0, 0))
    # a panel left fewer rows than its border and a line is not drawn at all
    assert share_stack(12, 10, [5, 3], 3) == (10, (0, 0))
    assert share_stack(0, 10, [5], 3) == (0, (0,))


@pytest.mark.parametrize("size", [(40, 29), (40, 33), (40, 22), (26, 23)])
async def test_the_tree_gets_its_rows_first(demo: Scenario, size: tuple[int, int]) -> None:
    """The sidebar of a 90x30 / 100x30 terminal showed Recoveries, Inbox and a 13-row
    Preview, and a Projects tree with no row at all."""
    app = SwitchboardApp(demo.client, poll_interval=3600)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await select_frame(pilot, demo, "Fix login")
        demo.client.preview = lambda frame_id: [  # type: ignore[method-assign]
            f"line {n}" for n in range(12)]
        await pilot.press("down", "up")  # the cursor rests on Fix login: its preview
        await pilot.pause(PanePreview.DELAY + 0.3)
        await settle(pilot)
        await pilot.pause()
        tree = app.query_one(FrameTree)
        lines = tree.virtual_size.height
        assert lines >= 8, lines  # two projects, alpha's frames and its History
        # the tree's rows first: all of them, or all but the rows an open recovery keeps
        # (its title and one line) when the footer and the views leave too few
        stack = size[1] - sum(app.query_one(kind).outer_size.height
                              for kind in (Breadcrumb, KeyFooter, ViewList))
        outer = tree.outer_size.height
        assert outer >= min(lines + tree.styles.gutter.height, stack - 3), (size, outer, stack)
        if stack - 3 >= lines + 2:
            assert _tree_lines_shown(app) >= lines, size
        recoveries = app.query_one(RecoveryList)
        assert recoveries.display and recoveries.region.height >= 2, size
        for panel in (recoveries, app.query_one(InboxList), app.query_one(PanePreview)):
            if panel.display and panel.region.area:  # a panel drawn is drawn whole
                assert panel.region.bottom <= app.query_one(KeyFooter).region.y, size
                assert panel.region.height >= 2, (size, panel)
        if size == (40, 33):  # room for the preview under the others
            assert app.query_one(PanePreview).region.height >= 3


@pytest.mark.parametrize("key", ["p", "P", "x", "c"])
async def test_dialogs_fit_the_sidebar_of_a_60x20_terminal(demo: Scenario, key: str) -> None:
    """At 19x19 the buttons of p and P were below the screen's last row."""
    app = SwitchboardApp(demo.client, poll_interval=3600)
    async with app.run_test(size=(19, 19)) as pilot:
        await settle(pilot)
        await select_frame(pilot, demo, "Fix login")
        await pilot.press(key)
        await pilot.pause()
        await pilot.pause()
        dialog = app.screen
        assert dialog is not app.screen_stack[0], key
        buttons = list(dialog.query(Button))
        assert buttons, key
        for button in buttons:
            assert _inside(app, button), (key, button.label, button.region)
        # and the first button answers the dialog (typed, not clicked)
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is app.screen_stack[0]


async def test_help_is_readable_in_the_sidebar_of_a_40x12_terminal(demo: Scenario) -> None:
    """At 16x11 each description had three columns; and the footer lost ^p palette."""
    app = SwitchboardApp(demo.client, poll_interval=3600)
    async with app.run_test(size=(16, 11)) as pilot:
        await settle(pilot)
        footer = app.query_one(KeyFooter)
        assert {"help", "command_palette"} <= footer.actions
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        text = app.screen.query_one("#keys", Static).render()
        lines = str(text).splitlines()
        # each key on its own line, its description whole words under it
        assert lines[0] == "enter" and lines[1].startswith("focus the")
        assert "Diff: review the frame's change" in " ".join(lines)


async def test_every_key_is_in_the_footer_at_80x24(demo: Scenario) -> None:
    """v, ^f, u, P and y were only in the help; a and d show where they act."""
    app = SwitchboardApp(demo.client, poll_interval=3600)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        footer = app.query_one(KeyFooter)
        app_keys = {b.action for b in KEY_BINDINGS if getattr(b, "show", True)}
        assert {"diff", "find", "toggle_usage", "switch_provider", "answer"} <= footer.actions
        assert app_keys <= footer.actions
        assert "acknowledge_anywhere" not in footer.actions
        await pilot.press("tab", "tab")  # Projects -> Recoveries
        await pilot.pause()
        assert isinstance(app.focused, RecoveryList)
        shown = {(key.entry.display, key.entry.description) for key in footer.shown}
        assert ("d", "Dismiss") in shown
        await pilot.press("tab")  # -> Inbox
        await pilot.pause()
        assert isinstance(app.focused, InboxList)
        shown = {(key.entry.display, key.entry.description) for key in footer.shown}
        assert ("a", "Acknowledge") in shown


async def test_the_sidebar_of_an_80x24_terminal_shows_every_key(demo: Scenario) -> None:
    app = SwitchboardApp(demo.client, poll_interval=3600)
    async with app.run_test(size=(26, 23)) as pilot:
        await settle(pilot)
        footer = app.query_one(KeyFooter)
        app_keys = {b.action for b in KEY_BINDINGS if getattr(b, "show", True)}
        assert app_keys <= footer.actions
        assert footer.region.bottom == 23


async def test_help_and_palette_list_each_key_once(demo: Scenario) -> None:
    keys = [key for key, _ in key_help(KEY_BINDINGS)]
    assert keys.count("a") == 1 and keys.count("d") == 1, keys
    assert len(keys) == len(set(keys)), keys
    app = SwitchboardApp(demo.client, poll_interval=3600)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        titles = [command.title for command in app.get_system_commands(app.screen)]
        assert len(titles) == len(set(titles)), titles
        assert not any(title.startswith("Acknowledge") for title in titles)  # no message
        assert titles.count("Dismiss recovery") == 1 and "Dismiss" not in titles


async def test_the_preview_goes_once_main_shows_its_frame(demo: Scenario) -> None:
    """Issue 40.7: enter on a previewed frame put it in main, and the Preview kept
    showing the same agent beside it."""
    from core.context.requests import new_request_id
    from core.model.enums import Activity
    from tests.navigator.scenario import set_activity

    demo.engine.view_focus(new_request_id(), demo.views["alpha"], demo.frames["Write docs"])
    set_activity(demo, "Fix login", Activity.WORKING, "live")
    demo.client.preview = lambda frame_id: ["$ pytest -q"]  # type: ignore[method-assign]
    app = SwitchboardApp(demo.client, poll_interval=3600)
    async with app.run_test(size=(100, 40)) as pilot:
        await settle(pilot)
        preview = app.query_one(PanePreview)
        await select_frame(pilot, demo, "Fix login")
        await pilot.pause(PanePreview.DELAY + 0.3)
        await settle(pilot)
        assert preview.has_class("-visible")
        await pilot.press("enter")  # focus Fix login: its view shows it in main
        await settle(pilot)
        await pilot.pause(PanePreview.DELAY + 0.3)
        await settle(pilot)
        assert demo.view_row("alpha")["active_frame_id"] == demo.frames["Fix login"]
        assert not preview.has_class("-visible")


async def test_i_and_search_show_a_line_break_as_a_mark(demo: Scenario) -> None:
    """Issue 40.7: a prompt of two lines read "Fix the login\\nthen the docs" in `i`."""
    from navigator.screens.search import result_option
    from navigator.screens.session_detail import SessionDetailScreen
    from storage.session_db import open_session_db, record_hook_event, session_db_path
    from tests.navigator.test_session_detail import T0, record_frame_work

    key = record_frame_work(demo, "Fix login")
    row = demo.frame_row("Fix login")
    conn = open_session_db(session_db_path(demo.home.root, key), now_ms=T0)
    try:
        record_hook_event(conn, session_key=key, provider="claude", project_id="p",
                          project_root="/src/alpha", frame_id=row["frame_id"], turn_id="t-2",
                          event="UserPromptSubmit", kind="prompt_submitted", now_ms=T0 + 9_500,
                          prompt="Fix the login\nthen the docs")
    finally:
        conn.close()
    app = SwitchboardApp(demo.client, poll_interval=3600)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await select_frame(pilot, demo, "Fix login")
        await pilot.press("i")
        await settle(pilot)
        assert isinstance(app.screen, SessionDetailScreen)
        drawn = "\n".join("".join(segment.text for segment in strip)
                          for strip in app.screen._compositor.render_strips())
        assert "Fix the login" in drawn, drawn  # the timeline keeps a prompt's first line
        assert "\\n" not in drawn, drawn
    from core.review.search import HIT_END, HIT_START, SearchResult

    hit = SearchResult(kind="command", project_id="alpha", project_name="alpha",
                       frame_id=None, frame_title="Fix login", frame_state="open",
                       session_key=None, at="2026-01-01T10:00:00+00:00", anchor=None,
                       snippet=f"1 {HIT_START}passed{HIT_END} in 0.01s\nnext line")
    text = str(result_option(hit, 0).prompt)
    assert "0.01s ⏎ next line" in text and "\\n" not in text
    # a failure's message and a checkout's changes of several lines, as `i` draws them
    from navigator.widgets.diff_view import one_line

    assert one_line("assert -1 == 5\n +  where -1 = add(2, 3)\n") == \
        "assert -1 == 5 ⏎  +  where -1 = add(2, 3)"
    assert one_line("a\x1b[31m\r\nb") == "a\\x1b[31m ⏎ b"


@pytest.mark.parametrize(("screen_lines", "said"), [
    (None, "cannot be read from here"),
    (["Claude wants to know:", "Which file should I change?", "> "], "shows no choice list"),
    (["Allow the build?", " ❯ 1. Yes", "   2. No, keep manual mode"], None),
])
async def test_y_offers_yes_and_no_only_on_a_choice_list(
        demo: Scenario, screen_lines: list[str] | None, said: str | None) -> None:
    """Issue 40.7: y offered Yes/No, then said the prompt had no choice list."""
    from navigator.screens.answer import AnswerScreen
    from tests.navigator.helpers import notices, wait_until

    demo.client.preview = lambda frame_id: screen_lines  # type: ignore[method-assign]
    app = SwitchboardApp(demo.client, poll_interval=3600)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await select_frame(pilot, demo, "Write docs")  # its agent needs input
        await pilot.press("y")
        await settle(pilot)
        if said is None:
            await wait_until(pilot, lambda: isinstance(app.screen, AnswerScreen))
            await pilot.press("escape")
        else:
            await wait_until(pilot, lambda: any(said in m for _, m in notices(app)))
            assert app.screen is app.screen_stack[0]


async def test_u_in_the_demo_says_no_usage_is_recorded_yet(demo: Scenario) -> None:
    """Issue 40.7: u on a registry whose agents never worked a turn showed nothing."""
    from tests.navigator.helpers import notices, wait_until

    app = SwitchboardApp(demo.client, poll_interval=3600)
    async with app.run_test(size=(26, 23)) as pilot:
        await settle(pilot)
        await pilot.press("u")
        await wait_until(pilot, lambda: any("No usage is recorded yet" in m
                                            for _, m in notices(app)))
        said = [m for _, m in notices(app) if "No usage" in m]
        assert len(said) == 1 and "transcript" in said[0]
        await pilot.press("u")  # hidden again: nothing more is said
        await settle(pilot)
        assert len([m for _, m in notices(app) if "No usage" in m]) == 1


def _burst(app: SwitchboardApp, text: str) -> None:
    """Keys as a fast typist's terminal delivers them: all queued before any is handled
    (``tmux send-keys`` of a whole string does the same; the real-client test is
    tests/integration/test_screen_sizes.py)."""
    from textual import events

    names = {"\t": "tab", " ": "space", "\r": "enter"}
    for character in text:
        app.post_message(events.Key(names.get(character, character), character))


@pytest.mark.parametrize(("key", "typed", "first", "second"), [
    ("p", "Fast title\tfast brief", "#title", "#brief"),
    ("p", "Fast title\rfast brief", "#title", "#brief"),
    ("c", "login fixed\tship behind a flag", "#summary", "#next-action"),
])
async def test_tab_typed_fast_after_text_moves_on(demo: Scenario, key: str, typed: str,
                                                 first: str, second: str) -> None:
    """Issue 40.5: the title read "Fast titlefast brief" and the brief stayed empty."""
    from textual.widgets import Input, TextArea

    app = SwitchboardApp(demo.client, poll_interval=3600)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await select_frame(pilot, demo, "Fix login")
        await pilot.press(key)
        await pilot.pause()
        _burst(app, typed)
        await pilot.pause(0.3)
        one, two = (app.screen.query_one(first), app.screen.query_one(second))
        text = [w.value if isinstance(w, Input) else w.text for w in (one, two)
                if isinstance(w, Input | TextArea)]
        before, _, after = typed.replace("\r", "\t").partition("\t")
        assert text == [before, after]
        assert app.screen.focused is two


@pytest.mark.parametrize("width", [40, 26])
async def test_a_toast_covers_the_sidebar_to_its_edge(demo: Scenario, width: int) -> None:
    """Issue 40.5: toasts took half the pane and the footer's letters showed through
    in the rack's hidden scrollbar gutter on their right."""
    from textual.widgets._toast import Toast

    app = SwitchboardApp(demo.client, poll_interval=3600)
    async with app.run_test(size=(width, 29), notifications=True) as pilot:
        await settle(pilot)
        await select_frame(pilot, demo, "Fix login")
        await pilot.press("y")  # Fix login's agent is not asking: a toast says so
        await settle(pilot)
        await pilot.pause()
        (toast,) = app.screen.query(Toast)
        assert toast.region.x == 0 and toast.region.right == width, toast.region
