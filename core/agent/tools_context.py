"""Agent tools that let an agent see where it stands: current, context, history,
back and transition status.

Authority is the caller's capability, as for every agent tool; the answers are
about the caller's own project only and bounded (at most ``MAX_ROWS`` rows,
texts cut to ``MAX_TEXT``). They carry titles, roles, states and ids, never
session file paths, pane ids, capabilities or another agent's transcript.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from core.model.errors import Conflict
from storage.uri import open_uri

MAX_ROWS = 100
MAX_TEXT = 2000


def _cut(text: str | None) -> str | None:
    return None if text is None else text[:MAX_TEXT]


def _frame_row(conn: sqlite3.Connection, frame_id: str) -> sqlite3.Row:
    return conn.execute(
        "SELECT f.frame_id, f.title, f.role, f.parent_frame_id, f.project_id, f.purpose,"
        " f.lifecycle_state, ps.activity, ps.provider"
        " FROM frames f LEFT JOIN provider_sessions ps"
        " ON ps.session_key = f.current_session_key WHERE f.frame_id = ?",
        (frame_id,)).fetchone()


def _shown(conn: sqlite3.Connection, project_id: str) -> str | None:
    row = conn.execute("SELECT active_frame_id FROM user_views WHERE project_id = ?"
                       " AND state <> 'retired'", (project_id,)).fetchone()
    return row[0] if row else None


def _brief(row: sqlite3.Row, shown: str | None) -> dict[str, Any]:
    return {"frame_id": row["frame_id"], "title": row["title"], "role": row["role"],
            "state": row["lifecycle_state"], "activity": row["activity"],
            "provider": row["provider"], "shown": row["frame_id"] == shown}


def _pending_for(engine: Any, frame_id: str) -> int | None:
    """Unread broker messages for this frame's member (None: no broker yet)."""
    home = getattr(engine, "home", None)
    if home is None or not home.broker_path.exists():
        return None
    from core.broker.kick import frame_description

    conn = open_uri(home.broker_path, "ro", timeout=2)
    try:
        row = conn.execute(
            "SELECT COUNT(*) FROM messages ms JOIN members m ON m.member_id = ms.to_member_id"
            " WHERE m.description = ? AND m.status = 'active'"
            " AND ms.status_state <> 'completed'", (frame_description(frame_id),)).fetchone()
        return int(row[0])
    finally:
        conn.close()


def switchboard_current(*, env: dict[str, str] | None = None) -> dict[str, Any]:
    """My frame, project, parent, children, whether I am shown, and my unread messages."""
    from core.agent.tools import authorized_reader

    with authorized_reader(env) as (engine, authority):
        conn = engine.conn
        me = _frame_row(conn, authority.frame_id)
        project = conn.execute("SELECT name FROM projects WHERE project_id = ?",
                               (me["project_id"],)).fetchone()
        shown = _shown(conn, me["project_id"])
        parent = _frame_row(conn, me["parent_frame_id"]) if me["parent_frame_id"] else None
        children = conn.execute(
            "SELECT frame_id FROM frames WHERE parent_frame_id = ? ORDER BY created_at"
            " LIMIT ?", (me["frame_id"], MAX_ROWS)).fetchall()
        shown_title = _frame_row(conn, shown)["title"] if shown else None
        return {"ok": True, "frame": {**_brief(me, shown), "purpose": _cut(me["purpose"])},
                "project": project["name"] if project else None,
                "parent": _brief(parent, shown) if parent else None,
                "children": [_brief(_frame_row(conn, c[0]), shown) for c in children],
                "view": {"shown_frame_id": shown, "shown_title": shown_title,
                         "i_am_shown": shown == me["frame_id"]},
                "unread_messages": _pending_for(engine, me["frame_id"])}


def switchboard_context(*, env: dict[str, str] | None = None) -> dict[str, Any]:
    """The project's open frames: titles, roles, parents, activity and who is shown."""
    from core.agent.tools import authorized_reader

    with authorized_reader(env) as (engine, authority):
        conn = engine.conn
        me = _frame_row(conn, authority.frame_id)
        shown = _shown(conn, me["project_id"])
        rows = conn.execute(
            "SELECT frame_id FROM frames WHERE project_id = ? AND lifecycle_state = 'open'"
            " ORDER BY depth, created_at LIMIT ?", (me["project_id"], MAX_ROWS)).fetchall()
        frames = []
        for (frame_id,) in rows:
            row = _frame_row(conn, frame_id)
            frames.append({**_brief(row, shown), "parent_frame_id": row["parent_frame_id"],
                           "is_me": frame_id == me["frame_id"]})
        return {"ok": True, "frames": frames, "shown_frame_id": shown}


def switchboard_history(*, env: dict[str, str] | None = None) -> dict[str, Any]:
    """Closed tasks of this project, newest first, with their handoff summaries."""
    from core.agent.tools import authorized_reader

    with authorized_reader(env) as (engine, authority):
        conn = engine.conn
        me = _frame_row(conn, authority.frame_id)
        rows = conn.execute(
            "SELECT f.frame_id, f.title, f.close_reason, f.parent_frame_id, f.updated_at,"
            " h.summary, h.next_action FROM frames f"
            " LEFT JOIN completion_handoffs h ON h.source_frame_id = f.frame_id"
            " WHERE f.project_id = ? AND f.lifecycle_state = 'closed'"
            " ORDER BY f.updated_at DESC LIMIT ?", (me["project_id"], MAX_ROWS)).fetchall()
        return {"ok": True, "closed": [
            {"frame_id": r["frame_id"], "title": r["title"], "close_reason": r["close_reason"],
             "parent_frame_id": r["parent_frame_id"], "closed_at_ms": r["updated_at"],
             "summary": _cut(r["summary"]), "next_action": _cut(r["next_action"])}
            for r in rows]}


def transition_status(*, env: dict[str, str] | None = None) -> dict[str, Any]:
    """The latest transitions that involve my frame (push, return, back, focus), newest first."""
    from core.agent.tools import authorized_reader

    with authorized_reader(env) as (engine, authority):
        rows = engine.conn.execute(
            "SELECT transition_id, kind, state, source_frame_id, target_frame_id, failure,"
            " created_at, updated_at FROM view_transitions"
            " WHERE source_frame_id = ? OR target_frame_id = ?"
            " ORDER BY created_at DESC LIMIT 20", (authority.frame_id, authority.frame_id)
        ).fetchall()
        return {"ok": True, "transitions": [
            {"transition_id": r["transition_id"], "kind": r["kind"], "state": r["state"],
             "direction": "from me" if r["source_frame_id"] == authority.frame_id else "to me",
             "failure": _cut(r["failure"]), "created_at_ms": r["created_at"],
             "updated_at_ms": r["updated_at"]} for r in rows]}


def task_back(*, env: dict[str, str] | None = None) -> dict[str, Any]:
    """Show my parent (I stay open, parked). Repeating it after it happened is fine."""
    from core.agent.tools import authorized
    from core.context.requests import new_request_id

    with authorized(env) as (engine, authority):
        conn = engine.conn
        view = conn.execute("SELECT view_id, active_frame_id FROM user_views"
                            " WHERE view_id = ?", (authority.view_id,)).fetchone()
        me = _frame_row(conn, authority.frame_id)
        if me["parent_frame_id"] is None:
            raise Conflict("the workspace has no parent to go back to", code="no_parent")
        if view is None or view["active_frame_id"] != authority.frame_id:
            if view is not None and view["active_frame_id"] == me["parent_frame_id"]:
                return {"ok": True, "state": "completed", "already": True,
                        "message": "Your parent is already shown."}
            raise Conflict("your frame is not the one shown, so there is nothing to go back "
                           "from", code="not_shown")
        result = engine.frame_back(new_request_id(), authority.view_id)
        return {"ok": True, "state": result.state, "already": False,
                "transition_id": result.transition_id,
                "message": "Your parent is shown; you stay open and parked."}


_CALLS = {"switchboard_current": switchboard_current,
          "switchboard_context": switchboard_context,
          "switchboard_history": switchboard_history,
          "task_back": task_back, "transition_status": transition_status}


def call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return _CALLS[name]()
