"""The search screen (ctrl+f): every frame's briefs, handoffs, prompts, commands and
failures on this host, best match first.

Typing searches (a short pause after the last key, off the event loop, through
the ReviewClient); enter on a result dismisses with it, and the app opens that
frame's timeline at the entry. Open and closed frames are both found.
"""

from __future__ import annotations

import re

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.timer import Timer
from textual.widgets import Input, Label, OptionList
from textual.widgets.option_list import Option

from core.model.errors import SwitchboardError
from core.review.client import ReviewClient
from core.review.search import HIT_END, HIT_START, SearchResult
from navigator.screens.session_detail import local_time
from navigator.widgets.diff_view import one_line, safe
from navigator.widgets.fields import Field

KIND_MARK = {"brief": "◆ brief", "handoff": "↩ handoff", "prompt": "› prompt",
             "command": "$ command", "failure": "✗ failure"}
PAUSE_S = 0.15
#: A failure signature is a long hex digest: shown by its first characters.
_LONG_HEX = re.compile(r"\b[0-9a-f]{24,}\b")
#: The OptionList wraps what is wider than it: one row of snippet at most.
MAX_SNIPPET_CELLS = 72


def result_option(result: SearchResult, index: int) -> Option:
    """Two lines: where (kind, project / frame, time), then the words around the match."""
    line = Text(no_wrap=True, overflow="ellipsis")
    line.append(f"{KIND_MARK.get(result.kind, result.kind)}  ", style="bold")
    line.append(f"{safe(result.project_name)} / {safe(result.frame_title)}")
    if result.frame_state == "closed":
        line.append(" (closed)", style="dim")
    line.append(f"  {local_time(result.at)}", style="dim")
    snippet = Text(no_wrap=True, overflow="ellipsis")
    snippet.append("   ")
    for number, part in enumerate(result.snippet.replace(HIT_END, HIT_START)
                                  .split(HIT_START)):
        snippet.append(_LONG_HEX.sub(lambda m: m.group()[:12] + "…", one_line(part)),
                       style="bold reverse" if number % 2 else "")
    snippet.truncate(MAX_SNIPPET_CELLS, overflow="ellipsis")
    both = Text.assemble(line, "\n", snippet)
    both.no_wrap, both.overflow = True, "ellipsis"  # two rows per hit, however long
    return Option(both, id=str(index))


class SearchScreen(ModalScreen[SearchResult | None]):
    DEFAULT_CSS = """
    SearchScreen { background: $background 60%; }
    SearchScreen #search-frame { width: 100%; height: 100%; background: $surface; }
    SearchScreen #search-results { height: 1fr; border: none; padding: 0; }
    SearchScreen #search-status { height: 1; color: $text-muted; }
    """
    BINDINGS = [Binding("escape", "close", "Close"),
                Binding("down", "to_results", "Results", show=False)]

    def __init__(self, review: ReviewClient, project: str | None = None) -> None:
        super().__init__()
        self.review = review
        self.project = project
        self.results: list[SearchResult] = []
        self._timer: Timer | None = None

    def compose(self) -> ComposeResult:
        with Vertical(id="search-frame"):
            yield Label("Search every session: briefs, handoffs, prompts, commands, failures",
                        id="heading")
            yield Field(placeholder="words to find", id="search-text")
            yield OptionList(id="search-results")
            yield Label("type to search · ↓ results · enter opens the timeline · esc close",
                        id="search-status")

    def on_mount(self) -> None:
        self.query_one("#search-text", Input).focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        if self._timer is not None:
            self._timer.stop()
        text = event.value
        self._timer = self.set_timer(PAUSE_S, lambda: self.run_search(text))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.run_search(event.value)
        self.action_to_results()

    @work(thread=True, exclusive=True, group="search", exit_on_error=False)
    def run_search(self, text: str) -> None:
        if not text.strip():
            self.app.call_from_thread(self.show_results, [], "type to search")
            return
        try:
            results = self.review.search(text, self.project)
        except SwitchboardError as exc:
            self.app.call_from_thread(self.show_results, [], exc.message)
            return
        self.app.call_from_thread(self.show_results, results,
                                  f"{len(results)} match(es)" if results else "no matches")

    def show_results(self, results: list[SearchResult], status: str) -> None:
        self.results = results
        options = self.query_one("#search-results", OptionList)
        options.clear_options()
        options.add_options([result_option(r, i) for i, r in enumerate(results)])
        if results:
            options.highlighted = 0
        self.query_one("#search-status", Label).update(  # a Text: no markup in errors
            Text(safe(status) + " · enter opens the timeline · esc close"))

    def action_to_results(self) -> None:
        options = self.query_one("#search-results", OptionList)
        if options.option_count:
            options.focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option.id is not None:
            self.dismiss(self.results[int(event.option.id)])

    def action_close(self) -> None:
        self.dismiss(None)
