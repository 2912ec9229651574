"""New task from the navigator: the person pushes a child task with a title and a brief.

Agents push with ``task_push``; a person uses this dialog for the same engine
request (created by the user). The child launches in main and claims the brief
exactly as an agent's push would, after the parent's agent ends its turn.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, TextArea

from navigator.widgets.fields import Field, FieldArea


@dataclass(frozen=True)
class NewTask:
    title: str
    brief: str


class NewTaskScreen(ModalScreen[NewTask | None]):
    """Dismisses with the task, or None when cancelled; both fields are required."""

    BINDINGS = [Binding("escape", "cancel", "Cancel"),
                Binding("ctrl+s", "submit", "Push", show=True)]

    def __init__(self, parent_title: str) -> None:
        super().__init__()
        self.parent_title = parent_title

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="dialog new-task"):
            yield Label(f"New task under “{self.parent_title}”", id="heading")
            yield Label("Title")
            yield Field(placeholder="required, one line", id="title", enter_moves=True)
            yield Label("Brief for its agent (ctrl+s pushes)")
            yield FieldArea(id="brief", soft_wrap=True, show_line_numbers=False)
            yield Label("", id="problem", classes="problem")
            with Horizontal(classes="buttons"):
                yield Button("Push", variant="primary", id="ok")
                yield Button("Cancel", id="cancel")

    def on_mount(self) -> None:
        self.query_one("#title", Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.query_one("#brief", TextArea).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "ok":
            self.action_submit()
        else:
            self.dismiss(None)

    def action_submit(self) -> None:
        title = self.query_one("#title", Input).value.strip()
        brief = self.query_one("#brief", TextArea).text.strip()
        problem = "A title is required." if not title else \
            "A brief is required: the task's agent starts from it." if not brief else ""
        if problem:
            self.query_one("#problem", Label).update(problem)
            (self.query_one("#title", Input) if not title else
             self.query_one("#brief", TextArea)).focus()
            return
        self.dismiss(NewTask(title, brief))

    def action_cancel(self) -> None:
        self.dismiss(None)
