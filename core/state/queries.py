"""Read-side queries for the CLI's listings (``frame list``, ``view list``,
``project list``): plain frozen rows, no mutation. Named ``*Listing`` apart from the
navigator's envelope rows (``core.state.state_types.ViewRow`` and friends)."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from core.config.config import Config
from core.model.errors import NotFound
from core.providers.checks import effective_activity


@dataclass(frozen=True)
class FrameListing:
    frame_id: str
    project_id: str
    role: str
    parent_frame_id: str | None
    title: str
    lifecycle_state: str
    close_reason: str | None
    depth: int
    current_session_key: str | None
    activity: str | None
    placement_state: str | None


@dataclass(frozen=True)
class ViewListing:
    view_id: str
    project_id: str | None
    project_name: str | None
    mode: str
    state: str
    revision: int
    active_frame_id: str | None
    active_title: str | None
    pending_transition: str | None


@dataclass(frozen=True)
class ProjectListing:
    project_id: str
    name: str
    root: str
    open_frames: int
    view_id: str | None


_FRAME_SQL = """
SELECT f.frame_id, f.project_id, f.role, f.parent_frame_id, f.title, f.lifecycle_state,
       f.close_reason, f.depth, f.current_session_key, s.activity, s.last_observed_at,
       p.state AS placement_state
FROM frames f
LEFT JOIN provider_sessions s ON s.session_key = f.current_session_key
LEFT JOIN frame_placements p ON p.frame_id = f.frame_id AND p.state <> 'orphaned'
"""


def _frame(row: sqlite3.Row, now: int | None = None) -> FrameListing:
    values = {k: row[k] for k in FrameListing.__dataclass_fields__}
    if values["activity"] is not None:
        # Same display rule as the navigator: a working without evidence ages to unknown.
        values["activity"] = effective_activity(values["activity"], row["last_observed_at"],
                                                now if now is not None else _now())
    return FrameListing(**values)


def _now() -> int:
    import time
    return time.time_ns() // 1_000_000


def list_frames(conn: sqlite3.Connection, project_id: str | None = None) -> list[FrameListing]:
    """Frames in tree order (parents before children)."""
    where = " WHERE f.project_id = ?" if project_id else ""
    rows = [_frame(r) for r in conn.execute(
        _FRAME_SQL + where + " ORDER BY f.project_id, f.depth, f.created_at, f.frame_id",
        (project_id,) if project_id else ())]
    children: dict[str | None, list[FrameListing]] = {}
    for row in rows:
        children.setdefault(row.parent_frame_id, []).append(row)
    ordered: list[FrameListing] = []

    def walk(parent: str | None) -> None:
        for child in children.get(parent, []):
            ordered.append(child)
            walk(child.frame_id)

    walk(None)
    return ordered


def get_frame_summary(conn: sqlite3.Connection, frame_id: str) -> FrameListing:
    row = conn.execute(_FRAME_SQL + " WHERE f.frame_id = ?", (frame_id,)).fetchone()
    if row is None:
        raise NotFound(f"frame {frame_id} not found; `switchboard frame list` shows frames")
    return _frame(row)


def list_views(conn: sqlite3.Connection) -> list[ViewListing]:
    rows = conn.execute(
        "SELECT v.view_id, v.project_id, pr.name AS project_name, v.mode, v.state, v.revision,"
        " v.active_frame_id, f.title AS active_title,"
        " (SELECT t.kind || ':' || t.state FROM view_transitions t WHERE t.view_id = v.view_id"
        "  AND t.state IN ('prepared','executing','presented','awaiting_claim','settling'))"
        "  AS pending_transition"
        " FROM user_views v LEFT JOIN projects pr ON pr.project_id = v.project_id"
        " LEFT JOIN frames f ON f.frame_id = v.active_frame_id ORDER BY v.host_id, v.view_id")
    return [ViewListing(*[r[k] for k in ViewListing.__dataclass_fields__]) for r in rows]


def list_projects(conn: sqlite3.Connection, config: Config) -> list[ProjectListing]:
    counts = {r[0]: r[1] for r in conn.execute(
        "SELECT project_id, COUNT(*) FROM frames WHERE lifecycle_state = 'open'"
        " GROUP BY project_id")}
    views = {r[0]: r[1] for r in conn.execute(
        "SELECT project_id, view_id FROM user_views WHERE state <> 'retired'")}
    return [ProjectListing(p.project_id, p.name, p.root, counts.get(p.project_id, 0),
                       views.get(p.project_id)) for p in config.projects]


def live_agents_in_project(conn: sqlite3.Connection, project_id: str) -> int:
    """Agent panes of this project's frames that are live (not stopped, not retired)."""
    return conn.execute(
        "SELECT COUNT(*) FROM surfaces s JOIN frame_placements p ON p.surface_id ="
        " s.surface_id JOIN frames f ON f.frame_id = p.frame_id"
        " WHERE f.project_id = ? AND s.lifecycle_state = 'live'", (project_id,)).fetchone()[0]
