"""User views and frame placements: which frame a view shows and where panes live."""

from __future__ import annotations

import sqlite3

from core.model.enums import PlacementState, ViewMode, ViewState
from storage.operations.common import cas, one


def insert_view(conn: sqlite3.Connection, *, view_id: str, host_id: str, project_id: str | None,
                mode: ViewMode, active_frame_id: str | None, desktop_token: str,
                now: int) -> None:
    conn.execute(
        "INSERT INTO user_views (view_id, host_id, project_id, mode, active_frame_id, state,"
        " revision, desktop_token, created_at, updated_at)"
        " VALUES (?, ?, ?, ?, ?, 'ready', 0, ?, ?, ?)",
        (view_id, host_id, project_id, mode.value, active_frame_id, desktop_token, now, now))


def get_view(conn: sqlite3.Connection, view_id: str) -> sqlite3.Row:
    return one(conn, "SELECT * FROM user_views WHERE view_id = ?", (view_id,), f"view {view_id}")


def view_of_project(conn: sqlite3.Connection, host_id: str,
                    project_id: str) -> sqlite3.Row | None:
    return conn.execute(
        "SELECT * FROM user_views WHERE host_id = ? AND project_id = ? AND state <> 'retired'",
        (host_id, project_id)).fetchone()


def mutate_view(conn: sqlite3.Connection, view_id: str, expected_revision: int, *,
                mode: ViewMode | None = None, active_frame_id: str | None = None,
                state: ViewState | None = None, now: int) -> int:
    """One committed view mutation: CAS on revision, bump it; returns the new revision."""
    row = get_view(conn, view_id)
    cas(conn,
        "UPDATE user_views SET mode = ?, active_frame_id = ?, state = ?, revision = revision + 1,"
        " updated_at = ? WHERE view_id = ? AND revision = ?",
        ((mode or ViewMode(row["mode"])).value,
         active_frame_id if active_frame_id is not None else row["active_frame_id"],
         (state or ViewState(row["state"])).value, now, view_id, expected_revision),
        f"view {view_id} (expected revision {expected_revision})")
    return expected_revision + 1


def bind_view_tmux(conn: sqlite3.Connection, view_id: str, *, tmux_server_id: str,
                   window_id: str, main_pane_id: str, navigator_pane_id: str | None,
                   now: int) -> None:
    conn.execute(
        "UPDATE user_views SET tmux_server_id = ?, tmux_window_id = ?, main_pane_id = ?,"
        " navigator_pane_id = ?, last_attached_at = ?, updated_at = ? WHERE view_id = ?",
        (tmux_server_id, window_id, main_pane_id, navigator_pane_id, now, now, view_id))


def set_main_pane(conn: sqlite3.Connection, view_id: str, main_pane_id: str | None,
                  now: int) -> None:
    conn.execute("UPDATE user_views SET main_pane_id = ?, updated_at = ? WHERE view_id = ?",
                 (main_pane_id, now, view_id))


def set_zoom(conn: sqlite3.Connection, view_id: str, zoomed: bool) -> None:
    conn.execute("UPDATE user_views SET zoomed = ? WHERE view_id = ?", (int(zoomed), view_id))


def insert_placement(conn: sqlite3.Connection, *, placement_id: str, host_id: str,
                     view_id: str, frame_id: str, state: PlacementState,
                     surface_id: str | None, now: int) -> None:
    conn.execute(
        "INSERT INTO frame_placements (placement_id, host_id, view_id, frame_id, surface_id,"
        " state, generation, last_focused_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, 0, ?, ?)",
        (placement_id, host_id, view_id, frame_id, surface_id, state.value, now, now))


def placement_of_frame(conn: sqlite3.Connection, frame_id: str) -> sqlite3.Row | None:
    return conn.execute(
        "SELECT * FROM frame_placements WHERE frame_id = ? AND state <> 'orphaned'",
        (frame_id,)).fetchone()


def active_placement(conn: sqlite3.Connection, view_id: str) -> sqlite3.Row | None:
    return conn.execute(
        "SELECT * FROM frame_placements WHERE view_id = ? AND state = 'active'",
        (view_id,)).fetchone()


def move_placement(conn: sqlite3.Connection, placement_id: str, expected_generation: int,
                   to_state: PlacementState, now: int, *, surface_id: str | None = None,
                   change_surface: bool = False, focused: bool = False) -> int:
    """One placement edge, CAS on generation; returns the new generation."""
    sets = "state = ?, generation = generation + 1, updated_at = ?"
    args: list = [to_state.value, now]
    if change_surface:
        sets += ", surface_id = ?"
        args.append(surface_id)
    if focused:
        sets += ", last_focused_at = ?"
        args.append(now)
    cas(conn, f"UPDATE frame_placements SET {sets} WHERE placement_id = ? AND generation = ?",
        (*args, placement_id, expected_generation), f"placement {placement_id}")
    return expected_generation + 1
