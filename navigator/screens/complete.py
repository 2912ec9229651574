"""Complete-and-return for a person: the handoff the parent will receive.

The agent normally calls task_complete_return itself; this dialog is the
human path to the same engine request, so it asks for the same two fields.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label

from navigator.widgets.fields import Field


@dataclass(frozen=True)
class CompletionAnswer:
    summary: str
    next_action: str


class CompleteReturnScreen(ModalScreen[CompletionAnswer | None]):
    """Dismisses with the answer, or None when cancelled; a summary is required."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, frame_title: str) -> None:
        super().__init__()
        self.frame_title = frame_title

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="dialog"):
            yield Label(f"Complete “{self.frame_title}” and return to its parent",
                        id="heading")
            yield Label("Summary (what was done)")
            yield Field(placeholder="required", id="summary")
            yield Label("Next action (for the parent)")
            yield Field(placeholder="optional", id="next-action")
            yield Label("", id="problem", classes="problem")
            with Horizontal(classes="buttons"):
                yield Button("Complete", variant="primary", id="ok")
                yield Button("Cancel", id="cancel")

    def on_mount(self) -> None:
        self.query_one("#summary", Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if event.input.id == "summary":
            self.query_one("#next-action", Input).focus()
        else:
            self._submit()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "ok":
            self._submit()
        else:
            self.dismiss(None)

    def _submit(self) -> None:
        summary = self.query_one("#summary", Input).value.strip()
        next_action = self.query_one("#next-action", Input).value.strip()
        if not summary:
            self.query_one("#problem", Label).update("A summary is required.")
            self.query_one("#summary", Input).focus()
            return
        self.dismiss(CompletionAnswer(summary, next_action))

    def action_cancel(self) -> None:
        self.dismiss(None)
