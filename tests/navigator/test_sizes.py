"""The navigator at every pane size: it never crashes, and says so when it is too small.

tmux can squeeze the navigator pane to one column or one row (a small terminal
attaching, a zoom, a dragged border); rich's ``chop_cells`` used to raise on the
0-cell rows that left the option lists with. Each test drives one real app over a
sweep of sizes (resizing is far cheaper than starting an app), on the demo
registry: two views, a History node and an open recovery.
"""

from __future__ import annotations

from collections.abc import Iterable

from rich.cells import cell_len
from rich.text import Text
from textual.app import App, ComposeResult
from textual.pilot import Pilot

from navigator.app import (
    COMPACT_ROWS,
    MIN_COLUMNS,
    MIN_ROWS,
    NARROW_WIDTH,
    SIDEBAR_ROWS,
    LayoutKind,
    SwitchboardApp,
)
from navigator.layout import compact_footer_rows
from navigator.widgets.breadcrumb import Breadcrumb
from navigator.widgets.footer import KeyFooter
from navigator.widgets.frames import FrameTree
from navigator.widgets.inbox import InboxList
from navigator.widgets.recoveries import RecoveryList
from navigator.widgets.rows import Row, RowList
from navigator.widgets.too_small import TooSmallNotice
from navigator.widgets.views import ViewList
from tests.navigator.helpers import select_frame, settle
from tests.navigator.scenario import Scenario

WIDTH = 40  # the configured navigator width of the test registries (the default)


def _shown(app: SwitchboardApp, widget_type: type) -> bool:
    """Displayed and given at least one cell by the layout."""
    widget = app.query_one(widget_type)
    return widget.display and widget.region.area > 0


def _notice(app: SwitchboardApp) -> str:
    return app.query_one(TooSmallNotice).render().plain


def _footer_actions(app: SwitchboardApp) -> frozenset[str]:
    return app.query_one(KeyFooter).actions


async def _resize(pilot: Pilot, width: int, height: int) -> None:
    await pilot.resize_terminal(width, height)
    await pilot.pause()
    await pilot.pause()  # the stacked panels share their rows after the first layout


def _check(app: SwitchboardApp, width: int, height: int) -> None:
    """What the person sees at this size, by layout."""
    where = f"at {width}x{height}"
    assert app.size == (width, height), where
    kind = app.layout_kind
    if width < MIN_COLUMNS or height < MIN_ROWS:
        assert kind is LayoutKind.TOO_SMALL, where
        line = _notice(app)
        assert _shown(app, TooSmallNotice) and cell_len(line) <= width, (where, line)
        if width >= len("Switchboard: widen this pane (needs 16 columns)"):
            assert line.startswith("Switchboard:"), (where, line)
        assert not any(_shown(app, panel) for panel in
                       (FrameTree, ViewList, RecoveryList, InboxList, KeyFooter)), where
        assert app.has_class("-too-small") and not app.has_class("-compact"), where
        return
    assert not _shown(app, TooSmallNotice), where
    assert _shown(app, FrameTree) and _shown(app, KeyFooter), where
    if width < WIDTH or height < (COMPACT_ROWS if width >= NARROW_WIDTH else SIDEBAR_ROWS):
        assert kind is LayoutKind.COMPACT and app.has_class("-compact"), where
        # the footer takes at most a third of the rows: every key where that fits
        # (an 80x24 terminal's 26x23 navigator shows them all), help always
        footer = app.query_one(KeyFooter)
        assert "help" in _footer_actions(app), where
        assert footer.region.height <= compact_footer_rows(height), where
        if footer.region.height > 1:
            assert "start" in _footer_actions(app), where
        # idle panels give their rows to the tree; the open recovery stays in sight
        assert not _shown(app, InboxList), where
        # borders keep only the top edge (the title), so no column is lost to them
        if width < NARROW_WIDTH:
            assert app.query_one(FrameTree).region.width == width, where
        # the tree always keeps rows to move in
        assert app.query_one(FrameTree).scrollable_content_region.height >= 2, where
    else:
        assert kind is LayoutKind.FULL and not app.has_class("-compact"), where
        assert {"start", "stop", "help"} <= _footer_actions(app), where
        assert _shown(app, ViewList) and _shown(app, RecoveryList), where
        if width >= NARROW_WIDTH:
            assert _shown(app, InboxList), where
        else:  # stacked: the tree gets its rows first, an open recovery keeps one line
            tree = app.query_one(FrameTree)
            stack = height - sum(app.query_one(kind).outer_size.height
                                 for kind in (Breadcrumb, KeyFooter, ViewList))
            wanted = tree.virtual_size.height + 2
            assert tree.outer_size.height >= min(wanted, stack - 3), (where, stack, wanted)
    # the tree always keeps rows to move in
    assert app.query_one(FrameTree).scrollable_content_region.height >= 2, where
    assert not app.has_class("-too-small"), where


async def _sweep(pilot: Pilot, sizes: Iterable[tuple[int, int]]) -> None:
    for width, height in sizes:
        await _resize(pilot, width, height)
        _check(pilot.app, width, height)  # type: ignore[arg-type]


async def test_every_width_from_one_column(demo: Scenario) -> None:
    """Widths 1..40 one by one, then a sample up to 200, and back down to one column."""
    app = SwitchboardApp(demo.client)
    async with app.run_test(size=(WIDTH, 30)) as pilot:
        await settle(pilot)
        assert app.query_one(RecoveryList).open_recoveries  # the demo has one to keep
        widths = [*range(1, WIDTH + 1), 41, 59, 60, 61, 80, 120, 160, 200, 39, 16, 15, 2, 1]
        await _sweep(pilot, [(width, 30) for width in widths])
        await _resize(pilot, WIDTH, 30)
        _check(app, WIDTH, 30)
    # leaving run_test re-raises anything the app raised while it ran


async def test_every_height_from_one_row(demo: Scenario) -> None:
    app = SwitchboardApp(demo.client)
    async with app.run_test(size=(WIDTH, 50)) as pilot:
        await settle(pilot)
        heights = [*range(1, SIDEBAR_ROWS + 2), 24, 30, 40, 50, 4, 1]
        await _sweep(pilot, [(WIDTH, height) for height in heights])
        await _sweep(pilot, [(1, 1), (2, 2), (MIN_COLUMNS, MIN_ROWS), (80, 5), (200, 4),
                             (24, 12), (200, 50)])


async def test_starts_in_a_one_column_pane(demo: Scenario) -> None:
    """The crash happened on the first layout: a navigator respawned into a squeezed pane."""
    for size in ((1, 24), (1, 1), (20, 3)):
        app = SwitchboardApp(demo.client)
        async with app.run_test(size=size) as pilot:
            await settle(pilot)
            _check(app, *size)
            await _resize(pilot, WIDTH, 40)
            _check(app, WIDTH, 40)
            # the panels come back as they were, with the keyboard in the tree
            assert isinstance(app.focused, FrameTree)
            assert app.query_one(FrameTree).cursor_node is not None


async def test_compact_keeps_the_selection_and_keys(demo: Scenario) -> None:
    """Shrinking into compact and back is only a relayout: cursor and keys still work."""
    app = SwitchboardApp(demo.client)
    async with app.run_test(size=(WIDTH, 40)) as pilot:
        await settle(pilot)
        await select_frame(pilot, demo, "Write docs")
        await _resize(pilot, 26, 23)  # the navigator pane in an 80x24 terminal
        _check(app, 26, 23)
        assert app.query_one(FrameTree).selected_ref.frame.title == "Write docs"
        # every key stays visible, as the README says (issue 40.4): 21 keys with their
        # words take 8 rows of 26 columns, more than a third of 23, so their letters
        # show, and help and the palette keep their words
        assert {"start", "stop", "go_back", "complete", "close_frame", "toggle_mode",
                "new_task", "message", "inbox_stream", "search", "diff", "find",
                "toggle_usage", "switch_provider", "answer", "help"} <= \
            _footer_actions(app)
        footer = app.query_one(KeyFooter)
        assert {key.entry.action for key in footer.shown if key.entry.description} == \
            {"help", "command_palette"}
        await _resize(pilot, 26, 12)  # short: every key's letter, help keeps its word
        assert {"start", "stop", "help"} <= _footer_actions(app)
        assert footer.region.height <= compact_footer_rows(12)
        await _resize(pilot, 26, 23)
        await pilot.press("question_mark")  # the help lists every key with its meaning
        await pilot.pause()
        assert type(app.screen).__name__ == "HelpScreen"
        await pilot.press("escape")
        await _resize(pilot, 3, 23)
        await _resize(pilot, WIDTH, 40)
        _check(app, WIDTH, 40)
        assert app.query_one(FrameTree).selected_ref.frame.title == "Write docs"


async def test_dialogs_survive_any_size(demo: Scenario) -> None:
    """Help, the palette and the confirmation squeezed to a column and a row, and back."""
    app = SwitchboardApp(demo.client)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        for key in ("question_mark", "ctrl+p", "x"):
            await select_frame(pilot, demo, "Write docs")
            await pilot.press(key)
            await pilot.pause()
            dialog = app.screen
            assert dialog is not app.screen_stack[0], key
            for size in ((1, 24), (1, 1), (10, 3), (20, 10), (80, 24)):
                await _resize(pilot, *size)
                assert app.screen is dialog, (key, size)
                too_small = size[0] < MIN_COLUMNS or size[1] < MIN_ROWS
                assert (app.layout_kind is LayoutKind.TOO_SMALL) is too_small, (key, size)
            await pilot.press("escape")
            await pilot.pause()
            assert app.screen is app.screen_stack[0], key


class _BareList(App[None]):
    """One bordered, auto-height list and nothing else: no layout switching helps it."""

    CSS = "RowList { border: round $accent; height: auto; }"

    def compose(self) -> ComposeResult:
        yield RowList()

    def on_mount(self) -> None:
        self.query_one(RowList).sync_rows([
            Row("a", Text("a row that wraps at any width above zero")),
            Row("b", Text("↻ R fixes pane_vanished\nThe agent pane vanished."))])


async def test_a_list_squeezed_to_its_borders_measures_rows_in_one_cell() -> None:
    """The crash's root, guarded where it happens: Textual's OptionList wrapped each row
    at its content width, 0 inside a 2-column border, and rich's chop_cells raised."""
    app = _BareList()
    async with app.run_test(size=(1, 10)) as pilot:
        for width in (1, 2, 3, 4, 1, 30):
            await _resize(pilot, width, 10)
            assert app.query_one(RowList).option_count == 2


async def test_at_most_one_container_under_a_panel(demo: Scenario) -> None:
    """Textual renders, caches and cuts every visible widget's lines, covered or not:
    two full-height containers under the panels cost a sidebar navigator ~2.8 MB.
    The panels sit on the screen itself, except the right column's, so no cell lies
    under more than a panel and its one container."""
    app = SwitchboardApp(demo.client)
    async with app.run_test(size=(WIDTH, 50)) as pilot:
        for width, height in ((WIDTH, 50), (80, 24), (200, 50)):
            await _resize(pilot, width, height)
            _check(app, width, height)
            layers = [w.region for w in app.screen.walk_children()
                      if w.display and w.region.area > 0]
            deepest = max(sum(1 for region in layers if region.contains(x, y))
                          for x in range(width) for y in range(height))
            assert deepest == 2, (width, height, deepest)
            assert app.query_one(FrameTree).parent is app.screen
