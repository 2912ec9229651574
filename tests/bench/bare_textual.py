"""A bare Textual app: the memory floor a navigator's RSS is printed against.

``bench_scale`` runs it in a pane of its tmux server beside the navigators and
reads its RSS once it has painted: what any Textual UI costs on this machine
before a single Switchboard module is imported.
"""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.widgets import Static


class Bare(App[None]):
    def compose(self) -> ComposeResult:
        yield Static("bare")


if __name__ == "__main__":
    Bare().run()
