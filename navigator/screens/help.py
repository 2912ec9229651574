"""The ? screen: every key with what it does, and the badge legend."""

from __future__ import annotations

from collections.abc import Iterable

from rich.cells import cell_len
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Label, Static

from navigator.widgets.badges import BadgeLegend

TMUX_HINTS = (
    "The agent runs in the pane to the right: tmux prefix + arrow (or a click) moves "
    "there, prefix + arrow back here.\n"
    "m (direct mode) hides this navigator so the agent has the whole window; "
    "tmux prefix + S brings it back.\n"
    "Detach with prefix + d: every agent keeps running; `switchboard` reattaches "
    "(`switchboard demo` for the demo)."
)


def key_help(bindings: Iterable[Binding]) -> list[tuple[str, str]]:
    """Every key of the app (its ``bindings``) and its panels, with what it does."""
    keys = [("enter", "focus the frame / enter the project or view / recovery: run, "
                      "go to or explain it / ack"),
            ("tab", "next panel"), ("space", "fold or unfold a tree node")]
    for binding in bindings:
        keys.append((binding.key_display or binding.key,
                     f"{binding.description}: {binding.tooltip}" if binding.tooltip
                     else binding.description))
    keys += [("ctrl+p", "command palette: every action, project and frame"),
             ("ctrl+q", "quit the navigator (agents keep running)")]
    return keys


#: The narrowest description column the two-column key table keeps; a narrower pane
#: (the 16-column navigator of a 40x12 terminal) puts each description under its key.
MIN_DESCRIPTION = 24
#: Columns the dialog's frame and padding take from the pane's width.
DIALOG_FRAME = 4


def key_table(keys: list[tuple[str, str]], width: int) -> Table | Text:
    """Keys beside their descriptions, or, in a pane too narrow for two readable
    columns, each key on its own line with its description wrapped under it."""
    key_cells = max((cell_len(key) for key, _ in keys), default=0)
    if width - DIALOG_FRAME - key_cells - 2 >= MIN_DESCRIPTION:
        table = Table.grid(padding=(0, 2))
        table.add_column(no_wrap=True)
        table.add_column()
        for key, description in keys:
            table.add_row(key, description)
        return table
    return Text("\n").join(Text.assemble((key, "bold"), "\n", description)
                           for key, description in keys)


class HelpScreen(ModalScreen[None]):
    """Built from the app's own bindings so it can never drift from the keys."""

    BINDINGS = [Binding("escape,q,question_mark", "dismiss_help", "Close help")]

    def __init__(self, keys: Iterable[tuple[str, str]]) -> None:
        super().__init__()
        self.keys = list(keys)

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="dialog", classes="dialog help"):
            yield Label("Keys", classes="heading")
            yield Static(key_table(self.keys, self.app.size.width), id="keys")
            yield Label("tmux", classes="heading")
            yield Static(TMUX_HINTS, id="tmux-keys")
            yield Label("Badges", classes="heading")
            yield BadgeLegend()
            yield Label("Every key is a request to the same engine the CLI uses.",
                        classes="hint")

    def action_dismiss_help(self) -> None:
        self.dismiss(None)
