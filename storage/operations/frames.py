"""Frames and work contexts: the per-project tree and its checkout claim."""

from __future__ import annotations

import sqlite3

from core.model.enums import ClaimState, CloseReason, CreatedBy, FrameLifecycle, FrameRole
from core.model.errors import Conflict
from storage.operations.common import cas, one


def insert_work_context(conn: sqlite3.Connection, *, work_context_id: str, host_id: str,
                        project_id: str, checkout_id: str, now: int) -> None:
    conn.execute(
        "INSERT INTO work_contexts (work_context_id, host_id, project_id, checkout_id,"
        " claim_state, claim_generation, background_state, updated_at)"
        " VALUES (?, ?, ?, ?, 'released', 0, 'safe', ?)",
        (work_context_id, host_id, project_id, checkout_id, now))


def insert_frame(conn: sqlite3.Connection, *, frame_id: str, host_id: str, project_id: str,
                 role: FrameRole, parent_frame_id: str | None, work_context_id: str,
                 title: str, purpose: str | None, preferred_provider: str | None,
                 created_by: CreatedBy, depth: int, now: int) -> None:
    conn.execute(
        "INSERT INTO frames (frame_id, host_id, project_id, role, parent_frame_id,"
        " work_context_id, title, purpose, preferred_provider, lifecycle_state, close_reason,"
        " created_by, depth, created_at, updated_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'open', NULL, ?, ?, ?, ?)",
        (frame_id, host_id, project_id, role.value, parent_frame_id, work_context_id, title,
         purpose, preferred_provider, created_by.value, depth, now, now))


def workspace_of(conn: sqlite3.Connection, host_id: str, project_id: str) -> sqlite3.Row | None:
    return conn.execute(
        "SELECT * FROM frames WHERE host_id = ? AND project_id = ? AND role = 'workspace'",
        (host_id, project_id)).fetchone()


def get_frame(conn: sqlite3.Connection, frame_id: str) -> sqlite3.Row:
    return one(conn, "SELECT * FROM frames WHERE frame_id = ?", (frame_id,),
               f"frame {frame_id}")


def get_context(conn: sqlite3.Connection, work_context_id: str) -> sqlite3.Row:
    return one(conn, "SELECT * FROM work_contexts WHERE work_context_id = ?",
               (work_context_id,), f"work context {work_context_id}")


def begin_close(conn: sqlite3.Connection, frame_id: str, reason: CloseReason, now: int) -> None:
    cas(conn, "UPDATE frames SET lifecycle_state = 'closing', close_reason = ?, updated_at = ?"
        " WHERE frame_id = ? AND lifecycle_state = 'open'",
        (reason.value, now, frame_id), f"frame {frame_id}")


def finish_close(conn: sqlite3.Connection, frame_id: str, now: int) -> None:
    cas(conn, "UPDATE frames SET lifecycle_state = 'closed', updated_at = ?"
        " WHERE frame_id = ? AND lifecycle_state = 'closing'", (now, frame_id),
        f"frame {frame_id}")


def reopen(conn: sqlite3.Connection, frame_id: str, now: int) -> None:
    state = get_frame(conn, frame_id)["lifecycle_state"]
    if state != FrameLifecycle.CLOSED:
        raise Conflict(f"frame {frame_id} is {state}; only a closed frame can be reopened",
                       code="frame_not_closed")
    cas(conn, "UPDATE frames SET lifecycle_state = 'open', close_reason = NULL, updated_at = ?"
        " WHERE frame_id = ? AND lifecycle_state = 'closed'", (now, frame_id),
        f"frame {frame_id}")


def touch_focus(conn: sqlite3.Connection, frame_id: str, now: int) -> None:
    conn.execute("UPDATE frames SET last_focused_at = ? WHERE frame_id = ?", (now, frame_id))


def set_current_session(conn: sqlite3.Connection, frame_id: str, session_key: str | None,
                        now: int) -> None:
    conn.execute("UPDATE frames SET current_session_key = ?, updated_at = ? WHERE frame_id = ?",
                 (session_key, now, frame_id))


def acquire_claim(conn: sqlite3.Connection, work_context_id: str, foreground_frame_id: str,
                  expected_generation: int, now: int) -> int:
    """released -> held with a foreground frame; returns the new claim generation."""
    cas(conn, "UPDATE work_contexts SET claim_state = 'held', foreground_frame_id = ?,"
        " claim_generation = claim_generation + 1, acquired_at = ?, updated_at = ?"
        " WHERE work_context_id = ? AND claim_state = 'released' AND claim_generation = ?",
        (foreground_frame_id, now, now, work_context_id, expected_generation),
        f"work context {work_context_id}")
    return expected_generation + 1


def transfer_foreground(conn: sqlite3.Connection, work_context_id: str, frame_id: str,
                        expected_generation: int, now: int) -> int:
    """Move foreground authority within a held context (push/return); bumps generation."""
    cas(conn, "UPDATE work_contexts SET foreground_frame_id = ?,"
        " claim_generation = claim_generation + 1, updated_at = ?"
        " WHERE work_context_id = ? AND claim_state = 'held' AND claim_generation = ?"
        " AND foreground_frame_id IS NOT ?",
        (frame_id, now, work_context_id, expected_generation, frame_id),
        f"work context {work_context_id}")
    return expected_generation + 1


def release_claim(conn: sqlite3.Connection, work_context_id: str, expected_generation: int,
                  now: int) -> int:
    cas(conn, "UPDATE work_contexts SET claim_state = 'released', foreground_frame_id = NULL,"
        " claim_generation = claim_generation + 1, released_at = ?, updated_at = ?"
        " WHERE work_context_id = ? AND claim_state = 'held' AND claim_generation = ?",
        (now, now, work_context_id, expected_generation), f"work context {work_context_id}")
    return expected_generation + 1


def block_claim(conn: sqlite3.Connection, work_context_id: str, expected_generation: int,
                now: int) -> int:
    cas(conn, "UPDATE work_contexts SET claim_state = 'blocked', foreground_frame_id = NULL,"
        " claim_generation = claim_generation + 1, updated_at = ?"
        " WHERE work_context_id = ? AND claim_state IN ('released', 'held')"
        " AND claim_generation = ?",
        (now, work_context_id, expected_generation), f"work context {work_context_id}")
    return expected_generation + 1


def resolve_blocked(conn: sqlite3.Connection, work_context_id: str, to_state: ClaimState,
                    foreground_frame_id: str | None, expected_generation: int,
                    now: int) -> int:
    """The explicit human resolution of a blocked claim (to released or held)."""
    cas(conn, "UPDATE work_contexts SET claim_state = ?, foreground_frame_id = ?,"
        " claim_generation = claim_generation + 1, updated_at = ?,"
        " background_state = 'safe'"
        " WHERE work_context_id = ? AND claim_state = 'blocked' AND claim_generation = ?",
        (to_state.value, foreground_frame_id, now, work_context_id, expected_generation),
        f"work context {work_context_id}")
    return expected_generation + 1


def set_background(conn: sqlite3.Connection, work_context_id: str, state: str,
                   now: int) -> None:
    conn.execute("UPDATE work_contexts SET background_state = ?, updated_at = ?"
                 " WHERE work_context_id = ?", (state, now, work_context_id))


def open_children(conn: sqlite3.Connection, frame_id: str) -> list[sqlite3.Row]:
    return conn.execute(
        "SELECT * FROM frames WHERE parent_frame_id = ? AND lifecycle_state <> 'closed'"
        " ORDER BY created_at, frame_id", (frame_id,)).fetchall()


__all__ = ["FrameLifecycle"]
