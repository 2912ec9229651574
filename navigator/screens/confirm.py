"""A yes/no question before an action a person cannot take back (human close)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Label


class ConfirmScreen(ModalScreen[bool | None]):
    """Dismisses with True only on an explicit yes; escape and "n" mean no.

    The person pressed the key of the action (stop, close), and both can be taken
    back (n resumes the session, r reopens the task), so the action's button has
    the focus and Enter does what was asked: with Cancel focused, Enter silently
    did nothing. A hint line says what Enter does now, following the focus, and
    the focused button is drawn reversed (``.dialog Button:focus``).
    """

    BINDINGS = [
        Binding("y", "answer(True)", "Yes"),
        Binding("n,escape", "answer(False)", "No"),
        # Buttons sit side by side: the arrows move between them as they look.
        Binding("left", "app.focus_previous", "Previous", show=False),
        Binding("right", "app.focus_next", "Next", show=False),
    ]

    def __init__(self, question: str, *, confirm_label: str = "Yes") -> None:
        super().__init__()
        self.question = question
        self.confirm_label = confirm_label

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="dialog"):
            yield Label(self.question, id="question")
            yield Label("", id="keys", classes="hint")
            with Horizontal(classes="buttons"):
                yield Button(self.confirm_label, variant="error", id="yes")
                yield Button("Cancel", id="no")

    def on_mount(self) -> None:
        self.query_one("#yes", Button).focus()

    def on_descendant_focus(self) -> None:
        yes = self.focused is not None and self.focused.id == "yes"
        self.query_one("#keys", Label).update(
            f"enter: {self.confirm_label} · esc: cancel" if yes
            else f"enter: cancel · y: {self.confirm_label}")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id == "yes")

    def action_answer(self, answer: bool) -> None:
        self.dismiss(answer)
