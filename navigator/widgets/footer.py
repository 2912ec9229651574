"""The footer: every key of the focused panel and the app, wrapped onto as many lines
as the pane needs, so none is cut off.

Textual's ``Footer`` keeps one line and scrolls sideways, which in a 40-column
sidebar hides most keys. This footer packs the keys into rows by their width.

It is one widget that draws every key itself, not a container of ``FooterKey``
widgets: a navigator runs in every view's pane, and the seventeen key widgets
(rebuilt on every focus change) were ~3.5 MB of each navigator's resident
memory. It keeps what those widgets gave: Textual's footer colours (the same
theme variables), the disabled look, a click runs the key, hovering highlights
the key and shows its tooltip.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from rich.cells import cell_len
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.geometry import Size
from textual.reactive import reactive
from textual.screen import Screen
from textual.widget import Widget

#: The keys a brief footer keeps: the help lists every other key, the palette runs them.
BRIEF_ACTIONS = frozenset({"help"})


@dataclass(frozen=True)
class FooterEntry:
    """One key as the footer shows it."""

    key: str
    """The binding's key: what a click presses."""
    display: str
    description: str
    action: str
    enabled: bool
    tooltip: str
    palette: bool = False
    """The command palette's key: kept in the brief footer, like help."""


@dataclass(frozen=True)
class PlacedKey:
    """Where a key was drawn: its row and its first column, and how many cells it takes."""

    entry: FooterEntry
    row: int
    x: int
    width: int


def key_width(key_display: str, description: str, *, compact: bool) -> int:
    """Cells one key takes in a row, with the gap after it (Textual's FooterKey spacing)."""
    if not description:  # the key alone, and the gap in the compact look
        return cell_len(key_display) + (1 if compact else 0)
    if compact:  # "k desc" and a one-cell gap
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


class KeyFooter(Widget, can_focus=False):
    """The keys, wrapped into rows instead of scrolling out of sight.

    ``max_rows`` (the compact layout: a third of the pane's rows; 0 is no
    limit) bounds the rows, so the tree keeps its place: every key with its
    description when they fit, else every key's letter alone (help and the
    palette keep their words, so the meanings are one key away), and only when
    even that does not fit, one row of help and the command palette. In a
    26x23 navigator (an 80x24 terminal) every key is shown with its words.
    ``compact`` (a narrow sidebar) drops the padding around each key, as
    Textual's compact footer.
    """

    ALLOW_SELECT = False
    COMPONENT_CLASSES = {
        "footer-key--item",
        "footer-key--key",
        "footer-key--description",
        "footer-key--hover",
        "footer-key--disabled",
    }
    DEFAULT_CSS = """
    KeyFooter {
        dock: bottom;
        height: auto;
        color: $footer-foreground;
        background: $footer-background;
        & > .footer-key--item {
            background: $footer-item-background;
        }
        & > .footer-key--key {
            color: $footer-key-foreground;
            background: $footer-key-background;
            text-style: bold;
        }
        & > .footer-key--description {
            color: $footer-description-foreground;
            background: $footer-description-background;
        }
        & > .footer-key--hover {
            color: $footer-key-foreground;
            background: $block-hover-background;
        }
        & > .footer-key--disabled {
            text-style: dim;
        }
    }
    """

    max_rows: reactive[int] = reactive(0, layout=True)
    compact: reactive[bool] = reactive(False, layout=True)

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.entries: tuple[FooterEntry, ...] = ()
        """Every key the footer would show in a full row set, in binding order."""
        self._placed: tuple[PlacedKey, ...] = ()
        self._placed_for: tuple[object, ...] | None = None
        self._hover: PlacedKey | None = None

    # -- what is shown ------------------------------------------------------

    @property
    def shown(self) -> tuple[PlacedKey, ...]:
        """The keys drawn at the current width, with where each is."""
        return self._place(self.size.width or self.app.size.width)

    @property
    def actions(self) -> frozenset[str]:
        """The actions of the keys drawn now."""
        return frozenset(placed.entry.action for placed in self.shown)

    def _entries_of(self, screen: Screen[object]) -> tuple[FooterEntry, ...]:
        active = screen.active_bindings
        entries: list[FooterEntry] = []
        seen: set[str] = set()
        for _namespace, binding, enabled, tooltip in active.values():
            if not binding.show or binding.action in seen:
                continue
            seen.add(binding.action)
            entries.append(self._entry(binding, enabled, tooltip))
        palette = active.get(self.app.COMMAND_PALETTE_BINDING)
        if self.app.ENABLE_COMMAND_PALETTE and palette:
            _namespace, binding, enabled, _tooltip = palette
            entries.append(self._entry(binding, enabled, binding.tooltip or binding.description,
                                       palette=True))
        return tuple(entries)

    def _entry(self, binding: Binding, enabled: bool, tooltip: str, *,
               palette: bool = False) -> FooterEntry:
        return FooterEntry(binding.key, self.app.get_key_display(binding), binding.description,
                           binding.action, enabled, tooltip, palette)

    def _place(self, width: int) -> tuple[PlacedKey, ...]:
        """Pack the entries into rows of ``width`` cells, once per width and key set."""
        signature = (width, self.entries, self.max_rows, self.compact)
        if signature == self._placed_for:
            return self._placed
        entries, widths, rows = self._packing(width, lambda entry: True, lambda entry: True)
        if self.max_rows and len(rows) > self.max_rows:  # the letters alone
            entries, widths, rows = self._packing(
                width, lambda entry: True, lambda entry: entry.palette
                or entry.action in BRIEF_ACTIONS)
        brief: Callable[[FooterEntry], bool] = lambda entry: (entry.palette or  # noqa: E731
                                                               entry.action in BRIEF_ACTIONS)
        for worded in (lambda entry: True, lambda entry: not entry.palette,
                       lambda entry: False):  # help and the palette, words while they fit
            if not self.max_rows or len(rows) <= self.max_rows:
                break
            entries, widths, rows = self._packing(width, brief, worded)
            if len(rows) == 1:
                break
        rows = rows[:self.max_rows] if self.max_rows else rows
        gap = 1 if self.compact else 0  # the compact look's margin after each key
        placed: list[PlacedKey] = []
        for row_index, row in enumerate(rows):
            x = 0
            for index in row:
                placed.append(PlacedKey(entries[index], row_index, x, widths[index] - gap))
                x += widths[index]
        self._placed, self._placed_for = tuple(placed), signature
        return self._placed

    def _packing(self, width: int, keep: Callable[[FooterEntry], bool],
                 worded: Callable[[FooterEntry], bool]
                 ) -> tuple[list[FooterEntry], list[int], list[list[int]]]:
        """The entries ``keep`` keeps, described where ``worded`` says, packed in rows."""
        entries = [entry if worded(entry) else replace(entry, description="")
                   for entry in self.entries if keep(entry)]
        widths = [key_width(entry.display, entry.description, compact=self.compact)
                  for entry in entries]
        return entries, widths, pack_rows(widths, width)

    # -- keeping up with the bindings ----------------------------------------

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self._bindings_changed)
        self._bindings_changed(self.screen)

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def _bindings_changed(self, screen: Screen[object]) -> None:
        if not screen.app.app_focus or screen is not self.screen:
            return  # a blurred app keeps its keys; another screen's keys are not ours
        entries = self._entries_of(screen)
        if entries != self.entries:
            self.entries = entries
            self._hover = None
            self.refresh(layout=True)

    # -- drawing --------------------------------------------------------------

    def get_content_width(self, container: Size, viewport: Size) -> int:
        return container.width

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        placed = self._place(width)
        return placed[-1].row + 1 if placed else 0

    def render(self) -> Text:
        placed = self.shown
        rows = placed[-1].row + 1 if placed else 0
        lines = [Text(no_wrap=True, overflow="crop", end="") for _ in range(rows)]
        for key in placed:
            line = lines[key.row]
            if key.x > line.cell_len:
                line.append(" " * (key.x - line.cell_len))
            line.append_text(self._draw(key))
        return Text("\n", no_wrap=True, overflow="crop").join(lines)

    def _draw(self, key: PlacedKey) -> Text:
        """One key as Textual's FooterKey draws it: padded key, then its description."""
        entry = key.entry
        key_style = self.get_component_rich_style("footer-key--key", partial=True)
        description_style = self.get_component_rich_style("footer-key--description",
                                                          partial=True)
        if entry.description:
            pad, after = ("", " ") if self.compact else (" ", "")
            text = Text.assemble((f"{pad}{entry.display}{pad}", key_style),
                                 (f"{after}{entry.description}{pad}", description_style))
        else:
            text = Text(entry.display, style=key_style)
        base = self.get_component_rich_style(
            "footer-key--hover" if key is self._hover else "footer-key--item")
        if not entry.enabled:
            base += self.get_component_rich_style("footer-key--disabled")
        text.stylize_before(base)
        return text

    # -- the mouse -------------------------------------------------------------

    def _key_at(self, x: int, y: int) -> PlacedKey | None:
        return next((key for key in self.shown
                     if key.row == y and key.x <= x < key.x + key.width), None)

    def on_mouse_down(self, event: events.MouseDown) -> None:
        key = self._key_at(event.x, event.y)
        if key is None:
            return
        if key.entry.enabled:
            self.app.simulate_key(key.entry.key)
        else:
            self.app.bell()

    def on_mouse_move(self, event: events.MouseMove) -> None:
        self._hover_over(self._key_at(event.x, event.y))

    def on_leave(self, event: events.Leave) -> None:
        self._hover_over(None)

    def _hover_over(self, key: PlacedKey | None) -> None:
        if key is self._hover:
            return
        self._hover = key
        self.tooltip = (key.entry.tooltip or None) if key is not None else None
        self.refresh()

