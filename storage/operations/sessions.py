"""Provider sessions, frame memberships, launches, surfaces and agent capabilities."""

from __future__ import annotations

import sqlite3

from core.model.session_enums import (
    Activity,
    ActivityReason,
    LaunchAction,
    MembershipReason,
    Provider,
    RuntimePresence,
)
from storage.operations.common import cas, one


def session_key(host_id: str, provider: Provider, provider_session_id: str) -> str:
    return f"{host_id}:{provider.value}:{provider_session_id}"


def insert_session(conn: sqlite3.Connection, *, host_id: str, provider: Provider,
                   provider_session_id: str, project_id: str | None, checkout_id: str | None,
                   name: str | None, purpose: str | None, now: int) -> str:
    key = session_key(host_id, provider, provider_session_id)
    conn.execute(
        "INSERT INTO provider_sessions (session_key, host_id, provider, provider_session_id,"
        " project_id, checkout_id, name, purpose, pinned, runtime_presence, resumability,"
        " activity, activity_reason, created_at, last_observed_at, updated_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, 'unknown', 'unknown', 'unknown', 'unknown',"
        " ?, ?, ?)",
        (key, host_id, provider.value, provider_session_id, project_id, checkout_id, name,
         purpose, now, now, now))
    return key


def get_session(conn: sqlite3.Connection, key: str) -> sqlite3.Row:
    return one(conn, "SELECT * FROM provider_sessions WHERE session_key = ?", (key,),
               f"provider session {key}")


def rekey_session(conn: sqlite3.Connection, old_key: str, provider_session_id: str) -> str:
    """Codex learns its thread id from the first hook: move the key (FKs cascade)."""
    row = get_session(conn, old_key)
    new_key = f"{row['host_id']}:{row['provider']}:{provider_session_id}"
    conn.execute(
        "UPDATE provider_sessions SET provider_session_id = ?, session_key = ?"
        " WHERE session_key = ?", (provider_session_id, new_key, old_key))
    return new_key


def record_activity(conn: sqlite3.Connection, key: str, *, activity: Activity | None,
                    reason: ActivityReason | None, runtime_presence: str | None,
                    turn_id: str | None, provider_version: str | None, now: int) -> None:
    row = get_session(conn, key)
    conn.execute(
        "UPDATE provider_sessions SET activity = ?, activity_reason = ?, runtime_presence = ?,"
        " resumability = CASE WHEN ? = 'live' THEN 'resumable' ELSE resumability END,"
        " last_turn_id = COALESCE(?, last_turn_id),"
        " provider_version = COALESCE(?, provider_version),"
        " provider_updated_at = ?, last_observed_at = ?, updated_at = ? WHERE session_key = ?",
        ((activity or Activity(row["activity"])).value,
         (reason or ActivityReason(row["activity_reason"])).value,
         runtime_presence or row["runtime_presence"], runtime_presence, turn_id,
         provider_version, now, now, now, key))


def record_provider_version(conn: sqlite3.Connection, key: str, version: str,
                            now: int) -> None:
    """Telemetry: the version ``--version`` reported for this session's launch.

    Unlike ``record_activity`` it is not hook evidence, so ``last_observed_at``
    (what stale-activity ageing measures) is left alone.
    """
    cas(conn, "UPDATE provider_sessions SET provider_version = ?, updated_at = ?"
        " WHERE session_key = ?", (version, now, key), f"provider session {key}")


def set_runtime_presence(conn: sqlite3.Connection, key: str, presence: RuntimePresence,
                         now: int) -> None:
    """Whether the session's provider process runs: ``live`` once its pane is recorded
    (a launch, or a reconcile adopting a pane), ``stopped`` once that pane exited or
    was stopped on purpose.

    Only the presence moves: activity and resumability are hook evidence
    (``record_activity``), so a lost pane never rewrites what the provider said.
    """
    conn.execute("UPDATE provider_sessions SET runtime_presence = ?, updated_at = ?"
                 " WHERE session_key = ?", (presence.value, now, key))


def end_stale_turn(conn: sqlite3.Connection, key: str, now: int) -> bool:
    """A session about to get a new provider process: ``working`` becomes ``unknown``.

    The turn it records belonged to a process that is gone (a launch needs none
    running), and it ended without a Stop, as ``age_out_working`` says of a silent
    one; the new process's own hooks say what it does. Written before the new pane
    exists, so no hook of the new process can be overwritten."""
    cur = conn.execute(
        "UPDATE provider_sessions SET activity = 'unknown', activity_reason = 'unknown',"
        " updated_at = ? WHERE session_key = ? AND activity = 'working'", (now, key))
    return cur.rowcount == 1


def age_out_working(conn: sqlite3.Connection, *, observed_before: int, now: int) -> list[str]:
    """``working`` with no hook evidence since ``observed_before`` becomes ``unknown``.

    Stop does not fire on an interrupt or an API error; this is the reconcile
    write that keeps such a session from staying ``working`` forever.
    """
    keys = [row[0] for row in conn.execute(
        "SELECT session_key FROM provider_sessions WHERE activity = 'working'"
        " AND last_observed_at <= ? ORDER BY session_key", (observed_before,))]
    conn.executemany(
        "UPDATE provider_sessions SET activity = 'unknown', activity_reason = 'unknown',"
        " updated_at = ? WHERE session_key = ? AND activity = 'working'",
        [(now, key) for key in keys])
    return keys


def insert_membership(conn: sqlite3.Connection, *, frame_session_id: str, frame_id: str,
                      key: str, reason: MembershipReason, now: int) -> int:
    ordinal = conn.execute(
        "SELECT COALESCE(MAX(ordinal), 0) + 1 FROM frame_sessions WHERE frame_id = ?",
        (frame_id,)).fetchone()[0]
    conn.execute(
        "INSERT INTO frame_sessions (frame_session_id, frame_id, session_key, ordinal,"
        " membership_reason, joined_at) VALUES (?, ?, ?, ?, ?, ?)",
        (frame_session_id, frame_id, key, ordinal, reason.value, now))
    return ordinal


def insert_launch(conn: sqlite3.Connection, *, launch_id: str, request_id: str, host_id: str,
                  frame_id: str, provider: Provider, action: LaunchAction,
                  target_session_key: str | None, key: str, now: int) -> None:
    conn.execute(
        "INSERT INTO launch_intents (launch_id, request_id, host_id, frame_id, provider,"
        " action, target_session_key, session_key, state, created_at, updated_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'planned', ?, ?)",
        (launch_id, request_id, host_id, frame_id, provider.value, action.value,
         target_session_key, key, now, now))


def move_launch(conn: sqlite3.Connection, launch_id: str, from_state: str, to_state: str,
                now: int, failure: str | None = None) -> None:
    cas(conn, "UPDATE launch_intents SET state = ?, failure = COALESCE(?, failure),"
        " updated_at = ? WHERE launch_id = ? AND state = ?",
        (to_state, failure, now, launch_id, from_state), f"launch {launch_id}")


def bind_launch(conn: sqlite3.Connection, launch_id: str, now: int) -> bool:
    """started -> bound: the first authenticated hook of the launched session arrived.

    Guarded on ``started`` (a launch already bound, failed or superseded stays as
    it is); returns whether it moved, so the caller answers a bind-timeout recovery
    only for the bind that actually happened, in the same commit.
    """
    cur = conn.execute("UPDATE launch_intents SET state = 'bound', updated_at = ?"
                       " WHERE launch_id = ? AND state = 'started'", (now, launch_id))
    return cur.rowcount == 1


def insert_surface(conn: sqlite3.Connection, *, surface_id: str, host_id: str,
                   provider: Provider, key: str | None, launch_id: str, now: int) -> None:
    conn.execute(
        "INSERT INTO surfaces (surface_id, host_id, provider, session_key, launch_id,"
        " lifecycle_state, metadata_generation, created_at, updated_at)"
        " VALUES (?, ?, ?, ?, ?, 'planned', 0, ?, ?)",
        (surface_id, host_id, provider.value, key, launch_id, now, now))


def surface_live(conn: sqlite3.Connection, surface_id: str, *, tmux_server_id: str,
                 pane_id: str, process_id: int | None, now: int) -> None:
    """planned/orphaned -> live, only with exact re-read pane metadata."""
    cas(conn, "UPDATE surfaces SET lifecycle_state = 'live', tmux_server_id = ?, pane_id = ?,"
        " process_id = ?, metadata_generation = metadata_generation + 1, updated_at = ?"
        " WHERE surface_id = ? AND lifecycle_state IN ('planned', 'orphaned')",
        (tmux_server_id, pane_id, process_id, now, surface_id), f"surface {surface_id}")


def move_surface(conn: sqlite3.Connection, surface_id: str, to_state: str, now: int) -> None:
    retired = now if to_state == "retired" else None
    conn.execute(
        "UPDATE surfaces SET lifecycle_state = ?, retired_at = COALESCE(?, retired_at),"
        " updated_at = ? WHERE surface_id = ?", (to_state, retired, now, surface_id))


def get_surface(conn: sqlite3.Connection, surface_id: str) -> sqlite3.Row:
    return one(conn, "SELECT * FROM surfaces WHERE surface_id = ?", (surface_id,),
               f"surface {surface_id}")


def insert_capability(conn: sqlite3.Connection, *, capability_id: str, digest: str,
                      host_id: str, view_id: str, frame_id: str, key: str | None,
                      surface_id: str, launch_id: str, placement_generation: int,
                      issued_at: int, expires_at: int) -> None:
    conn.execute(
        "INSERT INTO agent_capabilities (capability_id, capability_digest, host_id, view_id,"
        " frame_id, session_key, surface_id, launch_id, placement_generation, issued_at,"
        " expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (capability_id, digest, host_id, view_id, frame_id, key, surface_id, launch_id,
         placement_generation, issued_at, expires_at))


def bind_capability_pane(conn: sqlite3.Connection, surface_id: str, tmux_server_id: str,
                         pane_id: str) -> None:
    conn.execute(
        "UPDATE agent_capabilities SET tmux_server_id = ?, pane_id = ? WHERE surface_id = ?"
        " AND revoked_at IS NULL", (tmux_server_id, pane_id, surface_id))


def revoke_capabilities(conn: sqlite3.Connection, surface_id: str, now: int) -> None:
    conn.execute("UPDATE agent_capabilities SET revoked_at = ? WHERE surface_id = ?"
                 " AND revoked_at IS NULL", (now, surface_id))


def mark_waiting_on_dialog(conn: sqlite3.Connection, key: str, now: int) -> bool:
    """The session's pane shows a dialog of its CLI: it needs the person (a question the
    CLI asks). True if this changed the row; a hook's own needs-input is left as it is."""
    cur = conn.execute(
        "UPDATE provider_sessions SET activity = 'needs_input', activity_reason = 'question',"
        " updated_at = ? WHERE session_key = ? AND activity <> 'needs_input'", (now, key))
    return cur.rowcount > 0


def clear_dialog_wait(conn: sqlite3.Connection, key: str, now: int) -> bool:
    """The dialog is gone and no hook has said anything since: not proven idle, so
    unknown (only a Stop says ready)."""
    cur = conn.execute(
        "UPDATE provider_sessions SET activity = 'unknown', activity_reason = 'unknown',"
        " updated_at = ? WHERE session_key = ? AND activity = 'needs_input'"
        " AND activity_reason = 'question'", (now, key))
    return cur.rowcount > 0
