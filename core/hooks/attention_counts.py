"""The hook's share of attention: counts, the status segment and the detached spawns.

Kept apart from ``core.hooks.attention`` (clients, nudges, terminals) because the hook
path pays for every import on every turn end of every agent: NamedTuples and
plain strings here, no dataclasses or enums.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    import sqlite3

OPTION = "@sb_attention"
NEEDS_INPUT = "needs_input"
TURN_FINISHED = "turn_finished"


class AttentionCounts(NamedTuple):
    """Live agents on this host by what they ask of the person."""

    needs_input: int = 0
    ready: int = 0
    working: int = 0

    def segment(self) -> str:
        """The status-line text (tmux style markup), empty when no agent is live."""
        if not (self.needs_input or self.ready or self.working):
            return ""
        parts = []
        if self.needs_input:
            parts.append(f"#[fg=yellow,bold]! {self.needs_input} input#[default]")
        if self.ready:
            parts.append(f"#[fg=green]✓ {self.ready} ready#[default]")
        if self.working:
            parts.append(f"~ {self.working} working")
        return "sb " + " ".join(parts) + " | "


def read_counts(conn: sqlite3.Connection) -> AttentionCounts:
    """One SELECT over live sessions; a frame counts once (its current session)."""
    rows = conn.execute(
        "SELECT s.activity, COUNT(*) FROM frames f JOIN provider_sessions s"
        " ON s.session_key = f.current_session_key WHERE f.lifecycle_state = 'open'"
        " AND s.runtime_presence = 'live' GROUP BY s.activity").fetchall()
    by = {row[0]: row[1] for row in rows}
    return AttentionCounts(needs_input=by.get("needs_input", 0), ready=by.get("ready", 0),
                           working=by.get("working", 0))


def _detach(argv: list[str], env: Mapping[str, str] | None = None) -> None:
    from core.model.spawn import spawn_detached

    try:
        spawn_detached(argv, env)
    except OSError:
        pass  # attention is best effort; the badge in the view stays exact


def spawn_segment(socket: str, segment: str) -> None:
    """Set the status option with one detached tmux process (no Python start-up)."""
    _detach(["tmux", "-S", socket, "set-option", "-g", OPTION, segment])


def spawn_publish(env: Mapping[str, str], frame_id: str, kind: str | None) -> None:
    """Start the detached publisher (segment install, nudges) and return at once."""
    from core.model.spawn import fast_cli_argv

    # the hook's own fast start (python -S, os._exit): one publisher per turn end
    argv = [*fast_cli_argv(), "attention", "--publish", "--frame", frame_id]
    if kind is not None:
        argv += ["--event", kind]
    _detach(argv, env)
