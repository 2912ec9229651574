"""View transitions, transition briefs, completion handoffs and control turns."""

from __future__ import annotations

import sqlite3

from core.model.control_line import TEMPLATE_VERSION
from core.model.digest import sha256
from core.model.enums import ControlKind, ControlTransport, TransitionKind, TransitionState
from storage.operations.common import cas, one

NONTERMINAL = ("prepared", "executing", "presented", "awaiting_claim", "settling")


def content_hash(*parts: str) -> str:
    digest = sha256()
    for part in parts:
        digest.update(part.encode("utf-8"))
        digest.update(b"\x00")
    return digest.hexdigest()


def insert_transition(conn: sqlite3.Connection, *, transition_id: str, request_id: str,
                      fingerprint: str, host_id: str, view_id: str, kind: TransitionKind,
                      source_frame_id: str | None, target_frame_id: str,
                      work_context_id: str | None, expected_view_revision: int,
                      expected_claim_generation: int | None, now: int,
                      target_mode: str | None = None) -> None:
    conn.execute(
        "INSERT INTO view_transitions (transition_id, request_id, request_fingerprint, host_id,"
        " view_id, kind, source_frame_id, target_frame_id, work_context_id,"
        " expected_view_revision, expected_claim_generation, state, transport_phase,"
        " target_mode, created_at, updated_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'prepared', 'intent', ?, ?, ?)",
        (transition_id, request_id, fingerprint, host_id, view_id, kind.value, source_frame_id,
         target_frame_id, work_context_id, expected_view_revision, expected_claim_generation,
         target_mode, now, now))


def get_transition(conn: sqlite3.Connection, transition_id: str) -> sqlite3.Row:
    return one(conn, "SELECT * FROM view_transitions WHERE transition_id = ?",
               (transition_id,), f"transition {transition_id}")


def pending_for_view(conn: sqlite3.Connection, view_id: str) -> sqlite3.Row | None:
    return conn.execute(
        f"SELECT * FROM view_transitions WHERE view_id = ? AND state IN {NONTERMINAL}",
        (view_id,)).fetchone()


def pending_in_context(conn: sqlite3.Connection, work_context_id: str) -> int:
    """How many nonterminal transitions touch a work context."""
    return conn.execute(
        f"SELECT COUNT(*) FROM view_transitions WHERE work_context_id = ?"
        f" AND state IN {NONTERMINAL}", (work_context_id,)).fetchone()[0]


def claim_execution(conn: sqlite3.Connection, transition_id: str, owner: str,
                    lease_expires_at: int, now: int) -> None:
    """prepared -> executing, taking the execution lease."""
    cas(conn, "UPDATE view_transitions SET state = 'executing', execution_owner = ?,"
        " lease_expires_at = ?, updated_at = ? WHERE transition_id = ? AND state = 'prepared'",
        (owner, lease_expires_at, now, transition_id), f"transition {transition_id}")


def take_over_at_intent(conn: sqlite3.Connection, transition_id: str, owner: str,
                        lease_expires_at: int, now: int) -> bool:
    """An executing transition whose lease expired before anything moved (still at
    ``intent``) is taken over by ``owner`` with a fresh lease.

    The state, phase and expiry guards make the take-over exclusive: of two
    reconcilers only one sees a row; returns whether this one took it.
    """
    cur = conn.execute(
        "UPDATE view_transitions SET execution_owner = ?, lease_expires_at = ?,"
        " updated_at = ? WHERE transition_id = ? AND state = 'executing'"
        " AND transport_phase = 'intent' AND lease_expires_at < ?",
        (owner, lease_expires_at, now, transition_id, now))
    return cur.rowcount == 1


def move_transition(conn: sqlite3.Connection, transition_id: str, from_state: TransitionState,
                    to_state: TransitionState, now: int, failure: str | None = None) -> None:
    cas(conn, "UPDATE view_transitions SET state = ?, failure = COALESCE(?, failure),"
        " updated_at = ? WHERE transition_id = ? AND state = ?",
        (to_state.value, failure, now, transition_id, from_state.value),
        f"transition {transition_id}")


def advance_phase(conn: sqlite3.Connection, transition_id: str, from_phase: str,
                  to_phase: str, now: int) -> None:
    cas(conn, "UPDATE view_transitions SET transport_phase = ?, updated_at = ?"
        " WHERE transition_id = ? AND transport_phase = ?",
        (to_phase, now, transition_id, from_phase), f"transition {transition_id} phase")


def insert_brief(conn: sqlite3.Connection, *, brief_id: str, transition_id: str,
                 source_frame_id: str, source_session_key: str | None, target_frame_id: str,
                 brief: str, now: int) -> None:
    conn.execute(
        "INSERT INTO transition_briefs (brief_id, transition_id, source_frame_id,"
        " source_session_key, target_frame_id, brief, content_hash, created_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (brief_id, transition_id, source_frame_id, source_session_key, target_frame_id, brief,
         content_hash(brief), now))


def insert_handoff(conn: sqlite3.Connection, *, handoff_id: str, transition_id: str,
                   source_frame_id: str, source_session_key: str | None, target_frame_id: str,
                   summary: str, next_action: str, now: int) -> None:
    conn.execute(
        "INSERT INTO completion_handoffs (handoff_id, transition_id, source_frame_id,"
        " source_session_key, target_frame_id, summary, next_action, content_hash, created_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (handoff_id, transition_id, source_frame_id, source_session_key, target_frame_id,
         summary, next_action, content_hash(summary, next_action), now))


def stamp_claimed(conn: sqlite3.Connection, table: str, transition_id: str, now: int) -> None:
    assert table in ("transition_briefs", "completion_handoffs")
    conn.execute(f"UPDATE {table} SET first_claimed_at = ? WHERE transition_id = ?"
                 " AND first_claimed_at IS NULL", (now, transition_id))


def insert_control_turn(conn: sqlite3.Connection, *, control_turn_id: str, transition_id: str,
                        target_frame_id: str, target_session_key: str | None,
                        kind: ControlKind, transport: ControlTransport, now: int) -> None:
    conn.execute(
        "INSERT INTO control_turns (control_turn_id, transition_id, target_frame_id,"
        " target_session_key, kind, template_version, transport, state, submission_count,"
        " created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, 'prepared', 0, ?, ?)",
        (control_turn_id, transition_id, target_frame_id, target_session_key, kind.value,
         TEMPLATE_VERSION, transport.value, now, now))


def control_turn_of(conn: sqlite3.Connection, transition_id: str) -> sqlite3.Row | None:
    return conn.execute("SELECT * FROM control_turns WHERE transition_id = ?",
                        (transition_id,)).fetchone()


def target_session_of_transition(conn: sqlite3.Connection, transition_id: str,
                                 session_key: str | None) -> None:
    """Point a transition's control turn at the session its claim just started (a
    push's child gets its session in the same claim), whatever the turn's state."""
    conn.execute("UPDATE control_turns SET target_session_key = ? WHERE transition_id = ?",
                 (session_key, transition_id))


def retarget_prepared(conn: sqlite3.Connection, control_turn_id: str,
                      session_key: str | None) -> None:
    """A turn not yet typed follows its target frame's current session; a turn
    already submitted keeps the session it was typed into."""
    conn.execute("UPDATE control_turns SET target_session_key = ? WHERE"
                 " control_turn_id = ? AND state = 'prepared'", (session_key, control_turn_id))


def plan_resume_initial(conn: sqlite3.Connection, control_turn_id: str,
                        session_key: str | None, now: int) -> None:
    """The turn will be delivered as the resumed CLI's initial prompt: transport and
    target session change together, so the turn never names one session and
    the transport of another."""
    conn.execute("UPDATE control_turns SET transport = ?, target_session_key = ?,"
                 " updated_at = ? WHERE control_turn_id = ?",
                 (ControlTransport.RESUME_INITIAL.value, session_key, now, control_turn_id))


def observe_for_frame(conn: sqlite3.Connection, frame_id: str, prompt_id: str | None,
                      now: int) -> None:
    """The fixed control line's own UserPromptSubmit arrived in ``frame_id``: every
    turn submitted to it (or uncertain) is observed, with that prompt's id.

    Called from the hook path: this module must import nothing heavy.
    """
    conn.execute(
        "UPDATE control_turns SET state = 'observed', observed_prompt_id = ?, updated_at = ?"
        " WHERE target_frame_id = ? AND state IN ('submitted', 'uncertain')",
        (prompt_id, now, frame_id))


def mark_submitted(conn: sqlite3.Connection, control_turn_id: str, now: int) -> None:
    """prepared -> submitted; the CHECK on submission_count makes a second one impossible."""
    cas(conn, "UPDATE control_turns SET state = 'submitted', submission_count ="
        " submission_count + 1, submitted_at = ?, updated_at = ?"
        " WHERE control_turn_id = ? AND state = 'prepared'",
        (now, now, control_turn_id), f"control turn {control_turn_id}")


def move_control(conn: sqlite3.Connection, control_turn_id: str, from_states: tuple[str, ...],
                 to_state: str, now: int, *, prompt_id: str | None = None,
                 failure: str | None = None) -> bool:
    placeholders = ", ".join("?" for _ in from_states)
    stamp = {"claimed": ", claimed_at = ?", "settled": ", settled_at = ?"}.get(to_state, "")
    args: list = [to_state, prompt_id, failure, now]
    if stamp:
        args.append(now)
    cur = conn.execute(
        f"UPDATE control_turns SET state = ?, observed_prompt_id = COALESCE(?,"
        f" observed_prompt_id), failure = COALESCE(?, failure), updated_at = ?{stamp}"
        f" WHERE control_turn_id = ? AND state IN ({placeholders})",
        (*args, control_turn_id, *from_states))
    return cur.rowcount == 1
