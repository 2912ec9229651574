"""Which layout a navigator pane's size allows (full, compact, or too small), and
the stylesheet that draws each.

``layout_for`` is pure, so the thresholds are tested without a screen;
``fit_layout`` turns its answer into App classes (``-too-small``, ``-compact``,
``-short``) that every screen's stylesheet follows.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from pathlib import Path
from typing import Any

from textual.app import App
from textual.css.scalar import Scalar
from textual.geometry import Size
from textual.screen import Screen
from textual.widget import Widget

from core.config.config import NAVIGATOR_WIDTH_RANGE
from core.model.defaults import NAVIGATOR_WIDTH
from navigator.widgets.footer import KeyFooter
from navigator.widgets.frames import FrameTree
from navigator.widgets.too_small import Shortfall, TooSmallNotice

#: Below this many columns the panels stack (the navigator as a sidebar pane).
NARROW_WIDTH = 60
#: The navigator pane's width when the config names none (config `tmux.navigator_width`).
DEFAULT_NAVIGATOR_WIDTH = NAVIGATOR_WIDTH
#: The compact layout's minimum: narrower or lower than this, only one line says so.
#: The width is the smallest the config accepts, so a configured width always renders.
MIN_COLUMNS = NAVIGATOR_WIDTH_RANGE[0]
MIN_ROWS = 5
#: Fewer rows than this also get the compact layout: two columns (from NARROW_WIDTH)
#: need COMPACT_ROWS, the stacked sidebar SIDEBAR_ROWS (its footer alone wraps to 3).
COMPACT_ROWS = 16
SIDEBAR_ROWS = 22
#: The compact layout's footer takes at most this share of the rows (1/3): every key
#: with its words where that fits, else their letters, else only help and the palette.
FOOTER_SHARE = 3
#: Rows the compact layout's other panels take (breadcrumb, views, an open recovery).
COMPACT_PANEL_ROWS = 9
#: Fewer rows than this: the compact layout shows only the breadcrumb, tree and footer.
SHORT_ROWS = 14


def stylesheet_path() -> Path:
    """The stylesheet shipped with the package, ``navigator/switchboard.tcss``.

    In git it is a symlink to the canonical file in the top-level ``styles/``
    folder, so a checkout or editable install resolves to that; a wheel holds
    it as a plain file (package data). Nothing outside the package is looked
    at: in site-packages a folder ``styles/`` beside ``navigator/`` would be
    another distribution's.
    """
    return (Path(__file__).resolve().parent / "switchboard.tcss").resolve()


class MainScreen(Screen[None]):
    """The navigator's own screen, which places the panels itself.

    Textual renders and caches every visible widget's lines, covered by
    children or not, and the compositor keeps each line cut at every panel
    edge: two full-height containers between the screen and the panels held
    ~2.8 MB of blank strips in a 40x50 sidebar navigator. The stylesheet
    splits the breadcrumb, the footer and the right column off this screen's
    edges instead, and the left panels fill what remains; only the right
    column stays a container (the height of its panels when narrow).

    The stacked panels are shared out (``fit_stack``) again after a layout that
    changed what it measures (``stack_measures``). Measuring on the App's own
    Resize was too early: Textual hands the size on to the screen a moment
    later (1/120 s), and a panel the last size hid is laid out only once the
    class that hid it is gone, one layout later still. A navigator started in
    the 40x50 holding pane, squeezed to one column and widened again by an
    attaching 90x30 client measured the one-column, 23-row footer at 40x29,
    and its sidebar hid Recoveries and Inbox until something else moved.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._fitted_to: tuple[object, ...] = ()

    def on_mount(self) -> None:
        self.screen_layout_refresh_signal.subscribe(self, self._after_layout)

    def on_screen_resume(self) -> None:
        """A dialog closed: the size may have changed under it, with no layout to come
        (Textual laid this screen out in the background; fit_stack waits for the top)."""
        self.call_after_refresh(self._after_layout, self)

    def _after_layout(self, _screen: Screen[Any]) -> None:
        """Called after each layout, on the event loop (not inside the layout)."""
        if not self.is_current:
            return  # a dialog is up (fit_stack reads the top screen's panels)
        measures = stack_measures(self.app)
        if measures != self._fitted_to:
            self._fitted_to = measures
            fit_stack(self.app)


class LayoutKind(StrEnum):
    """Which layout the pane's size allows (App classes ``-too-small``, ``-compact``)."""

    TOO_SMALL = "too_small"
    COMPACT = "compact"
    FULL = "full"


def layout_for(size: Size, navigator_width: int) -> LayoutKind:
    """Too small below MIN_COLUMNS x MIN_ROWS; compact below the configured navigator
    width or the rows the full layout needs; else the full layout (two columns from
    NARROW_WIDTH)."""
    if size.width < MIN_COLUMNS or size.height < MIN_ROWS:
        return LayoutKind.TOO_SMALL
    rows = COMPACT_ROWS if size.width >= NARROW_WIDTH else SIDEBAR_ROWS
    if size.width < navigator_width or size.height < rows:
        return LayoutKind.COMPACT
    return LayoutKind.FULL


def compact_footer_rows(height: int) -> int:
    """The compact footer's row budget: a third of the pane at most, and what the
    panels the compact layout keeps (breadcrumb, views, an open recovery: about
    COMPACT_PANEL_ROWS) and two tree rows leave; a short pane keeps only the
    breadcrumb and the tree, and gives the footer a quarter."""
    if height < SHORT_ROWS:
        return max(1, height // 4)
    return max(1, min(height // FOOTER_SHARE, height - COMPACT_PANEL_ROWS - 2))


def fit_layout(app: App[Any], size: Size, kind: LayoutKind,
               previous: LayoutKind | None) -> LayoutKind:
    """Switch layouts with App classes, so every screen (dialogs too) follows.

    A pane too small for anything hides every panel (nothing lays out text in
    zero cells) and shows one line saying what it needs; the compact layout
    drops borders and idle panels and bounds the footer's rows. A 40-column
    sidebar gets Textual's compact footer keys (no padding).
    """
    app.query_one(TooSmallNotice).shortfall = Shortfall(
        MIN_COLUMNS, MIN_ROWS, size.width, size.height)
    footer = app.query_one(KeyFooter)
    footer.compact = size.width < NARROW_WIDTH
    footer.max_rows = 0 if kind is LayoutKind.FULL else compact_footer_rows(size.height)
    app.set_class(kind is LayoutKind.TOO_SMALL, "-too-small")
    app.set_class(kind is LayoutKind.COMPACT, "-compact")
    app.set_class(kind is LayoutKind.COMPACT and size.height < SHORT_ROWS, "-short")
    if (previous is LayoutKind.TOO_SMALL and app.screen is app.screen_stack[0]
            and app.focused is None):
        app.query_one(FrameTree).focus()  # hidden panels lost the focus
    return kind


def share_stack(available: int, tree_want: int, wants: Sequence[int], floor: int,
                reserve: int = 0) -> tuple[int, tuple[int, ...]]:
    """Rows of a stacked (sidebar) navigator's tree and of the panels under it.

    The tree gets its rows first: all it wants, up to what is there less
    ``reserve`` (the rows an open recovery keeps in sight, so a long tree cannot
    hide it; a long tree scrolls). The panels below (recoveries, inbox,
    preview, in that order) share the rest in order; one left fewer than
    ``floor`` rows (its border and one line) gets none, rather than a border
    with nothing inside.
    """
    available = max(0, available)
    tree = min(tree_want, max(available - reserve, 0))
    left = available - tree
    given: list[int] = []
    for want in wants:
        rows = min(want, left)
        if rows < min(floor, want) or rows <= 0:
            rows = 0
        given.append(rows)
        left -= rows
    return tree, tuple(given)


def _outer_rows(widget: Widget) -> int:
    return widget.outer_size.height if widget.display else 0


def _wanted_rows(widget: Widget, width: int) -> int:
    """Rows ``widget`` would take under its stylesheet's own max-height (0: hidden)."""
    if widget.styles.base.display == "none":  # by the stylesheet; fit_stack's own
        return 0                                # hiding is inline and not counted
    gutter = widget.styles.gutter
    content = widget.get_content_height(Size(width, 1000), widget.app.size,
                                        max(1, width - gutter.width))
    rows = content + gutter.height
    cap = widget.styles.base.max_height
    if cap is not None and cap.is_cells:
        rows = min(rows, int(cap.value))
    return rows


def _fixed_parts(app: App[Any]) -> list[Widget]:
    """What a stacked navigator shows above or below its panels, whose rows the
    tree and the panels share what is left of."""
    from navigator.widgets.breadcrumb import Breadcrumb
    from navigator.widgets.search import SearchBox
    from navigator.widgets.views import ViewList

    return [app.query_one(kind) for kind in (Breadcrumb, KeyFooter, ViewList, SearchBox)]


def stack_measures(app: App[Any]) -> tuple[object, ...]:
    """The size and the laid-out parts ``fit_stack`` measures: when a layout
    changes none of them, the share it gave holds."""
    return (app.size, *((part.display, part.outer_size) for part in _fixed_parts(app)))


def fit_stack(app: App[Any]) -> None:
    """Give the stacked navigator's tree its rows first (``share_stack``).

    Below NARROW_WIDTH the panels stack: the right column's recoveries, inbox and
    preview come after the tree, and each took its own height (up to 8, 6 and 14
    rows), so in a 40x29 navigator (a 90x30 terminal) the tree got none. Their
    inline max-heights now bound them to what the tree leaves; in two columns the
    stylesheet's own heights hold again.
    """
    from navigator.widgets.inbox import InboxList
    from navigator.widgets.preview import PanePreview
    from navigator.widgets.recoveries import RecoveryList

    panels: list[Widget] = [app.query_one(RecoveryList), app.query_one(InboxList),
                            app.query_one(PanePreview)]
    if app.size.width >= NARROW_WIDTH or app.has_class("-too-small"):
        for panel in panels:
            for rule in ("max_height", "display"):
                if panel.styles.inline.has_rule(rule):
                    panel.styles.inline.clear_rule(rule)
                    panel.refresh(layout=True)
        return
    width = app.size.width
    above = sum(_outer_rows(part) for part in _fixed_parts(app))
    tree = app.query_one(FrameTree)
    tree_want = (tree.virtual_size.height + tree.styles.gutter.height
                 + (1 if tree.show_horizontal_scrollbar else 0))
    floor = 2 if app.has_class("-compact") else 3
    recoveries = panels[0]
    reserve = floor if (recoveries.has_class("-has-recoveries")
                        and recoveries.styles.base.display != "none") else 0
    _tree, given = share_stack(app.size.height - above, tree_want,
                               [_wanted_rows(panel, width) for panel in panels], floor,
                               reserve)
    for panel, rows in zip(panels, given, strict=True):
        if rows == 0:
            if panel.styles.inline.display != "none":
                panel.styles.display = "none"
            continue
        if panel.styles.inline.has_rule("display"):
            panel.styles.inline.clear_rule("display")
            panel.refresh(layout=True)
        if panel.styles.inline.max_height != Scalar.from_number(rows):
            panel.styles.max_height = rows
