"""The Recoveries panel: every durable uncertainty, with what a person can do about it.

Actionability decides the wording: ``safe_auto`` is fixed by one key (R),
``open_view`` asks the person to go and look, ``manual`` only explains. The
panel never guesses a fix; it posts the request and core decides.
"""

from __future__ import annotations

from rich.style import Style
from rich.text import Text
from textual.binding import Binding
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import OptionList

from core.state_types import NavigatorState, RecoveryRow
from navigator.widgets.rows import Row, RowList

ACTIONABILITY: dict[str, tuple[str, str]] = {
    "safe_auto": ("↻", "R fixes"),
    "open_view": ("→", "look"),
    "manual": ("✎", "manual"),
}


class RecoveryList(RowList):
    """Data in: ``navigator_state``; intent out: Recover/Dismiss requests."""

    EMPTY_TEXT = "no recoveries"
    COMPONENT_CLASSES = {"recovery--safe-auto", "recovery--open-view", "recovery--manual",
                         "recovery--explanation"}
    BINDINGS = [
        Binding("enter", "select", "Recover", show=True),
        Binding("d", "dismiss_recovery", "Dismiss recovery", show=True),
    ]

    navigator_state: reactive[NavigatorState | None] = reactive(None, always_update=True)

    class RecoverRequested(Message):
        def __init__(self, recovery_id: str) -> None:
            super().__init__()
            self.recovery_id = recovery_id

    class DismissRequested(Message):
        def __init__(self, recovery_id: str) -> None:
            super().__init__()
            self.recovery_id = recovery_id

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.border_title = "Recoveries"

    @property
    def open_recoveries(self) -> list[RecoveryRow]:
        state = self.navigator_state
        return [r for r in state.recoveries if r.state == "open"] if state is not None else []

    @property
    def selected_recovery(self) -> RecoveryRow | None:
        key = self.highlighted_key
        return next((r for r in self.open_recoveries if r.recovery_id == key), None)

    def watch_navigator_state(self) -> None:
        self._render_rows()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._render_rows()

    def _render_rows(self) -> None:
        if self.navigator_state is None or not self.is_mounted:
            return
        rows = []
        for recovery in self.open_recoveries:
            symbol, word = ACTIONABILITY.get(recovery.actionability, ("?", "unknown"))
            style = self.get_component_rich_style(
                "recovery--" + recovery.actionability.replace("_", "-"), partial=True,
                default=Style())
            prompt = Text.assemble((f"{symbol} {word}", style), " ", recovery.kind)
            prompt.append("\n" + recovery.explanation,
                          style=self.get_component_rich_style("recovery--explanation",
                                                              partial=True))
            rows.append(Row(recovery.recovery_id, prompt))
        count = len(rows)
        self.border_title = f"Recoveries ({count})" if count else "Recoveries"
        self.set_class(count > 0, "-has-recoveries")
        self.sync_rows(rows)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option.id and self._keys:
            self.post_message(self.RecoverRequested(event.option.id))

    def action_dismiss_recovery(self) -> None:
        key = self.highlighted_key
        if key is not None:
            self.post_message(self.DismissRequested(key))
