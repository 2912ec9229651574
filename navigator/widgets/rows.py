"""An OptionList that reconciles to a list of keyed rows instead of being rebuilt.

Views, recoveries and the inbox are short keyed lists that change a little at
a time (a badge flips, a row appears). Replacing only the prompts that
changed keeps the highlight and scroll where the person left them; a change
in the set of keys re-lists the options and puts the highlight back on the
same key.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.text import Text
from textual.geometry import Size
from textual.widgets import OptionList
from textual.widgets.option_list import Option


@dataclass(frozen=True)
class Row:
    """One option: a stable key (an entity id) and its rendered prompt."""

    key: str
    prompt: Text


class RowList(OptionList):
    """Base of the keyed panels; subclasses turn their state into ``Row``s."""

    #: Shown as one disabled option when there are no rows.
    EMPTY_TEXT = "nothing here"

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._keys: list[str] = []
        self._prompts: dict[str, Text] = {}
        self._empty_shown: str | None = None
        self._title_shown: str | None = None

    def show_title(self, title: str) -> None:
        """Set the border title only when it changes: Textual repaints the whole panel on
        every assignment, and 20 navigators reload on every hook."""
        if title != self._title_shown:
            self._title_shown = title
            self.border_title = title

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        """Heights of the wrapped rows, never measured in fewer than one cell.

        A panel squeezed to its borders (a pane of a column or two) has a
        content width of 0; Textual's OptionList then asks rich to wrap each
        row at 0 cells, and rich's ``chop_cells`` raises ``range() arg 3 must
        not be zero``. One cell is the narrowest a row can be drawn in anyway.
        """
        padding = self.get_component_styles("option-list--option").padding.width
        return super().get_content_height(container, viewport, max(width, padding + 1))

    @property
    def highlighted_key(self) -> str | None:
        """The key of the highlighted row, or None (also for the empty placeholder)."""
        option = self.highlighted_option
        return option.id if option is not None and self._keys else None

    def highlight_key(self, key: str | None) -> bool:
        """Move the highlight to ``key`` if it is listed; returns whether it moved."""
        if key is None or key not in self._prompts:
            return False
        self.highlighted = self.get_option_index(key)
        return True

    def sync_rows(self, rows: Sequence[Row]) -> None:
        """Make the options equal ``rows`` with the least change."""
        keys = [row.key for row in rows]
        if keys == self._keys and keys:
            for row in rows:
                if self._prompts.get(row.key) != row.prompt:
                    self._prompts[row.key] = row.prompt
                    self.replace_option_prompt(row.key, row.prompt)
            return
        if not rows and self._empty_shown == self.EMPTY_TEXT and not self._keys:
            return  # still empty, with the same words: nothing to repaint
        previous = self.highlighted_key
        previous_index = self.highlighted
        self._keys = keys
        self._prompts = {row.key: row.prompt for row in rows}
        if rows:
            self._empty_shown = None
            self.set_options(Option(row.prompt, id=row.key) for row in rows)
        else:
            self._empty_shown = self.EMPTY_TEXT
            self.set_options([Option(Text(self.EMPTY_TEXT), id="-empty", disabled=True)])
            return
        if not self.highlight_key(previous) and previous_index is not None:
            self.highlighted = min(previous_index, len(rows) - 1)
        elif self.highlighted is None:
            self.highlighted = 0
