"""Enter on a manual recovery: what happened and what the person does next.

Manual recoveries are never run by a key; this dialog shows the engine's whole
explanation (the panel row may be cut in a narrow pane), which frame it is
about when that is known, and how to close it once handled.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Label, Static

from core.state.state_types import RecoveryRow


class RecoveryExplanationScreen(ModalScreen[None]):
    """Read-only; any of escape, enter or q closes it."""

    BINDINGS = [Binding("escape,enter,q", "close", "Close")]

    def __init__(self, recovery: RecoveryRow, about: str | None = None) -> None:
        super().__init__()
        self.recovery = recovery
        self.about = about

    def compose(self) -> ComposeResult:
        recovery = self.recovery
        with VerticalScroll(id="dialog", classes="dialog recovery-explanation"):
            yield Label(f"{recovery.kind.replace('_', ' ')} · done by hand", id="heading")
            if self.about:
                yield Static(f"About: {self.about}", id="about")
            # Static, not Label: a long explanation wraps in a narrow pane.
            yield Static(recovery.explanation, id="explanation")
            yield Static("Nothing is run from here. Once it is handled, press d on the row "
                         "to dismiss it, or run `switchboard recovery resolve "
                         f"{recovery.recovery_id}`.", classes="hint")

    def action_close(self) -> None:
        self.dismiss(None)
