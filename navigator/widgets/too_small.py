"""The one line a navigator pane shows when it is too small for any layout.

A tmux pane can be squeezed to a single column or row (a small terminal
attaching, a zoom, a person dragging a border). Below the compact layout's
minimum the app hides every panel, so nothing lays out text in zero cells,
and shows this line instead; the panels come back, untouched, once the pane
is big enough.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.cells import cell_len
from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget


@dataclass(frozen=True)
class Shortfall:
    """What the pane lacks: the minimum columns and rows, and what it has."""

    min_columns: int
    min_rows: int
    columns: int
    rows: int

    @property
    def too_small(self) -> bool:
        return self.columns < self.min_columns or self.rows < self.min_rows

    def messages(self) -> tuple[str, ...]:
        """What to do, longest first; the width first (what a sidebar usually lacks)."""
        if self.columns < self.min_columns:
            need = self.min_columns
            return (f"Switchboard: widen this pane (needs {need} columns)",
                    f"Widen pane: needs {need} cols", f"Widen: {need} cols", f"Widen: {need}",
                    f"↔{need}", "↔")
        need = self.min_rows
        return (f"Switchboard: make this pane taller (needs {need} rows)",
                f"Taller pane: needs {need} rows", f"Taller: {need} rows", f"Taller: {need}",
                f"↕{need}", "↕")

    def message(self) -> str:
        """The longest wording that fits the pane's width (the last one always does)."""
        fitting = [text for text in self.messages() if cell_len(text) <= self.columns]
        return fitting[0] if fitting else self.messages()[-1]


class TooSmallNotice(Widget):
    """Data in: ``shortfall``; renders one line, cut at the pane's edge."""

    shortfall: reactive[Shortfall | None] = reactive(None)

    def render(self) -> Text:
        text = self.shortfall.message() if self.shortfall is not None else ""
        return Text(text, no_wrap=True, overflow="crop")
