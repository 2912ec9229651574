"""Session evidence, read side: the model behind `session show` and the i screen.

The hook writes evidence straight through ``storage.session_db`` (after the
registry commit, so a refused file never undoes activity tracking); this
module only reads. It returns frozen dataclasses for the CLI, the
EngineClient and the navigator, opens the file read-only and never creates
one. No Textual here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

from core.errors import NotFound

if TYPE_CHECKING:  # the navigator imports this module: no sqlite3 at import time
    import sqlite3

    from core.home import Home


# --------------------------------------------------------------------------- read model


@dataclass(frozen=True)
class EventRow:
    event_id: str
    timestamp: str
    type: str
    source: str | None
    tool_name: str | None
    turn_id: str | None
    notification_type: str | None
    activity: str | None


@dataclass(frozen=True)
class ToolRunRow:
    tool_run_id: str
    tool_name: str
    status: str
    started_at: str
    completed_at: str | None
    duration_ms: int | None


@dataclass(frozen=True)
class AgentRow:
    """The provider session's agent: its lifecycle as the hooks saw it."""

    agent_id: str
    type: str
    status: str
    model_id: str | None
    started_at: str
    completed_at: str | None
    last_heartbeat_at: str | None


@dataclass(frozen=True)
class EvidenceCounts:
    events: int = 0
    tool_runs: int = 0
    running: int = 0
    ok: int = 0
    error: int = 0
    cancelled: int = 0


@dataclass(frozen=True)
class SessionDetail:
    """The newest ``limit`` events and tool runs of one session, newest first,
    and its agents (one per provider session; none in a file written before
    agents were recorded).

    ``recorded`` is False when no hook has written evidence yet (no file).
    """

    session_key: str
    recorded: bool
    path: str
    provider: str | None = None
    exited_at: str | None = None
    agents: tuple[AgentRow, ...] = ()
    events: tuple[EventRow, ...] = ()
    tool_runs: tuple[ToolRunRow, ...] = ()
    counts: EvidenceCounts = EvidenceCounts()


def _event_row(row: sqlite3.Row) -> EventRow:
    try:
        payload = json.loads(row["payload_json"])
    except ValueError:
        payload = {}
    payload = payload if isinstance(payload, dict) else {}

    def text(key: str) -> str | None:
        value = payload.get(key)
        return value if isinstance(value, str) else None

    return EventRow(row["id"], row["timestamp"], row["type"], row["source_id"],
                    text("tool_name"), text("turn_id"), text("notification_type"),
                    text("activity"))


def session_detail(home: Home, session_key: str, limit: int = 50) -> SessionDetail:
    """Read one session's evidence; refuses (SessionDbRefused) a foreign or newer file."""
    from storage import session_db

    path = session_db.session_db_path(home.root, session_key)
    if not path.exists():
        return SessionDetail(session_key, False, str(path))
    limit = max(1, int(limit))
    conn = session_db.open_session_db_readonly(path)
    try:
        session = conn.execute("SELECT model_provider_id, exited_at FROM sessions"
                               " WHERE id = ?", (session_key,)).fetchone()
        agents = tuple(AgentRow(*r) for r in conn.execute(
            "SELECT id, type, status, model_id, started_at, completed_at, last_heartbeat_at"
            " FROM agents WHERE session_id = ? ORDER BY started_at DESC, rowid DESC LIMIT ?",
            (session_key, limit)))
        events = tuple(_event_row(r) for r in conn.execute(
            "SELECT id, timestamp, type, source_id, payload_json FROM events"
            " WHERE session_id = ? ORDER BY timestamp DESC, rowid DESC LIMIT ?",
            (session_key, limit)))
        runs = tuple(ToolRunRow(r["id"], r["tool_name"], r["status"], r["started_at"],
                                r["completed_at"], r["duration_ms"]) for r in conn.execute(
            "SELECT id, tool_name, status, started_at, completed_at, duration_ms FROM tool_runs"
            " WHERE session_id = ? ORDER BY started_at DESC, rowid DESC LIMIT ?",
            (session_key, limit)))
        by_status = dict(conn.execute(
            "SELECT status, count(*) FROM tool_runs WHERE session_id = ? GROUP BY status",
            (session_key,)).fetchall())
        total_events = conn.execute("SELECT count(*) FROM events WHERE session_id = ?",
                                    (session_key,)).fetchone()[0]
    finally:
        conn.close()
    counts = EvidenceCounts(events=total_events, tool_runs=sum(by_status.values()),
                            running=by_status.get("running", 0), ok=by_status.get("ok", 0),
                            error=by_status.get("error", 0),
                            cancelled=by_status.get("cancelled", 0))
    return SessionDetail(session_key, True, str(path),
                         provider=session["model_provider_id"] if session else None,
                         exited_at=session["exited_at"] if session else None,
                         agents=agents, events=events, tool_runs=runs, counts=counts)


def session_key_for_frame(conn: sqlite3.Connection, frame_id: str) -> str:
    """The frame's current provider session, from the registry."""
    row = conn.execute("SELECT title, current_session_key FROM frames WHERE frame_id = ?",
                       (frame_id,)).fetchone()
    if row is None:
        raise NotFound(f"no frame {frame_id!r}; `switchboard frame list` shows the frames")
    if row["current_session_key"] is None:
        raise NotFound(f"“{row['title']}” has no agent session yet, so no evidence; start "
                       "one with `switchboard frame start` (n in the navigator)",
                       code="no_session")
    return row["current_session_key"]
