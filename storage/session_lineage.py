"""Task lineage in a session's evidence file: tasks, attempts, workspaces, handoffs.

A frame is a task (``tasks.id`` is the frame id); each provider session of
the frame is one attempt, recorded in that session's own file together with
the checkout it worked in (``workspaces``, with the commit it started from in
``base_ref``). A push records the child task in the pushing session's file; a
completion marks the task done in the child's file; a claimed handoff becomes
a ``summaries`` row whose ``evidence_refs`` name the commands, artifacts and
diagnostics of that session. Every writer records its event and its domain
rows in one transaction (spec transaction rule) and is idempotent: ids are
derived from what they record, so a second call changes nothing.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from dataclasses import dataclass

from storage.session_db import EVENT_VERSION, _ensure_session, _transaction, iso, new_id

SOURCE_ENGINE = "engine"  # EventSourceKind.ENGINE
TASK_EXECUTE = "execute"
MAX_REFERENCED_RUNS = 50
MAX_REFERENCED_DIAGNOSTICS = 200
#: event types written here
ATTEMPT_STARTED, TASK_PUSHED = "attempt_started", "task_pushed"
TASK_COMPLETED, HANDOFF_CLAIMED = "task_completed", "handoff_claimed"


@dataclass(frozen=True)
class TaskFacts:
    """A pushed task as the registry knows it: never the brief's text, only its hash."""

    task_id: str  # the child frame id
    title: str
    brief_sha256: str | None
    transition_id: str | None
    parent_frame_id: str | None

    def spec_json(self) -> str:
        return _json({"title": self.title, "brief_sha256": self.brief_sha256,
                      "transition_id": self.transition_id,
                      "parent_frame_id": self.parent_frame_id})


@dataclass(frozen=True)
class WorkspaceFacts:
    path: str
    strategy: str  # WorkspaceStrategy
    base_ref: str | None
    branch_name: str | None


@dataclass(frozen=True)
class SessionFacts:
    session_key: str
    provider: str
    project_id: str
    project_root: str
    frame_id: str


def derived_id(*parts: str) -> str:
    """A UUID-shaped id that is the same for the same facts (idempotent writers)."""
    h = hashlib.sha256("\x1f".join(parts).encode()).hexdigest()
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-8{h[17:20]}-{h[20:32]}"


def _json(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _event(conn: sqlite3.Connection, session: SessionFacts, kind: str, at: str,
           task_id: str | None, payload: dict[str, object]) -> None:
    route = {"session": session.session_key, "frame": session.frame_id}
    conn.execute(
        "INSERT INTO events (id, session_id, type, version, timestamp, source_kind, source_id,"
        " agent_type, task_id, agent_id, route_json, route_text, payload_json)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (new_id(), session.session_key, kind, EVENT_VERSION, at, SOURCE_ENGINE, kind,
         session.provider, task_id, session.session_key, _json(route),
         f"session/{session.session_key}/frame/{session.frame_id}", _json(payload)))


def earlier_sessions(conn: sqlite3.Connection, session_key: str) -> list[str]:
    """The frame's sessions before this one, as its attempt recorded them."""
    row = conn.execute("SELECT json_extract(payload_json, '$.earlier_sessions') FROM events"
                       " WHERE session_id = ? AND type = ? ORDER BY timestamp LIMIT 1",
                       (session_key, ATTEMPT_STARTED)).fetchone()
    try:
        keys = json.loads(row[0]) if row and row[0] else []
    except ValueError:
        return []
    return [k for k in keys if isinstance(k, str)]


def has_attempt(conn: sqlite3.Connection, session_key: str) -> bool:
    """Whether this session's lineage was recorded (its attempt_started event)."""
    return conn.execute("SELECT 1 FROM events WHERE session_id = ? AND type = ? LIMIT 1",
                        (session_key, ATTEMPT_STARTED)).fetchone() is not None


def record_attempt(conn: sqlite3.Connection, session: SessionFacts, task: TaskFacts | None,
                   attempt_index: int, workspace: WorkspaceFacts | None, now_ms: int, *,
                   earlier_sessions: list[str] | tuple[str, ...] = ()) -> None:
    """The session's start as an attempt of its frame's task, and its checkout.

    ``earlier_sessions`` (the frame's sessions before this one, from the registry) let
    a reader of this file show the whole frame's timeline without the registry."""
    at = iso(now_ms)
    key = session.session_key
    workspace_id = derived_id("workspace", session.frame_id, key) if workspace else None
    with _transaction(conn):
        if has_attempt(conn, key):
            return
        _ensure_session(conn, key, session.project_id, session.project_root, session.provider,
                        session.frame_id, at, "other")
        if workspace is not None:
            conn.execute(
                "INSERT OR IGNORE INTO workspaces (id, session_id, task_id, agent_id, path,"
                " strategy, status, base_ref, branch_name, created_at, metadata_json)"
                " VALUES (?, ?, ?, ?, ?, ?, 'active', ?, ?, ?, ?)",
                (workspace_id, key, task.task_id if task else None, key, workspace.path,
                 workspace.strategy, workspace.base_ref, workspace.branch_name, at,
                 _json({"frame_id": session.frame_id})))
        attempt_id = None
        if task is not None:
            conn.execute(
                "INSERT INTO tasks (id, session_id, type, status, title, task_spec_json,"
                " assigned_agent_id, workspace_id, created_at, started_at, heartbeat_at,"
                " metadata_json) VALUES (?, ?, ?, 'running', ?, ?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT(id) DO UPDATE SET status = 'running',"
                " assigned_agent_id = excluded.assigned_agent_id,"
                " workspace_id = excluded.workspace_id,"
                " started_at = COALESCE(started_at, excluded.started_at),"
                " heartbeat_at = excluded.heartbeat_at",
                (task.task_id, key, TASK_EXECUTE, task.title, task.spec_json(), key,
                 workspace_id, at, at, at, _json({"frame_id": task.task_id})))
            attempt_id = derived_id("attempt", task.task_id, key)
            conn.execute(
                "INSERT OR IGNORE INTO task_attempts (id, session_id, task_id, attempt_index,"
                " agent_id, status, started_at, metadata_json)"
                " VALUES (?, ?, ?, ?, ?, 'running', ?, ?)",
                (attempt_id, key, task.task_id, attempt_index, key, at,
                 _json({"workspace_id": workspace_id})))
        _event(conn, session, ATTEMPT_STARTED, at, task.task_id if task else None,
               {"attempt_id": attempt_id, "attempt_index": attempt_index,
                "workspace_id": workspace_id,
                "base_ref": workspace.base_ref if workspace else None,
                "earlier_sessions": list(earlier_sessions)})


def record_task_pushed(conn: sqlite3.Connection, session: SessionFacts, task: TaskFacts,
                       now_ms: int) -> None:
    """The pushing session's file learns of the child task (pending until it returns)."""
    at = iso(now_ms)
    with _transaction(conn):
        if conn.execute("SELECT 1 FROM tasks WHERE id = ?", (task.task_id,)).fetchone():
            return
        _ensure_session(conn, session.session_key, session.project_id, session.project_root,
                        session.provider, session.frame_id, at, "other")
        conn.execute(
            "INSERT INTO tasks (id, session_id, type, status, title, task_spec_json,"
            " created_at, metadata_json) VALUES (?, ?, ?, 'pending', ?, ?, ?, ?)",
            (task.task_id, session.session_key, TASK_EXECUTE, task.title, task.spec_json(), at,
             _json({"frame_id": task.task_id, "pushed_by_frame": session.frame_id})))
        _event(conn, session, TASK_PUSHED, at, task.task_id,
               {"task_id": task.task_id, "transition_id": task.transition_id})


def record_task_completed(conn: sqlite3.Connection, session: SessionFacts, task_id: str,
                          transition_id: str, summary: str, next_action: str,
                          now_ms: int) -> None:
    """The child's own file: its task and this attempt are completed, with the result."""
    at = iso(now_ms)
    result = _json({"transition_id": transition_id, "summary": summary,
                    "next_action": next_action})
    with _transaction(conn):
        if conn.execute("SELECT 1 FROM events WHERE type = ? AND json_extract(payload_json,"
                        " '$.transition_id') = ?", (TASK_COMPLETED, transition_id)).fetchone():
            return
        conn.execute("UPDATE tasks SET status = 'completed', completed_at = ?,"
                     " worker_result_json = ?, heartbeat_at = ? WHERE id = ?",
                     (at, result, at, task_id))
        conn.execute("UPDATE task_attempts SET status = 'completed', completed_at = ?,"
                     " worker_result_json = ? WHERE task_id = ? AND agent_id = ?"
                     " AND status IN ('pending', 'running')",
                     (at, result, task_id, session.session_key))
        _event(conn, session, TASK_COMPLETED, at, task_id, {"transition_id": transition_id})


def _ref_kind(command: str, has_diagnostics: bool) -> str:
    """EvidenceKind of a command's output: test, build (a toolchain spoke) or a log."""
    words = command.replace("/", " ").replace("-", " ").split()
    if any("test" in word for word in words):
        return "test_output"
    return "build_output" if has_diagnostics else "log"


def _run_claim(run: sqlite3.Row) -> str:
    meta = json.loads(run["metadata_json"] or "{}")
    outcome = meta.get("outcome", "unknown")
    exit_text = f", exit {run['exit_code']}" if run["exit_code"] is not None else ""
    return f"`{run['command'][:160]}` {outcome}{exit_text}"


def record_handoff(conn: sqlite3.Connection, session: SessionFacts, task_id: str | None,
                   transition_id: str, summary: str, next_action: str, claimed_by: str | None,
                   now_ms: int) -> str | None:
    """A claimed handoff: a summary row and the evidence it rests on (one transaction).

    Returns the summary id, or None when it was already recorded.
    """
    at = iso(now_ms)
    summary_id = derived_id("handoff", transition_id, session.session_key)
    with _transaction(conn):
        if conn.execute("SELECT 1 FROM summaries WHERE id = ?", (summary_id,)).fetchone():
            return None
        _ensure_session(conn, session.session_key, session.project_id, session.project_root,
                        session.provider, session.frame_id, at, "other")
        conn.execute(
            "INSERT INTO summaries (id, session_id, type, content_json, created_at,"
            " metadata_json) VALUES (?, ?, 'checkpoint', ?, ?, ?)",
            (summary_id, session.session_key,
             _json({"summary": summary, "next_action": next_action}), at,
             _json({"kind": "handoff", "transition_id": transition_id, "task_id": task_id,
                    "frame_id": session.frame_id, "claimed_by": claimed_by})))
        runs = conn.execute(
            "SELECT * FROM command_runs WHERE session_id = ? AND completed_at IS NOT NULL"
            " ORDER BY started_at DESC, rowid DESC LIMIT ?",
            (session.session_key, MAX_REFERENCED_RUNS)).fetchall()
        refs: list[tuple[object, ...]] = []
        for run in runs:
            diagnostics = conn.execute(
                "SELECT * FROM diagnostics WHERE command_run_id = ? ORDER BY rowid",
                (run["id"],)).fetchall()
            kind = _ref_kind(run["command"], bool(diagnostics))
            artifact = run["combined_artifact_id"] or run["stdout_artifact_id"] or \
                run["stderr_artifact_id"]
            refs.append((new_id(), session.session_key, task_id, run["agent_id"],
                         run["tool_run_id"], run["id"], artifact, None, kind,
                         f"command_run/{run['id']}", None, _run_claim(run), at))
            for diagnostic in diagnostics[:MAX_REFERENCED_DIAGNOSTICS]:
                location = _json({"file": diagnostic["file"], "line": diagnostic["line"],
                                  "column": diagnostic["column"]})
                refs.append((new_id(), session.session_key, task_id, run["agent_id"],
                             run["tool_run_id"], run["id"], diagnostic["artifact_id"],
                             diagnostic["id"], kind, f"diagnostic/{diagnostic['id']}",
                             location, f"{diagnostic['toolchain']} {diagnostic['severity']}: "
                             f"{diagnostic['message'][:300]}", at))
        conn.executemany(
            "INSERT INTO evidence_refs (id, session_id, task_id, agent_id, tool_run_id,"
            " command_run_id, artifact_id, diagnostic_id, kind, ref, location_json, claim,"
            " created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", refs)
        _event(conn, session, HANDOFF_CLAIMED, at, task_id,
               {"summary_id": summary_id, "transition_id": transition_id,
                "evidence_refs": len(refs)})
    return summary_id


def record_handoff_received(conn: sqlite3.Connection, session: SessionFacts, task_id: str,
                            transition_id: str, summary: str, next_action: str,
                            now_ms: int) -> None:
    """The claiming (parent) session's file: its pushed task returned with this result."""
    at = iso(now_ms)
    with _transaction(conn):
        if conn.execute("SELECT 1 FROM events WHERE type = ? AND json_extract(payload_json,"
                        " '$.transition_id') = ?", (HANDOFF_CLAIMED, transition_id)).fetchone():
            return
        _ensure_session(conn, session.session_key, session.project_id, session.project_root,
                        session.provider, session.frame_id, at, "other")
        conn.execute("UPDATE tasks SET status = 'completed', completed_at = ?,"
                     " worker_result_json = ? WHERE id = ?",
                     (at, _json({"transition_id": transition_id, "summary": summary,
                                 "next_action": next_action}), task_id))
        _event(conn, session, HANDOFF_CLAIMED, at, task_id,
               {"transition_id": transition_id, "task_id": task_id})
