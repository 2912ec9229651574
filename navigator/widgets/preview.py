"""The preview panel: what a parked agent last printed (read-only, on selection).

The panel follows the Projects tree cursor: once the cursor rests on a parked
live agent's frame for ``DELAY`` seconds, it asks the app (``PreviewHost``) to
read that pane off the event loop; any other row, or a cursor that moved on
meanwhile, clears it. Nothing is polled.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Protocol, cast

from rich.text import Text
from textual.css.query import NoMatches
from textual.message import Message
from textual.timer import Timer
from textual.widgets import Static

from core.model.text import shown
from core.state.state_types import FrameSummary, NavigatorState
from navigator.targeting import preview_frame
from navigator.widgets.frames import FrameTree, NodeRef


class PreviewHost(Protocol):
    """What the panel needs from the app (narrow: no import cycle)."""

    navigator_state: NavigatorState | None
    #: In a browser (``switchboard serve``) no tmux view is on screen, so the agent a
    #: view shows is previewed as well (read-only, captured).
    preview_shown: bool

    def fetch_preview(self, frame_id: str,
                      then: Callable[[list[str] | None], None]) -> None: ...


class PanePreview(Static):
    """Shown only while a parked agent's frame is selected."""

    class Changed(Message):
        """The preview appeared, changed or went: a stacked navigator shares its rows
        again (``navigator.layout.fit_stack``)."""

    DELAY = 0.3
    """Seconds the cursor rests on a frame before its pane is read (never a poll)."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id, markup=False)
        self.border_title = "Preview"
        self.frame_id: str | None = None
        self._timer: Timer | None = None

    def follow(self) -> None:
        """The tree cursor moved: read its pane once it rests (debounced)."""
        if self._timer is not None:
            self._timer.stop()
        self._timer = self.set_timer(self.DELAY, self._rested)

    def _cursor(self) -> NodeRef | None:
        """The tree cursor; NoMatches when a dialog covers the panels."""
        return self.app.query_one(FrameTree).selected_ref

    def _rested(self) -> None:
        try:  # a dialog or the palette covers the panels: no preview now
            ref = self._cursor()
        except NoMatches:
            return
        frame = self._worth_a_preview(ref)
        if frame is None:
            self.clear()
            return
        host = cast(PreviewHost, self.app)
        host.fetch_preview(frame.frame_id, partial(self._read, frame.frame_id, frame.title))

    def _worth_a_preview(self, ref: NodeRef | None) -> FrameSummary | None:
        """The cursor's frame when no view shows it in its main pane (a person sees that
        pane itself; a browser sees none, so there every live agent is previewed)."""
        host = cast(PreviewHost, self.app)
        state = host.navigator_state
        frame = ref.frame if ref is not None else None
        in_main = frame is not None and (ref is not None and ref.shown or any(
            view.active_frame_id == frame.frame_id and view.state != "retired"
            for view in (state.views if state is not None else ())))
        return preview_frame(state, frame, in_main and not host.preview_shown)

    def recheck(self) -> None:
        """New state: a previewed frame a view now shows in main (the person pressed
        enter on it) has nothing to preview any more."""
        if self.frame_id is None:
            return
        try:
            ref = self._cursor()
        except NoMatches:
            return
        frame = self._worth_a_preview(ref)
        if frame is None or frame.frame_id != self.frame_id:
            self.clear()

    def _read(self, frame_id: str, title: str, lines: list[str] | None) -> None:
        try:
            ref = self._cursor()
        except NoMatches:
            return
        if lines is None or ref is None or ref.frame_id != frame_id:
            self.clear()  # the cursor moved on, or the pane is gone
            return
        self.show_lines(frame_id, title, lines)

    def show_lines(self, frame_id: str, title: str, lines: list[str]) -> None:
        self.frame_id = frame_id
        self.border_title = f"Preview: {shown(title)}"
        # The lines hold SGR colours and nothing else (core.runtime.preview): draw the colours.
        self.update(Text.from_ansi("\n".join(lines), no_wrap=True, overflow="ellipsis")
                    if lines else Text("(nothing printed yet)"))
        self.add_class("-visible")
        self.post_message(self.Changed())

    def clear(self) -> None:
        self.frame_id = None
        if self.has_class("-visible"):
            self.remove_class("-visible")
            self.post_message(self.Changed())
