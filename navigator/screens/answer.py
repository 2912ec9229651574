"""y: answer the selected agent's prompt yes or no, when its pane is out of reach."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Label


class AnswerScreen(ModalScreen[str | None]):
    """Dismisses with "yes" or "no" (the option the agent's CLI is told), or None.

    Nothing is preselected: the answer goes to an agent that asked for permission,
    so Enter alone never answers; y, n or a button does, escape cancels.
    """

    BINDINGS = [
        Binding("y", "choose('yes')", "Yes"),
        Binding("n", "choose('no')", "No"),
        Binding("escape", "choose(None)", "Cancel"),
        Binding("left", "app.focus_previous", "Previous", show=False),
        Binding("right", "app.focus_next", "Next", show=False),
    ]

    def __init__(self, frame_title: str, where: str) -> None:
        super().__init__()
        self.frame_title = frame_title
        self.where = where

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="dialog"):
            yield Label(f"Answer the prompt of “{self.frame_title}”{self.where}", id="question")
            yield Label("y picks its first Yes option, n its first No (the preview shows "
                        "the prompt); escape cancels", classes="hint")
            with Horizontal(classes="buttons"):
                yield Button("Yes", variant="success", id="yes")
                yield Button("No", variant="error", id="no")
                yield Button("Cancel", id="cancel")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss({"yes": "yes", "no": "no"}.get(event.button.id or ""))

    def action_choose(self, choice: str | None) -> None:
        self.dismiss(choice)
