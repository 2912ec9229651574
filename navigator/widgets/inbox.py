"""The Inbox panel: broker messages for the agents of this view.

Poll and ACK stay authoritative in the broker; this panel only lists what
the client returned and asks for an ACK. When the broker is not set up the
panel says so instead of looking empty.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from rich.text import Text
from textual.app import SystemCommand
from textual.binding import Binding
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import OptionList

from core.model.text import shown
from navigator.widgets.rows import Row, RowList

MAX_PREVIEW_CHARS = 200


def _sender(item: Any) -> str:
    for name in ("sender", "from_name", "from_member", "sender_name"):
        value = getattr(item, name, None)
        if value:
            return str(value)
    return "?"


def _recipient(item: Any) -> str | None:
    for name in ("to_name", "recipient", "to_member"):
        value = getattr(item, name, None)
        if value:
            return str(value)
    return None


def _who(item: Any) -> str:
    """``sender -> recipient``: in a project inbox both matter (who asked whom)."""
    recipient = _recipient(item)
    return f"{_sender(item)} -> {recipient}" if recipient else _sender(item)


ACK_TITLE = "Acknowledge message"
"""The palette's entry for the selected message: it is there at every size, while a
low or narrow navigator hides the Inbox panel."""

class InboxList(RowList):
    """Data in: ``messages`` (or ``unavailable``); intent out: ``AckRequested``."""

    EMPTY_TEXT = "no messages"
    COMPONENT_CLASSES = {"inbox--sender", "inbox--unavailable"}
    #: The footer shows ``a`` (the key that only acts here) while this panel has the focus.
    BINDINGS = [Binding("a", "select", "Acknowledge", show=True),
                Binding("enter", "select", "Acknowledge", show=False)]

    messages: reactive[tuple[Any, ...]] = reactive((), always_update=True, repaint=False)
    unavailable: reactive[str | None] = reactive(None)

    @dataclass
    class AckRequested(Message):
        """Acknowledge this broker message (the broker's id)."""

        message_id: Any

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.border_title = "Inbox"
        self._by_key: dict[str, Any] = {}

    @property
    def selected_message_id(self) -> Any | None:
        """The broker id of the highlighted message, or None."""
        item = self._by_key.get(self.highlighted_key or "")
        return item.message_id if item is not None else None

    def set_messages(self, messages: Sequence[Any]) -> None:
        self.unavailable = None
        self.messages = tuple(messages)

    def watch_messages(self) -> None:
        self._render_rows()

    def watch_unavailable(self) -> None:
        self._render_rows()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._render_rows()

    def _render_rows(self) -> None:
        if not self.is_mounted:
            return
        if self.unavailable:
            self.EMPTY_TEXT = self.unavailable
            self.remove_class("-has-messages")
            self._by_key = {}
            self.sync_rows([])
            return
        self.EMPTY_TEXT = type(self).EMPTY_TEXT
        rows = []
        self._by_key = {}
        for item in self.messages:
            key = str(item.message_id)
            self._by_key[key] = item
            # Agents' text: one row, control characters spelled out (an ESC[2J in a
            # message must not reach the terminal the navigator draws on).
            text = shown(" ".join(str(item.text).split()))[:MAX_PREVIEW_CHARS]
            sender_style = self.get_component_rich_style("inbox--sender", partial=True)
            rows.append(Row(key, Text.assemble((shown(_who(item)), sender_style), ": ", text)))
        count = len(rows)
        self.show_title(f"Inbox ({count})" if count else "Inbox")
        self.set_class(count > 0, "-has-messages")  # the compact layout shows it only then
        self.sync_rows(rows)

    def system_commands(self) -> Iterator[SystemCommand]:
        """The palette's entry for the selected message (none without one)."""
        if self.selected_message_id is not None:
            yield SystemCommand(ACK_TITLE, "acknowledge the selected inbox message",
                                self.acknowledge_selected)

    def say_where_a_works(self) -> None:
        """``a`` pressed outside this panel: say where it works instead of acting on a
        message the person is not looking at."""
        if self.selected_message_id is None:
            self.notify("Nothing to acknowledge: the Inbox has no message for this view.",
                        markup=False)
        else:
            self.notify("a acknowledges the selected message in the Inbox panel (tab there), "
                        f"or ctrl+p › {ACK_TITLE} from anywhere.", markup=False)

    def acknowledge_selected(self) -> None:
        message_id = self.selected_message_id
        if message_id is None:
            self.notify("No message selected: none is waiting for this view (it may have "
                        "been acknowledged meanwhile).", severity="warning", markup=False)
            return
        self.post_message(self.AckRequested(message_id))

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        item = self._by_key.get(event.option.id or "")
        if item is not None:
            self.post_message(self.AckRequested(item.message_id))
