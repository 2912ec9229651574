"""Compose a message from the person to the selected frame's agent.

The broker types it into the agent's pane when that pane is shown and the
agent is ready; until then it waits (the Inbox shows replies).
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label

from navigator.widgets.fields import Field


class OneLineScreen(ModalScreen[str | None]):
    """A dialog around one ``#text`` input with ``#ok``/``#cancel`` buttons and a
    ``#problem`` line: dismisses with the stripped text, or None when cancelled; empty
    text is refused with ``EMPTY_TEXT``. Subclasses compose the dialog."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]
    EMPTY_TEXT = "Type something first."

    def on_mount(self) -> None:
        self.query_one("#text", Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self._submit()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "ok":
            self._submit()
        else:
            self.dismiss(None)

    def action_cancel(self) -> None:
        self.dismiss(None)

    def _submit(self) -> None:
        text = self.query_one("#text", Input).value.strip()
        if not text:
            self.query_one("#problem", Label).update(self.EMPTY_TEXT)
            return
        self.dismiss(text)


class ComposeMessageScreen(OneLineScreen):
    """Dismisses with the text, or None when cancelled; empty text is refused here."""

    EMPTY_TEXT = "Type a message first."

    def __init__(self, frame_title: str) -> None:
        super().__init__()
        self.frame_title = frame_title

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="dialog"):
            yield Label(f"Message the agent of “{self.frame_title}”", id="heading")
            yield Label("It is typed when the agent is shown and ready; replies come to "
                        "the Inbox (l shows them in a pane of the view).")
            yield Field(placeholder="message", id="text")
            yield Label("", id="problem", classes="problem")
            with Horizontal(classes="buttons"):
                yield Button("Send", variant="primary", id="ok")
                yield Button("Cancel", id="cancel")
