"""Which layout a navigator pane's size allows: full, compact, or too small.

Pure sizes and one function, so the thresholds are tested without a screen;
the app turns the answer into App classes (``-too-small``, ``-compact``,
``-short``) that every screen's stylesheet follows.
"""

from __future__ import annotations

from enum import StrEnum

from textual.geometry import Size

from core.config import NAVIGATOR_WIDTH_RANGE

#: Below this many columns the panels stack (the navigator as a sidebar pane).
NARROW_WIDTH = 60
#: The navigator pane's width when the config names none (config `tmux.navigator_width`).
DEFAULT_NAVIGATOR_WIDTH = 40
#: The compact layout's minimum: narrower or lower than this, only one line says so.
#: The width is the smallest the config accepts, so a configured width always renders.
MIN_COLUMNS = NAVIGATOR_WIDTH_RANGE[0]
MIN_ROWS = 5
#: Fewer rows than this also get the compact layout: two columns (from NARROW_WIDTH)
#: need COMPACT_ROWS, the stacked sidebar SIDEBAR_ROWS (its footer alone wraps to 3).
COMPACT_ROWS = 16
SIDEBAR_ROWS = 22
#: Fewer rows than this: the compact layout shows only the breadcrumb, tree and footer.
SHORT_ROWS = 14


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
