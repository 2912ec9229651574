"""The / filter box above the Projects tree."""

from __future__ import annotations

from textual.binding import Binding
from textual.message import Message
from textual.widgets import Input


class SearchBox(Input):
    """Typing filters the tree live; enter keeps the filter, escape clears it."""

    BINDINGS = [Binding("escape", "clear_search", "Clear search", show=True)]

    class Cleared(Message):
        """The person left the search; the filter is gone."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(placeholder="filter projects and frames…", id=id)
        self.border_title = "Search"

    def action_clear_search(self) -> None:
        self.value = ""
        self.post_message(self.Cleared())
