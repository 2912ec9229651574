"""The i screen: what a frame's agent session recorded (agent, tool runs, hook events).

Given an already-loaded SessionDetail (the app reads it in a worker through
EngineClient), so opening the screen never touches SQLite on the event loop.
"""

from __future__ import annotations

from datetime import datetime

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Label, Static

from core.evidence import SessionDetail


def local_time(stamp: str | None) -> str:
    """``HH:MM:SS`` in local time for a stored UTC ISO stamp (the raw text if odd)."""
    if not stamp:
        return "-"
    try:
        return datetime.fromisoformat(stamp).astimezone().strftime("%H:%M:%S")
    except ValueError:
        return stamp


class SessionDetailScreen(ModalScreen[None]):
    """Read-only: the agent's lifecycle, recent tool runs with status and duration,
    then recent events."""

    BINDINGS = [Binding("escape,q,i", "close", "Close")]

    def __init__(self, frame_title: str, detail: SessionDetail) -> None:
        super().__init__()
        self.frame_title = frame_title
        self.detail = detail

    def compose(self) -> ComposeResult:
        detail = self.detail
        with VerticalScroll(id="dialog", classes="dialog session-detail"):
            yield Label(f"Session of “{self.frame_title}”", id="heading")
            if not detail.recorded:
                yield Label("No evidence recorded yet: hooks write here once the agent "
                            "works.", classes="hint")
                return
            counts = detail.counts
            # Static, not Label: these lines wrap in a narrow dialog instead of being cut.
            yield Static(f"{counts.events} events · {counts.tool_runs} tool runs "
                         f"({counts.ok} ok, {counts.error} error, {counts.running} running, "
                         f"{counts.cancelled} cancelled)", id="counts")
            yield Label("Agent", classes="heading")
            agents = Table.grid(padding=(0, 2))
            for column in range(5):  # only the model column gives way when narrow
                agents.add_column(no_wrap=column != 3)
            for agent in detail.agents:
                model = Text(agent.model_id or "-", no_wrap=True, overflow="ellipsis")
                agents.add_row(local_time(agent.started_at), agent.type, agent.status, model,
                               f"seen {local_time(agent.last_heartbeat_at)}")
            yield Static(agents if detail.agents else "none", id="agents")
            yield Label("Tool runs", classes="heading")
            runs = Table.grid(padding=(0, 2))
            for _ in range(4):
                runs.add_column(no_wrap=True)
            for run in detail.tool_runs:
                took = f"{run.duration_ms} ms" if run.duration_ms is not None else "-"
                runs.add_row(local_time(run.started_at), run.tool_name, run.status, took)
            yield Static(runs if detail.tool_runs else "none", id="tool-runs")
            yield Label("Events", classes="heading")
            events = Table.grid(padding=(0, 2))
            for _ in range(3):
                events.add_column(no_wrap=True)
            for event in detail.events:
                events.add_row(local_time(event.timestamp), event.source or event.type,
                               event.tool_name or event.notification_type or "")
            yield Static(events if detail.events else "none", id="events")
            yield Static("Only names, ids and states are kept; never prompts or tool input.",
                         classes="hint")

    def action_close(self) -> None:
        self.dismiss(None)
