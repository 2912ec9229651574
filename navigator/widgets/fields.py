"""Text fields that keep a fast typist's keys in order across a focus change.

The app hands each key to the widget focused when the key arrives. Typed fast
(a paste-like burst, or ``tmux send-keys``), "Fast title<Tab>fast brief" reaches
the title field's queue whole before the Tab is handled: the Tab moved the
focus to the brief, and the title field then took "fast brief" as well (issue
40.5: title "Fast titlefast brief", empty brief): the Tab travels up to the
screen's binding while the field goes on with the keys queued behind it. So a
field moves the focus itself, at once, on Tab and shift+Tab (and on Enter where
Enter means "next field"), and a key that reaches a field which no longer has
the focus is handed on to the field that has it now.
"""

from __future__ import annotations

from textual import events
from textual.widget import Widget
from textual.widgets import Input, TextArea


def hand_on(widget: Widget, event: events.Key) -> None:
    """Give ``event`` to the focused widget when ``widget`` lost the focus while the key
    waited in its queue (nothing happens to it here)."""
    focused = widget.screen.focused if widget.is_attached else None
    if focused is None or focused is widget:  # ``has_focus`` lags: set by the Focus event
        return
    event.prevent_default()  # Input's and TextArea's own key handling is skipped
    event.stop()
    focused.post_message(events.Key(event.key, event.character))


#: Keys a field answers by moving the focus itself: to the next widget, the previous.
MOVES = {"tab": True, "shift+tab": False}


def move_focus(widget: Widget, event: events.Key, *, enter_moves: bool = False) -> bool:
    """Move the focus now for Tab, shift+Tab (and Enter when ``enter_moves``), so the
    keys queued behind it find the focus already moved; returns whether it did."""
    forward = True if enter_moves and event.key == "enter" else MOVES.get(event.key)
    if forward is None or widget.screen.focused is not widget:
        return False
    event.prevent_default()
    event.stop()
    if forward:
        widget.screen.focus_next()
    else:
        widget.screen.focus_previous()
    return True


class Field(Input):
    """A one-line field of a dialog (see the module's docstring). ``enter_moves``:
    Enter goes to the next field instead of submitting the dialog."""

    def __init__(self, *args: object, enter_moves: bool = False, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.enter_moves = enter_moves

    async def _on_key(self, event: events.Key) -> None:
        if not move_focus(self, event, enter_moves=self.enter_moves):
            hand_on(self, event)


class FieldArea(TextArea):
    """A multi-line field of a dialog (see the module's docstring); Tab leaves it, as
    TextArea's own "focus" tab behaviour does."""

    async def _on_key(self, event: events.Key) -> None:
        if not move_focus(self, event):
            hand_on(self, event)
