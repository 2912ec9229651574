"""The i screen: the frame's timeline (prompts, tools, commands, lineage), what failed
grouped by signature, what changed in the checkout, and its handoff.

Given an already-loaded SessionDetail (the app reads it in a worker through
EngineClient), so opening the screen never touches SQLite or git on the event
loop. a / c / f / t show all, commands, failures or tool runs; enter on a
command opens its stored output in ``$PAGER`` (less) with the app suspended.
The session's token usage (issue 26) is read by a thread worker once the screen
is up, and shown (per turn and in total, with cost estimates) when there is any.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Label, OptionList, Static
from textual.widgets.option_list import Option

from core.evidence.store import (
    SessionDetail,
    TimelineEntry,
    TimelineFilter,
    TimelineKind,
    filter_timeline,
)
from core.model.text import shown
from navigator.widgets.diff_view import one_line

if TYPE_CHECKING:
    from collections.abc import Sequence

    from core.config.config import PriceConfig
    from core.review.changes import Conflict
    from core.usage.report import Turn

USAGE_TURNS_SHOWN = 8
"""The newest turns listed in the usage section (the total covers them all)."""

MARKS = {TimelineKind.PROMPT: "›", TimelineKind.TOOL: "·", TimelineKind.COMMAND: "$",
         TimelineKind.TASK: "◆", TimelineKind.HANDOFF: "↩"}
STATUS_STYLE = {"failed": "bold red", "error": "bold red", "passed": "green", "ok": "green",
                "running": "yellow", "cancelled": "dim", "unknown": "dim"}


def local_time(stamp: str | None) -> str:
    """``HH:MM:SS`` in local time for a stored UTC ISO stamp (the raw text if odd)."""
    if not stamp:
        return "-"
    try:
        return datetime.fromisoformat(stamp).astimezone().strftime("%H:%M:%S")
    except ValueError:
        return stamp


def took(duration_ms: int | None) -> str:
    if duration_ms is None:
        return ""
    return f"{duration_ms} ms" if duration_ms < 10_000 else f"{duration_ms / 1000:.1f} s"


def entry_line(entry: TimelineEntry, exit_code: int | None = None) -> Text:
    """One timeline line: time, mark, what, then status and duration."""
    line = Text(no_wrap=True, overflow="ellipsis")
    line.append(f"{local_time(entry.at)} ", style="dim")
    line.append(f"{MARKS[entry.kind]} ", style="bold")
    line.append(one_line(entry.text), style="red" if entry.failed else "")
    if entry.status:
        code = f" exit {exit_code}" if exit_code is not None else ""
        line.append(f"  {entry.status}{code}", style=STATUS_STYLE.get(entry.status, ""))
    if entry.duration_ms is not None:
        line.append(f"  {took(entry.duration_ms)}", style="dim")
    return line


class SessionDetailScreen(ModalScreen[None]):
    """Read-only evidence of the frame's current session."""

    DEFAULT_CSS = """
    SessionDetailScreen { align: center middle; background: $background 60%; }
    SessionDetailScreen .session-detail { height: 100%; }
    SessionDetailScreen #timeline { height: auto; max-height: 14; border: none; padding: 0; }
    SessionDetailScreen #filters { color: $text-muted; }
    SessionDetailScreen #usage { display: none; }
    SessionDetailScreen #usage.-shown { display: block; }
    """
    BINDINGS = [
        Binding("escape,q,i", "close", "Close"),
        Binding("a", "show('all')", "All"),
        Binding("c", "show('commands')", "Commands"),
        Binding("f", "show('failures')", "Failures"),
        Binding("t", "show('tools')", "Tools"),
        Binding("o", "open_output", "Output", show=False),
    ]

    def __init__(self, frame_title: str, detail: SessionDetail, *,
                 anchor: tuple[str, str | None] | None = None,
                 conflicts: tuple[Conflict, ...] = (),
                 prices: Sequence[PriceConfig] = ()) -> None:
        """``anchor`` (a time, and the command run when there is one): the timeline line
        to show first, for a search hit. ``conflicts``: other open frames of this
        repository that changed the same files. ``prices``: the config's price rows,
        for the usage section's cost estimates."""
        super().__init__()
        self.prices = tuple(prices)
        self.frame_title = frame_title
        self.detail = detail
        self.hit_anchor = anchor
        self.conflicts = conflicts
        self.showing = TimelineFilter.ALL
        self.shown: list[TimelineEntry] = list(detail.timeline)
        self._exit_codes = {c.command_run_id: c.exit_code for c in detail.commands}
        self._outputs = {c.command_run_id: tuple(a.path for a in c.artifacts)
                         for c in detail.commands}

    def compose(self) -> ComposeResult:
        detail = self.detail
        with VerticalScroll(id="dialog", classes="dialog session-detail"):
            yield Label(f"Session of “{self.frame_title}”", id="heading")
            if not detail.recorded:
                yield Label("No evidence recorded yet: hooks write here once the agent "
                            "works.", classes="hint")
                return
            yield Static(self._summary(), id="counts")
            yield Static("", id="usage")
            if self.conflicts:
                yield Static(self._conflicts(), id="conflicts")
            if detail.workspace is not None:
                yield Static(self._workspace(), id="changes")
            yield Label("Timeline", classes="heading")
            yield Static(self._filters(), id="filters")
            yield OptionList(*self._options(), id="timeline")
            yield Label("Failures by signature", classes="heading")
            yield Static(self._diagnostics(), id="diagnostics")
            if detail.handoff is not None:
                yield Label("Handoff", classes="heading")
                yield Static(self._handoff(), id="handoff")
            yield Label("Agent", classes="heading")
            yield Static(self._agents() if detail.agents else "none", id="agents")
            yield Label("Events", classes="heading")
            yield Static(self._events() if detail.events else "none", id="events")
            yield Static("enter: a command's output in $PAGER · a c f t: filter · esc: close",
                         classes="hint")

    def on_mount(self) -> None:
        """A search hit opens the timeline at its entry (the nearest one it still shows)."""
        if self.detail.recorded:
            self.run_worker(self._load_usage, thread=True, group="usage", exclusive=True)
        if self.hit_anchor is None or not self.detail.recorded or not self.shown:
            return
        index = anchor_index(self.shown, *self.hit_anchor)
        timeline = self.query_one("#timeline", OptionList)
        timeline.highlighted = index
        timeline.focus()
        timeline.scroll_to_highlight()

    def _load_usage(self) -> None:
        """Off the event loop: the session file's turn rows, with cost estimates."""
        from core.usage.report import session_turns

        root = Path(self.detail.path).parents[2]  # <home>/sessions/<key>/session.db
        turns = session_turns(root, self.detail.session_key, self.prices)
        if turns:
            self.app.call_from_thread(self._show_usage, turns)

    def _show_usage(self, turns: list[Turn]) -> None:
        widget = self.query_one("#usage", Static)
        widget.update(usage_text(turns))
        widget.add_class("-shown")

    # ------------------------------------------------------------------ sections

    def _conflicts(self) -> Text:
        text = Text()
        for index, conflict in enumerate(self.conflicts):
            if index:
                text.append("\n")
            text.append("⚠ overlaps ", style="bold yellow")
            text.append(f"“{shown(conflict.other_title)}”", style="bold")
            files = ", ".join(shown(f) for f in conflict.files[:6])
            more = f" +{len(conflict.files) - 6} more" if len(conflict.files) > 6 else ""
            text.append(f": {files}{more}")
        return text

    def _summary(self) -> Text:
        return Text(summary_line(self.detail))

    def _workspace(self) -> Text:
        workspace = self.detail.workspace
        assert workspace is not None
        text = Text(f"Checkout {Path(workspace.path).name}"
                    + (" (worktree)" if workspace.strategy == "worktree" else "")
                    + (f" on {workspace.branch_name}" if workspace.branch_name else ""))
        if workspace.base_ref:
            text.append(f" since {workspace.base_ref[:8]}: ")
            text.append(one_line(workspace.changes or "git could not say"), style="dim")
        else:
            text.append(": no starting commit (not a git checkout)", style="dim")
        return text

    def _filters(self) -> Text:
        text = Text()
        for key, which in (("a", TimelineFilter.ALL), ("c", TimelineFilter.COMMANDS),
                           ("f", TimelineFilter.FAILURES), ("t", TimelineFilter.TOOLS)):
            style = "bold reverse" if which is self.showing else ""
            text.append(f" {key} {which.value} ", style=style)
        return text

    def _options(self) -> list[Option]:
        if not self.shown:
            return [Option(Text(f"nothing to show ({self.showing.value})", style="dim"),
                           disabled=True)]
        return [Option(entry_line(e, self._exit_codes.get(e.command_run_id or "")))
                for e in self.shown]

    def _diagnostics(self) -> Text | str:
        if not self.detail.diagnostics:
            return "none recognised"
        text = Text()
        for index, group in enumerate(self.detail.diagnostics):
            if index:
                text.append("\n")
            where = " ".join(x for x in (group.file, group.code) if x)
            text.append("✓ " if group.fixed else "✗ ", style="green" if group.fixed else "red")
            text.append(f"{group.toolchain} {where}: ", style="bold")
            text.append(one_line(group.message))
            text.append(f"  ×{group.count} in {group.runs} run(s)"
                        + (", fixed" if group.fixed else ""), style="dim")
        return text

    def _handoff(self) -> Text:
        handoff = self.detail.handoff
        assert handoff is not None
        text = Text(handoff.summary)
        if handoff.next_action:
            text.append(f"\nnext: {handoff.next_action}", style="dim")
        text.append(f"\n{handoff.evidence_refs} evidence refs · {local_time(handoff.at)}",
                    style="dim")
        return text

    def _agents(self) -> Table:
        agents = Table.grid(padding=(0, 2))
        for column in range(5):  # only the model column gives way when narrow
            agents.add_column(no_wrap=column != 3)
        for agent in self.detail.agents:
            model = Text(agent.model_id or "-", no_wrap=True, overflow="ellipsis")
            agents.add_row(local_time(agent.started_at), agent.type, agent.status, model,
                           f"seen {local_time(agent.last_heartbeat_at)}")
        return agents

    def _events(self) -> Table:
        events = Table.grid(padding=(0, 2))
        for _ in range(3):
            events.add_column(no_wrap=True)
        for event in self.detail.events:
            events.add_row(local_time(event.timestamp), event.source or event.type,
                           event.tool_name or event.notification_type or "")
        return events

    # ------------------------------------------------------------------ actions

    def action_show(self, which: str) -> None:
        """Filter the timeline (keys a, c, f, t)."""
        if not self.detail.recorded:
            return
        self.showing = TimelineFilter(which)
        self.shown = filter_timeline(self.detail.timeline, self.showing)
        timeline = self.query_one("#timeline", OptionList)
        timeline.clear_options()
        timeline.add_options(self._options())
        self.query_one("#filters", Static).update(self._filters())

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self._open(event.option_index)

    def action_open_output(self) -> None:
        if not self.detail.recorded:
            return
        highlighted = self.query_one("#timeline", OptionList).highlighted
        if highlighted is not None:
            self._open(highlighted)

    def _open(self, index: int) -> None:
        if not 0 <= index < len(self.shown):
            return
        entry = self.shown[index]
        paths = [p for p in self._outputs.get(entry.command_run_id or "", ()) if Path(p).exists()]
        if not paths:
            self.notify("No stored output for this line (only commands with output have "
                        "one).", title="Output", severity="warning")
            return
        open_in_pager(self, paths)

    def action_close(self) -> None:
        self.dismiss(None)


def usage_text(turns: Sequence[Turn]) -> Text:
    """The usage section: the total first, then the newest turns, one line each."""
    from core.usage.report import tokens_short, total, usd_short

    summed = total(turns)
    used = summed.tokens
    dates = sorted({t.price_taken_on for t in turns if t.price_taken_on})
    text = Text()
    text.append("Usage ", style="bold")
    text.append(f"{summed.turns} turns · in {tokens_short(used.input)} out "
                f"{tokens_short(used.output)} · cache {tokens_short(used.cache_read)}/"
                f"{tokens_short(used.cache_write)} · {usd_short(summed.usd, summed.unpriced)}")
    text.append(f" (estimate, prices of {dates[-1]})" if dates else " (no price for the model)",
                style="dim")
    for turn in turns[-USAGE_TURNS_SHOWN:]:
        line = Text(no_wrap=True, overflow="ellipsis")
        line.append(f"{local_time(turn.ended_at)} ", style="dim")
        if turn.tokens.total or turn.limit_kind is None:
            line.append(shown(turn.model or "model unknown"))
            line.append(f"  in {tokens_short(turn.tokens.input)} out "
                        f"{tokens_short(turn.tokens.output)} cache "
                        f"{tokens_short(turn.tokens.cache_read)}/"
                        f"{tokens_short(turn.tokens.cache_write)} {usd_short(turn.usd)}  ")
        if turn.limit_kind is not None:
            resets = f", resets {local_time(turn.limit_reset_at)}" if turn.limit_reset_at \
                else ", reset time not stated"
            line.append(f"⏸ limited ({turn.limit_kind.value}{resets})", style="bold yellow")
        text.append("\n")
        text.append_text(line)
    return text


def anchor_index(entries: list[TimelineEntry], at: str, command_run_id: str | None) -> int:
    """The line for a search hit: its command run, else the first line at or after its
    time, else the last line."""
    if command_run_id is not None:
        for index, entry in enumerate(entries):
            if entry.command_run_id == command_run_id:
                return index
    for index, entry in enumerate(entries):
        if entry.at >= at:
            return index
    return len(entries) - 1


def pager_argv(paths: list[str], env: dict[str, str] | None = None) -> list[str]:
    """``$PAGER`` (with its own arguments) or ``less -R``, then the files."""
    pager = (env if env is not None else os.environ).get("PAGER", "").strip()
    return [*(shlex.split(pager) if pager else ["less", "-R"]), *paths]


def open_in_pager(screen: ModalScreen, paths: list[str]) -> None:
    """Hand the terminal to the pager and take it back (the files are the session's own)."""
    from textual.app import SuspendNotSupported

    try:
        with screen.app.suspend():
            subprocess.run(pager_argv(paths), check=False)
    except SuspendNotSupported:
        screen.notify(f"This terminal cannot hand over to a pager; the output is at {paths[0]}",
                      title="Output", severity="warning", markup=False)
    except OSError as exc:
        screen.notify(f"Could not start the pager ({exc}); set $PAGER. The output is at "
                      f"{paths[0]}", title="Output", severity="error", markup=False)


def summary_line(detail: SessionDetail) -> str:
    """``i``'s one-line counts: events, commands, tool runs and running subagents."""
    counts, commands = detail.counts, detail.commands
    failed = sum(1 for c in commands if c.outcome == "failed")
    line = (f"{counts.events} events · {len(commands)} commands ({failed} failed) · "
            f"{counts.tool_runs} tool runs ({counts.error} error)")
    if counts.subagents:
        plural = "" if counts.subagents == 1 else "s"
        line += f" · {counts.subagents} subagent{plural} running"
    return line
