"""The footer: every key of the focused panel and the app, wrapped onto as many lines
as the pane needs, so none is cut off.

Textual's ``Footer`` keeps one line and scrolls sideways, which in a 40-column
sidebar hides most keys. This footer builds the same ``FooterKey`` widgets
(click, disabled look and tooltips are Textual's) and packs them into rows
by their width; it recomposes when the bindings or the width change.
"""

from __future__ import annotations

from rich.cells import cell_len
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.events import Resize
from textual.reactive import reactive
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

#: The keys a brief footer keeps: the help lists every other key, the palette runs them.
BRIEF_ACTIONS = frozenset({"help"})


def key_width(key_display: str, description: str, *, compact: bool) -> int:
    """Cells one key takes in a row: Textual's FooterKey padding plus the gap after it."""
    if compact:  # "k desc" and a one-cell margin
        return cell_len(key_display) + 1 + cell_len(description) + 1
    return cell_len(key_display) + 2 + cell_len(description) + 1  # " k desc "


def pack_rows(widths: list[int], width: int) -> list[list[int]]:
    """Greedy rows of item indexes, in order, each fitting ``width`` (one item at least).

    Every width ends in a one-cell gap, which the last item of a row may lose.
    """
    rows: list[list[int]] = []
    used = 0
    for index, cells in enumerate(widths):
        if not rows or (rows[-1] and used + cells - 1 > width):
            rows.append([])
            used = 0
        rows[-1].append(index)
        used += cells
    return rows


class KeyFooter(Footer):
    """A Footer whose keys wrap into rows instead of scrolling out of sight.

    ``brief`` (the compact layout) keeps one row: help and the command palette,
    from which every other key is found and run.
    """

    brief: reactive[bool] = reactive(False)

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._packed_width = 0

    def compose(self) -> ComposeResult:
        if not self._bindings_ready:
            return
        active = self.screen.active_bindings
        keys: list[FooterKey] = []
        widths: list[int] = []
        seen: set[str] = set()
        for _namespace, binding, enabled, tooltip in active.values():
            if not binding.show or binding.action in seen:
                continue
            if self.brief and binding.action not in BRIEF_ACTIONS:
                continue
            seen.add(binding.action)
            display = self.app.get_key_display(binding)
            keys.append(FooterKey(binding.key, display, binding.description, binding.action,
                                  disabled=not enabled, tooltip=tooltip
                                  ).data_bind(compact=Footer.compact))
            widths.append(key_width(display, binding.description, compact=self.compact))
        palette = active.get(self.app.COMMAND_PALETTE_BINDING)
        if self.show_command_palette and self.app.ENABLE_COMMAND_PALETTE and palette:
            _namespace, binding, enabled, tooltip = palette
            display = self.app.get_key_display(binding)
            keys.append(FooterKey(binding.key, display, binding.description, binding.action,
                                  classes="-command-palette", disabled=not enabled,
                                  tooltip=binding.tooltip or binding.description
                                  ).data_bind(compact=Footer.compact))
            widths.append(key_width(display, binding.description, compact=self.compact))
        self._packed_width = self.size.width or self.app.size.width
        rows = pack_rows(widths, self._packed_width)
        for row in rows[:1] if self.brief else rows:  # brief: one row, help first
            with Horizontal(classes="footer-row"):
                yield from (keys[index] for index in row)

    def watch_compact(self) -> None:
        if self.is_attached:
            self.call_after_refresh(self.recompose)

    def watch_brief(self) -> None:
        if self.is_attached:
            self.call_after_refresh(self.recompose)

    def on_resize(self, event: Resize) -> None:
        if event.size.width != self._packed_width and self._bindings_ready:
            self.call_after_refresh(self.recompose)
