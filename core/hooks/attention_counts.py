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


class RemoteCounts(NamedTuple):
    """Live agents of one online remote host (its cached, validated HostState), under
    the name this host's config gives it."""

    host: str
    needs_input: int = 0
    ready: int = 0
    working: int = 0


class AttentionCounts(NamedTuple):
    """Live agents on this host by what they ask of the person, and per remote host."""

    needs_input: int = 0
    ready: int = 0
    working: int = 0
    remote: tuple[RemoteCounts, ...] = ()

    def segment(self) -> str:
        """The status-line text (tmux style markup), empty when no agent is live; a
        remote host's agents follow under its name (``far: ! 1 input``)."""
        hosts = [r for r in self.remote if r.needs_input or r.ready or r.working]
        local = _parts(self.needs_input, self.ready, self.working)
        if not local and not hosts:
            return ""
        text = "sb " + " ".join(local) if local else "sb"
        for host in hosts:
            text += f" {host.host.replace('#', '##')}: " + " ".join(
                _parts(host.needs_input, host.ready, host.working))
        return text + " | "


def _parts(needs_input: int, ready: int, working: int) -> list[str]:
    parts = []
    if needs_input:
        parts.append(f"#[fg=yellow,bold]! {needs_input} input#[default]")
    if ready:
        parts.append(f"#[fg=green]✓ {ready} ready#[default]")
    if working:
        parts.append(f"~ {working} working")
    return parts


def read_counts(conn: sqlite3.Connection) -> AttentionCounts:
    """One SELECT over live sessions; a frame counts once (its current session)."""
    rows = conn.execute(
        "SELECT s.activity, COUNT(*) FROM frames f JOIN provider_sessions s"
        " ON s.session_key = f.current_session_key WHERE f.lifecycle_state = 'open'"
        " AND s.runtime_presence = 'live' GROUP BY s.activity").fetchall()
    by = {row[0]: row[1] for row in rows}
    return AttentionCounts(needs_input=by.get("needs_input", 0), ready=by.get("ready", 0),
                           working=by.get("working", 0), remote=read_remote_counts(conn))


# A frame counts once (its current session), as locally. The cached document was
# validated before it was stored (core.remote.follower, core.state.remotes), so its
# shape is known; an offline host's agents are not counted (their state is old).
_REMOTE_SQL = (
    "SELECT h.remote_name, s.value ->> 'activity', COUNT(*) FROM host_state_cache h,"
    " json_each(h.state_json, '$.frames') f, json_each(h.state_json, '$.sessions') s"
    " WHERE h.reachability = 'online' AND f.value ->> 'lifecycleState' = 'open'"
    " AND s.value ->> 'sessionKey' = f.value ->> 'currentSessionKey'"
    " AND s.value ->> 'runtimePresence' = 'live'"
    " GROUP BY h.remote_name, s.value ->> 'activity' ORDER BY h.remote_name")


def read_remote_counts(conn: sqlite3.Connection) -> tuple[RemoteCounts, ...]:
    """Per online remote host, its live agents by activity (one SELECT over the cache)."""
    import sqlite3

    try:
        rows = conn.execute(_REMOTE_SQL).fetchall()
    except sqlite3.OperationalError:
        return ()  # a registry without the cache table (or JSON support): local only
    by: dict[str, dict[str, int]] = {}
    for host, activity, count in rows:
        by.setdefault(host, {})[activity] = count
    return tuple(RemoteCounts(host, c.get("needs_input", 0), c.get("ready", 0),
                              c.get("working", 0)) for host, c in by.items())


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
