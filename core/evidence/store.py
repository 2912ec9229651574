"""Session evidence, read side: the model behind `session show` and the i screen.

The hook writes evidence straight through ``storage.session_db`` (after the
registry commit, so a refused file never undoes activity tracking); this
module only reads. It returns frozen dataclasses for the CLI, the
EngineClient and the navigator, opens the file read-only and never creates
one. No Textual here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING

from core.model.errors import NotFound

if TYPE_CHECKING:  # the navigator imports this module: no sqlite3 at import time
    import sqlite3

    from core.config.home import Home


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
    subagents: int = 0
    """Subagents running now (SubagentStart without its SubagentStop)."""


class TimelineKind(StrEnum):
    """What a timeline line is about."""

    PROMPT = "prompt"
    TOOL = "tool"
    COMMAND = "command"
    TASK = "task"
    HANDOFF = "handoff"


class TimelineFilter(StrEnum):
    """The i screen's views of one timeline (keys a, c, f, t)."""

    ALL = "all"
    COMMANDS = "commands"
    FAILURES = "failures"
    TOOLS = "tools"


@dataclass(frozen=True)
class ArtifactRow:
    """One stored output stream of a command (bounded; ``truncated`` says it was cut)."""

    artifact_id: str
    stream: str
    path: str
    size_bytes: int | None
    truncated: bool


@dataclass(frozen=True)
class CommandRow:
    """A shell command as the hooks saw it. ``exit_code`` is None when the provider
    stated none; ``outcome`` is passed / failed / unknown / running."""

    command_run_id: str
    command: str
    cwd: str
    started_at: str
    completed_at: str | None
    duration_ms: int | None
    exit_code: int | None
    outcome: str
    diagnostics: int
    artifacts: tuple[ArtifactRow, ...] = ()


@dataclass(frozen=True)
class DiagnosticGroup:
    """Every diagnostic with one semantic signature: the same failure, however often."""

    signature: str
    toolchain: str | None
    severity: str | None
    file: str | None
    code: str | None
    message: str
    count: int
    runs: int
    last_at: str
    fixed: bool


@dataclass(frozen=True)
class HandoffRow:
    at: str
    summary: str
    next_action: str
    evidence_refs: int


@dataclass(frozen=True)
class WorkspaceRow:
    """The checkout of this attempt, the commit it started from and what changed since
    (``git diff --stat`` against ``base_ref``, read when the detail is loaded)."""

    path: str
    strategy: str
    base_ref: str | None
    branch_name: str | None
    changes: str | None


@dataclass(frozen=True)
class TimelineEntry:
    at: str
    kind: TimelineKind
    text: str
    status: str | None = None
    duration_ms: int | None = None
    failed: bool = False
    command_run_id: str | None = None
    artifact_path: str | None = None


@dataclass(frozen=True)
class SessionDetail:
    """The newest ``limit`` events and tool runs of one session, newest first,
    and its agents (one per provider session; none in a file written before
    agents were recorded); the frame's timeline (oldest first), its commands,
    diagnostics grouped by signature, its checkout and its handoff.

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
    timeline: tuple[TimelineEntry, ...] = ()
    commands: tuple[CommandRow, ...] = ()
    diagnostics: tuple[DiagnosticGroup, ...] = ()
    workspace: WorkspaceRow | None = None
    handoff: HandoffRow | None = None


def filter_timeline(entries: tuple[TimelineEntry, ...] | list[TimelineEntry],
                    which: TimelineFilter) -> list[TimelineEntry]:
    """The entries one filter shows (failures: failed commands and tool runs)."""
    if which is TimelineFilter.COMMANDS:
        return [e for e in entries if e.kind is TimelineKind.COMMAND]
    if which is TimelineFilter.FAILURES:
        return [e for e in entries if e.failed]
    if which is TimelineFilter.TOOLS:
        return [e for e in entries if e.kind in (TimelineKind.TOOL, TimelineKind.COMMAND)]
    return list(entries)


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
    """Read one session's evidence; refuses (SessionDbRefused) a foreign or newer file.

    The timeline, commands and failures also cover the frame's earlier sessions (named
    by this session's attempt), so a frame that was restarted keeps its history.
    """
    from storage import session_db, session_lineage

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
        subagents = session_db.running_subagents(conn, session_key)
        commands = _commands(conn, session_key, limit)
        timeline = _timeline(conn, session_key, commands, limit)
        groups = _diagnostic_groups(conn, session_key)
        earlier = session_lineage.earlier_sessions(conn, session_key)
        workspace = conn.execute(
            "SELECT path, strategy, base_ref, branch_name FROM workspaces WHERE session_id = ?"
            " ORDER BY created_at DESC, rowid DESC LIMIT 1", (session_key,)).fetchone()
        handoff = _handoff(conn, session_key)
    finally:
        conn.close()
    if earlier:
        timeline, commands, groups = _with_earlier(home, earlier, limit, timeline, commands,
                                                   groups)
    counts = EvidenceCounts(events=total_events, tool_runs=sum(by_status.values()),
                            running=by_status.get("running", 0), ok=by_status.get("ok", 0),
                            error=by_status.get("error", 0),
                            cancelled=by_status.get("cancelled", 0), subagents=subagents)
    return SessionDetail(session_key, True, str(path),
                         provider=session["model_provider_id"] if session else None,
                         exited_at=session["exited_at"] if session else None,
                         agents=agents, events=events, tool_runs=runs, counts=counts,
                         timeline=timeline, commands=commands, diagnostics=groups,
                         workspace=_workspace(workspace) if workspace else None,
                         handoff=handoff)


# --------------------------------------------------------------------------- readers

MAX_CHANGE_LINES = 40
GIT_TIMEOUT_S = 5.0


def _meta(text: str | None) -> dict:
    try:
        value = json.loads(text or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def first_line(text: str, width: int = 200) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= width else line[:width - 1] + "…"


def _commands(conn: sqlite3.Connection, key: str, limit: int) -> tuple[CommandRow, ...]:
    rows = conn.execute(
        "SELECT c.*, (SELECT count(*) FROM diagnostics d WHERE d.command_run_id = c.id) AS n"
        " FROM command_runs c WHERE c.session_id = ? ORDER BY c.started_at DESC, c.rowid DESC"
        " LIMIT ?", (key, limit)).fetchall()
    artifacts: dict[str, list[ArtifactRow]] = {}
    ids = [r["id"] for r in rows]
    if ids:
        marks = ", ".join("?" for _ in ids)
        for a in conn.execute("SELECT id, command_run_id, original_name, path, size_bytes,"
                              f" metadata_json FROM artifacts WHERE command_run_id IN ({marks})"
                              " ORDER BY rowid", ids):
            artifacts.setdefault(a["command_run_id"], []).append(ArtifactRow(
                a["id"], a["original_name"] or "output", a["path"], a["size_bytes"],
                bool(_meta(a["metadata_json"]).get("truncated"))))
    result = []
    for r in reversed(rows):  # oldest first
        outcome = _meta(r["metadata_json"]).get("outcome") or \
            ("running" if r["completed_at"] is None else "unknown")
        result.append(CommandRow(r["id"], r["command"], r["cwd"], r["started_at"],
                                 r["completed_at"], r["duration_ms"], r["exit_code"],
                                 str(outcome), r["n"], tuple(artifacts.get(r["id"], ()))))
    return tuple(result)


def _engine_event_text(conn: sqlite3.Connection, kind: str, payload: dict,
                       task_id: str | None) -> str:
    title = None
    if task_id:
        row = conn.execute("SELECT title FROM tasks WHERE id = ?", (task_id,)).fetchone()
        title = row[0] if row else None
    named = f" “{title}”" if title else ""
    if kind == "task_pushed":
        return f"pushed task{named}"
    if kind == "attempt_started":
        base = payload.get("base_ref")
        at = f" at {str(base)[:8]}" if base else ""
        return f"attempt {payload.get('attempt_index', 1)} started{at}"
    if kind == "task_completed":
        return f"task{named} completed, returning to its parent"
    if kind == "handoff_claimed":
        return "handoff claimed by the parent" if payload.get("summary_id") \
            else f"task{named} returned its handoff"
    return kind


def _timeline(conn: sqlite3.Connection, key: str, commands: tuple[CommandRow, ...],
              limit: int) -> tuple[TimelineEntry, ...]:
    entries: list[TimelineEntry] = []
    for row in conn.execute("SELECT created_at, content_json FROM messages WHERE session_id = ?"
                            " AND role = 'user' ORDER BY created_at DESC LIMIT ?", (key, limit)):
        try:
            blocks = json.loads(row["content_json"])
            text = " ".join(b.get("text", "") for b in blocks if isinstance(b, dict))
        except (ValueError, AttributeError, TypeError):
            text = ""
        entries.append(TimelineEntry(row["created_at"], TimelineKind.PROMPT,
                                     first_line(text) or "(prompt)"))
    for row in conn.execute(
            "SELECT t.tool_name, t.status, t.started_at, t.duration_ms FROM tool_runs t"
            " WHERE t.session_id = ? AND NOT EXISTS (SELECT 1 FROM command_runs c"
            " WHERE c.tool_run_id = t.id) ORDER BY t.started_at DESC LIMIT ?", (key, limit)):
        entries.append(TimelineEntry(row["started_at"], TimelineKind.TOOL, row["tool_name"],
                                     row["status"], row["duration_ms"],
                                     failed=row["status"] == "error"))
    for command in commands:
        artifact = command.artifacts[0].path if command.artifacts else None
        entries.append(TimelineEntry(command.started_at, TimelineKind.COMMAND,
                                     first_line(command.command), command.outcome,
                                     command.duration_ms, failed=command.outcome == "failed",
                                     command_run_id=command.command_run_id,
                                     artifact_path=artifact))
    for row in conn.execute("SELECT timestamp, type, task_id, payload_json FROM events"
                            " WHERE session_id = ? AND source_kind = 'engine'"
                            " ORDER BY timestamp DESC LIMIT ?", (key, limit)):
        kind = TimelineKind.HANDOFF if row["type"] == "handoff_claimed" else TimelineKind.TASK
        entries.append(TimelineEntry(row["timestamp"], kind, _engine_event_text(
            conn, row["type"], _meta(row["payload_json"]), row["task_id"])))
    entries.sort(key=lambda e: e.at)
    return tuple(entries[-limit:])


def _diagnostic_groups(conn: sqlite3.Connection, key: str) -> tuple[DiagnosticGroup, ...]:
    rows = conn.execute(
        "SELECT d.semantic_signature AS sig, count(*) AS n,"
        " count(DISTINCT d.command_run_id) AS runs, max(d.created_at) AS last_at,"
        " min(d.rowid) AS first FROM diagnostics d WHERE d.session_id = ?"
        " GROUP BY d.semantic_signature ORDER BY last_at DESC LIMIT 50", (key,)).fetchall()
    groups = []
    for row in rows:
        d = conn.execute("SELECT * FROM diagnostics WHERE rowid = ?", (row["first"],)).fetchone()
        fixed = conn.execute(
            "SELECT EXISTS (SELECT 1 FROM command_runs p JOIN command_runs c ON"
            " p.command = c.command AND p.started_at > c.started_at"
            " WHERE c.id = (SELECT command_run_id FROM diagnostics WHERE semantic_signature = ?"
            "   AND session_id = ? ORDER BY created_at DESC, rowid DESC LIMIT 1)"
            " AND json_extract(p.metadata_json, '$.outcome') = 'passed')",
            (row["sig"], key)).fetchone()[0]
        groups.append(DiagnosticGroup(row["sig"], d["toolchain"], d["severity"], d["file"],
                                      d["code"], d["message"], row["n"], row["runs"],
                                      row["last_at"], bool(fixed)))
    return tuple(groups)


def _with_earlier(home: Home, keys: list[str], limit: int,
                  timeline: tuple[TimelineEntry, ...], commands: tuple[CommandRow, ...],
                  groups: tuple[DiagnosticGroup, ...]
                  ) -> tuple[tuple[TimelineEntry, ...], tuple[CommandRow, ...],
                             tuple[DiagnosticGroup, ...]]:
    """Merge the frame's earlier sessions in (a missing or refused file is skipped)."""
    from storage import session_db

    all_entries, all_commands = list(timeline), list(commands)
    merged = {g.signature: g for g in groups}
    for key in keys:
        with session_db.reading(home.root, key) as conn:
            if conn is None:
                continue
            earlier_commands = _commands(conn, key, limit)
            all_commands += earlier_commands
            all_entries += _timeline(conn, key, earlier_commands, limit)
            for group in _diagnostic_groups(conn, key):
                seen = merged.get(group.signature)
                merged[group.signature] = group if seen is None else replace(
                    seen, count=seen.count + group.count, runs=seen.runs + group.runs,
                    last_at=max(seen.last_at, group.last_at), fixed=seen.fixed or group.fixed)
    all_entries.sort(key=lambda e: e.at)
    all_commands.sort(key=lambda c: c.started_at)
    ordered = sorted(merged.values(), key=lambda g: g.last_at, reverse=True)
    return tuple(all_entries[-limit:]), tuple(all_commands[-limit:]), tuple(ordered)


def _handoff(conn: sqlite3.Connection, key: str) -> HandoffRow | None:
    row = conn.execute("SELECT created_at, content_json FROM summaries WHERE session_id = ?"
                       " AND json_extract(metadata_json, '$.kind') = 'handoff'"
                       " ORDER BY created_at DESC LIMIT 1", (key,)).fetchone()
    if row is None:
        return None
    content = _meta(row["content_json"])
    refs = conn.execute("SELECT count(*) FROM evidence_refs WHERE session_id = ?",
                        (key,)).fetchone()[0]
    return HandoffRow(row["created_at"], str(content.get("summary", "")),
                      str(content.get("next_action", "")), refs)


def _workspace(row: sqlite3.Row) -> WorkspaceRow:
    return WorkspaceRow(row["path"], row["strategy"], row["base_ref"], row["branch_name"],
                        changes_since(row["path"], row["base_ref"]))


def changes_since(path: str, base_ref: str | None) -> str | None:
    """``git diff --stat BASE`` in the checkout (committed and uncommitted changes since the
    attempt started); None when there is no base or no repository to ask."""
    import subprocess

    from core.model.git import run_git

    if not base_ref or not Path(path).is_dir():
        return None
    try:
        done = run_git(path, "diff", "--stat", "--no-color", base_ref, timeout=GIT_TIMEOUT_S,
                       text=True)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    lines = done.stdout.rstrip().splitlines()
    if not lines:
        return "no changes"
    if len(lines) > MAX_CHANGE_LINES:
        lines = lines[:MAX_CHANGE_LINES - 1] + [f" … {len(lines) - MAX_CHANGE_LINES} more"] \
            + lines[-1:]
    return "\n".join(lines)


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
