"""Raw-SQL row builders for storage tests, on real registry files.

Storage tests must reach states the engine only reaches through many named
operations, so they write rows directly. Rows are inserted only in a state the
insert triggers accept; every other state is reached by walking legal edges
(with the counter bumps the counter triggers demand), exactly as a writer
would have to.

A template registry (``build_template``) holds the minimal referenced rows;
each test copies the file so cases never share state.
"""

from __future__ import annotations

import shutil
import sqlite3
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from core.model import machines
from storage.connection import connect
from tests.factories import HOST_ID, make_engine

NOW = 1_780_000_000_000

# Seed rows present in every template copy.
CHECKOUT = "c0000000-0000-4000-8000-000000000001"
CHECKOUT_2 = "c0000000-0000-4000-8000-000000000002"
PROJECT = "d0000000-0000-4000-8000-000000000001"
PROJECT_2 = "d0000000-0000-4000-8000-000000000002"
PROJECT_3 = "d0000000-0000-4000-8000-000000000003"
CONTEXT = "e0000000-0000-4000-8000-000000000001"
WORKSPACE = "f0000000-0000-4000-8000-000000000001"
VIEW = "a0000000-0000-4000-8000-000000000001"
SERVER = "b0000000-0000-4000-8000-000000000001"
SESSION_ID = "90000000-0000-4000-8000-000000000001"
SESSION = f"{HOST_ID}:claude:{SESSION_ID}"


def new_id() -> str:
    return str(uuid.uuid4())


# --------------------------------------------------------------------------- inserts


def insert_checkout(conn: sqlite3.Connection, checkout_id: str) -> None:
    conn.execute("INSERT INTO checkouts (checkout_id, host_id, repository_id, path)"
                 " VALUES (?, ?, NULL, ?)", (checkout_id, HOST_ID, "/tmp/" + checkout_id))


def insert_project(conn: sqlite3.Connection, project_id: str, checkout_id: str) -> None:
    conn.execute("INSERT INTO projects (project_id, host_id, name, checkout_id, created_at)"
                 " VALUES (?, ?, ?, ?, ?)", (project_id, HOST_ID, project_id[:8], checkout_id,
                                             NOW))


def insert_context(conn: sqlite3.Connection, context_id: str, *, project_id: str = PROJECT,
                   checkout_id: str = CHECKOUT, state: str = "released",
                   foreground: str | None = None) -> int:
    return conn.execute(
        "INSERT INTO work_contexts (work_context_id, host_id, project_id, checkout_id,"
        " claim_state, claim_generation, foreground_frame_id, background_state, updated_at)"
        " VALUES (?, ?, ?, ?, ?, 0, ?, 'safe', ?)",
        (context_id, HOST_ID, project_id, checkout_id, state, foreground, NOW)).lastrowid


def insert_frame(conn: sqlite3.Connection, frame_id: str, *, role: str = "task",
                 parent: str | None = WORKSPACE, context_id: str = CONTEXT,
                 project_id: str = PROJECT, depth: int = 1, state: str = "open") -> int:
    close_reason = None if state == "open" else "dismissed"
    return conn.execute(
        "INSERT INTO frames (frame_id, host_id, project_id, role, parent_frame_id,"
        " work_context_id, title, lifecycle_state, close_reason, created_by, depth,"
        " created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'user', ?, ?, ?)",
        (frame_id, HOST_ID, project_id, role, parent, context_id, "t-" + frame_id[:8], state,
         close_reason, depth, NOW, NOW)).lastrowid


def insert_workspace(conn: sqlite3.Connection, frame_id: str, *, context_id: str,
                     project_id: str) -> int:
    return insert_frame(conn, frame_id, role="workspace", parent=None, context_id=context_id,
                        project_id=project_id, depth=0)


def insert_session(conn: sqlite3.Connection, provider_session_id: str) -> str:
    key = f"{HOST_ID}:claude:{provider_session_id}"
    conn.execute(
        "INSERT INTO provider_sessions (session_key, host_id, provider, provider_session_id,"
        " pinned, runtime_presence, resumability, activity, activity_reason,"
        " last_observed_at, updated_at) VALUES (?, ?, 'claude', ?, 0, 'unknown', 'unknown',"
        " 'unknown', 'unknown', ?, ?)", (key, HOST_ID, provider_session_id, NOW, NOW))
    return key


def insert_membership(conn: sqlite3.Connection, frame_id: str, session_key: str,
                      ordinal: int) -> int:
    return conn.execute(
        "INSERT INTO frame_sessions (frame_session_id, frame_id, session_key, ordinal,"
        " membership_reason, joined_at) VALUES (?, ?, ?, ?, 'started', ?)",
        (new_id(), frame_id, session_key, ordinal, NOW)).lastrowid


def insert_view(conn: sqlite3.Connection, view_id: str, *, project_id: str | None = None,
                state: str = "ready") -> int:
    return conn.execute(
        "INSERT INTO user_views (view_id, host_id, project_id, mode, active_frame_id, state,"
        " revision, desktop_token, created_at, updated_at)"
        " VALUES (?, ?, ?, 'navigator', NULL, ?, 0, 'token', ?, ?)",
        (view_id, HOST_ID, project_id, state, NOW, NOW)).lastrowid


def insert_placement(conn: sqlite3.Connection, placement_id: str, *, frame_id: str,
                     view_id: str = VIEW, state: str = "staged",
                     surface_id: str | None = None) -> int:
    return conn.execute(
        "INSERT INTO frame_placements (placement_id, host_id, view_id, frame_id, surface_id,"
        " state, generation, updated_at) VALUES (?, ?, ?, ?, ?, ?, 0, ?)",
        (placement_id, HOST_ID, view_id, frame_id, surface_id, state, NOW)).lastrowid


def insert_launch(conn: sqlite3.Connection, launch_id: str, *, frame_id: str = WORKSPACE,
                  session_key: str | None = None, state: str = "planned") -> int:
    return conn.execute(
        "INSERT INTO launch_intents (launch_id, request_id, host_id, frame_id, provider,"
        " action, target_session_key, session_key, state, created_at, updated_at)"
        " VALUES (?, ?, ?, ?, 'claude', 'new', NULL, ?, ?, ?, ?)",
        (launch_id, new_id(), HOST_ID, frame_id, session_key, state, NOW, NOW)).lastrowid


def insert_surface(conn: sqlite3.Connection, surface_id: str, *, launch_id: str,
                   session_key: str | None = None, state: str = "planned",
                   pane_id: str | None = None) -> int:
    server = SERVER if pane_id is not None else None
    return conn.execute(
        "INSERT INTO surfaces (surface_id, host_id, provider, session_key, launch_id,"
        " lifecycle_state, tmux_server_id, pane_id, metadata_generation, created_at,"
        " updated_at) VALUES (?, ?, 'claude', ?, ?, ?, ?, ?, 0, ?, ?)",
        (surface_id, HOST_ID, session_key, launch_id, state, server, pane_id, NOW,
         NOW)).lastrowid


def make_live(conn: sqlite3.Connection, surface_id: str, pane_id: str) -> None:
    conn.execute("UPDATE surfaces SET lifecycle_state = 'live', tmux_server_id = ?,"
                 " pane_id = ? WHERE surface_id = ?", (SERVER, pane_id, surface_id))


def insert_transition(conn: sqlite3.Connection, transition_id: str, *, view_id: str = VIEW,
                      target: str = WORKSPACE, kind: str = "focus", state: str = "prepared",
                      phase: str = "intent") -> int:
    return conn.execute(
        "INSERT INTO view_transitions (transition_id, request_id, request_fingerprint,"
        " host_id, view_id, kind, source_frame_id, target_frame_id, work_context_id,"
        " expected_view_revision, state, transport_phase, created_at, updated_at)"
        " VALUES (?, ?, 'fp', ?, ?, ?, NULL, ?, NULL, 0, ?, ?, ?, ?)",
        (transition_id, new_id(), HOST_ID, view_id, kind, target, state, phase, NOW,
         NOW)).lastrowid


def insert_control_turn(conn: sqlite3.Connection, control_turn_id: str, *, transition_id: str,
                        state: str = "prepared", target: str = WORKSPACE) -> int:
    return conn.execute(
        "INSERT INTO control_turns (control_turn_id, transition_id, target_frame_id,"
        " target_session_key, kind, template_version, transport, state, submission_count,"
        " created_at, updated_at) VALUES (?, ?, ?, NULL, 'claim_handoff', 'control.claim.v1',"
        " 'resume_initial', ?, 0, ?, ?)",
        (control_turn_id, transition_id, target, state, NOW, NOW)).lastrowid


def insert_brief(conn: sqlite3.Connection, brief_id: str, *, transition_id: str) -> int:
    return conn.execute(
        "INSERT INTO transition_briefs (brief_id, transition_id, source_frame_id,"
        " target_frame_id, brief, content_hash, created_at) VALUES (?, ?, ?, ?, 'b', 'h', ?)",
        (brief_id, transition_id, WORKSPACE, WORKSPACE, NOW)).lastrowid


def insert_handoff(conn: sqlite3.Connection, handoff_id: str, *, transition_id: str,
                   source: str = WORKSPACE) -> int:
    return conn.execute(
        "INSERT INTO completion_handoffs (handoff_id, transition_id, source_frame_id,"
        " target_frame_id, summary, next_action, content_hash, created_at)"
        " VALUES (?, ?, ?, ?, 's', 'n', 'h', ?)",
        (handoff_id, transition_id, source, WORKSPACE, NOW)).lastrowid


def insert_recovery(conn: sqlite3.Connection, recovery_id: str, *, subject_id: str = "subject",
                    state: str = "open") -> int:
    return conn.execute(
        "INSERT INTO recoveries (recovery_id, host_id, kind, subject_type, subject_id,"
        " actionability, state, bounded_explanation, created_at, updated_at)"
        " VALUES (?, ?, 'pane_vanished', 'view', ?, 'manual', ?, 'x', ?, ?)",
        (recovery_id, HOST_ID, subject_id, state, NOW, NOW)).lastrowid


def insert_lease(conn: sqlite3.Connection, lease_id: str, *, view_id: str = VIEW,
                 state: str = "offered") -> int:
    return conn.execute(
        "INSERT INTO desktop_attachment_leases (lease_id, view_id, request_id, state,"
        " expires_at) VALUES (?, ?, ?, ?, ?)",
        (lease_id, view_id, new_id(), state, NOW + 30_000)).lastrowid


def insert_request(conn: sqlite3.Connection, request_id: str, *, fingerprint: str = "fp",
                   state: str = "prepared") -> int:
    return conn.execute(
        "INSERT INTO request_records (host_id, request_id, operation, semantic_fingerprint,"
        " state, created_at) VALUES (?, ?, 'test.op', ?, ?, ?)",
        (HOST_ID, request_id, fingerprint, state, NOW)).lastrowid


# --------------------------------------------------------------------------- template


def build_template(folder: Path) -> Path:
    """A real registry (via init) holding the seed rows; returns the file path."""
    engine = make_engine(folder)
    conn = engine.conn
    conn.execute("BEGIN IMMEDIATE")
    insert_checkout(conn, CHECKOUT)
    insert_checkout(conn, CHECKOUT_2)
    insert_project(conn, PROJECT, CHECKOUT)
    insert_project(conn, PROJECT_2, CHECKOUT_2)
    insert_project(conn, PROJECT_3, CHECKOUT)
    insert_context(conn, CONTEXT)
    insert_workspace(conn, WORKSPACE, context_id=CONTEXT, project_id=PROJECT)
    insert_view(conn, VIEW)
    conn.execute("INSERT INTO tmux_servers (tmux_server_id, host_id, socket_path, server_pid,"
                 " server_start_time, observed_at) VALUES (?, ?, '/tmp/sb.sock', 42, 1, ?)",
                 (SERVER, HOST_ID, NOW))
    insert_session(conn, SESSION_ID)
    conn.execute("COMMIT")
    path = Path(conn.execute("PRAGMA database_list").fetchone()[2])
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return path


def fresh_copy(template: Path, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / "registry.sqlite3"
    shutil.copyfile(template, target)
    return target


def open_copy(template: Path, folder: Path) -> sqlite3.Connection:
    """A standard-PRAGMA connection (storage.connection.connect) on a fresh copy."""
    return connect(fresh_copy(template, folder))


# --------------------------------------------------------------------------- machines


@dataclass
class Subject:
    """One row under test: its table, rowid and the rows its edges need."""

    table: str
    rowid: int
    extras: dict[str, str] = field(default_factory=dict)


def _subject_frame(conn: sqlite3.Connection, state: str) -> Subject:
    return Subject("frames", insert_frame(conn, new_id(), state=state))


def _subject_context(conn: sqlite3.Connection, state: str) -> Subject:
    context_id, frame_id = new_id(), new_id()
    rowid = insert_context(conn, context_id, project_id=PROJECT_2, checkout_id=CHECKOUT_2,
                           state=state, foreground=frame_id if state == "held" else None)
    insert_workspace(conn, frame_id, context_id=context_id, project_id=PROJECT_2)
    return Subject("work_contexts", rowid, {"frame_id": frame_id})


def _subject_view(conn: sqlite3.Connection, state: str) -> Subject:
    return Subject("user_views", insert_view(conn, new_id(), state=state))


def _subject_placement(conn: sqlite3.Connection, state: str) -> Subject:
    frame_id = new_id()
    insert_frame(conn, frame_id)
    return Subject("frame_placements", insert_placement(conn, new_id(), frame_id=frame_id,
                                                         view_id=_own_view(conn), state=state))


def _subject_surface(conn: sqlite3.Connection, state: str) -> Subject:
    launch_id = new_id()
    insert_launch(conn, launch_id)
    pane = f"%{launch_id[:8]}"  # unique per subject: one live surface per pane
    pane = pane if state == "live" else None
    return Subject("surfaces", insert_surface(conn, new_id(), launch_id=launch_id, state=state,
                                              pane_id=pane))


def _subject_launch(conn: sqlite3.Connection, state: str) -> Subject:
    return Subject("launch_intents", insert_launch(conn, new_id(), state=state))


def _own_view(conn: sqlite3.Connection) -> str:
    """A view per transition subject: one nonterminal transition per view."""
    view_id = new_id()
    insert_view(conn, view_id)
    return view_id


def _subject_transition(conn: sqlite3.Connection, state: str) -> Subject:
    return Subject("view_transitions", insert_transition(conn, new_id(), state=state,
                                                         view_id=_own_view(conn)))


def _subject_transport(conn: sqlite3.Connection, state: str) -> Subject:
    return Subject("view_transitions", insert_transition(conn, new_id(), phase=state,
                                                         view_id=_own_view(conn)))


def _subject_control(conn: sqlite3.Connection, state: str) -> Subject:
    transition_id = new_id()
    insert_transition(conn, transition_id, view_id=_own_view(conn))
    return Subject("control_turns", insert_control_turn(conn, new_id(),
                                                        transition_id=transition_id,
                                                        state=state))


SUBJECTS: dict[str, Callable[[sqlite3.Connection, str], Subject]] = {
    "frame": _subject_frame,
    "work_context": _subject_context,
    "user_view": _subject_view,
    "placement": _subject_placement,
    "surface": _subject_surface,
    "launch": _subject_launch,
    "transition": _subject_transition,
    "transport": _subject_transport,
    "control_turn": _subject_control,
    "recovery": lambda conn, state: Subject("recoveries", insert_recovery(conn, new_id(),
                                                                          state=state)),
    "lease": lambda conn, state: Subject("desktop_attachment_leases",
                                         insert_lease(conn, new_id(), state=state,
                                                      view_id=_own_view(conn))),
    "request": lambda conn, state: Subject("request_records",
                                           insert_request(conn, new_id(), state=state)),
}

# The state each subject is born in before walking (the contract's entry state).
BIRTH_STATE: dict[str, str] = {
    "frame": "open", "work_context": "released", "user_view": "ready", "placement": "staged",
    "surface": "planned", "launch": "planned", "transition": "prepared",
    "transport": "intent", "control_turn": "prepared", "recovery": "open",
    "lease": "offered", "request": "prepared",
}


def edge_update(conn: sqlite3.Connection, machine: machines.Machine, subject: Subject,
                new: str) -> None:
    """Write ``new`` into the machine's column together with what a correct writer
    also writes: the counter bump and the columns the target state requires."""
    sets = [f"{machine.column} = ?"]
    args: list[object] = [new]
    if machine.name == "frame":
        sets.append("close_reason = ?")
        args.append(None if new == "open" else "dismissed")
    elif machine.name == "work_context":
        sets += ["claim_generation = claim_generation + 1", "foreground_frame_id = ?"]
        args.append(subject.extras["frame_id"] if new == "held" else None)
    elif machine.name == "user_view":
        sets.append("revision = revision + 1")
    elif machine.name == "placement":
        sets.append("generation = generation + 1")
    elif machine.name == "surface" and new == "live":
        sets += ["tmux_server_id = COALESCE(tmux_server_id, ?)", "pane_id = COALESCE(pane_id, ?)"]
        args += [SERVER, f"%{subject.rowid}"]
    conn.execute(f"UPDATE {subject.table} SET {', '.join(sets)} WHERE rowid = ?",
                 (*args, subject.rowid))


def current_state(conn: sqlite3.Connection, machine: machines.Machine, subject: Subject) -> str:
    return conn.execute(f"SELECT {machine.column} FROM {subject.table} WHERE rowid = ?",
                        (subject.rowid,)).fetchone()[0]


def path_to(machine: machines.Machine, start: str, goal: str) -> list[str] | None:
    """Shortest walk of legal edges from ``start`` to ``goal`` (states after start)."""
    previous: dict[str, str | None] = {start: None}
    queue = deque([start])
    while queue:
        state = queue.popleft()
        if state == goal:
            walk: list[str] = []
            while previous[state] is not None:
                walk.append(state)
                state = previous[state]  # type: ignore[assignment]
            return list(reversed(walk))
        for nxt in sorted(machine.edges.get(state, ())):
            if nxt not in previous:
                previous[nxt] = state
                queue.append(nxt)
    return None


def subject_in_state(conn: sqlite3.Connection, machine: machines.Machine,
                     state: str) -> Subject:
    """Insert a row in its birth state and walk legal edges to ``state``."""
    birth = BIRTH_STATE[machine.name]
    subject = SUBJECTS[machine.name](conn, birth)
    walk = path_to(machine, birth, state)
    assert walk is not None, f"{machine.name}: {state} is unreachable from {birth}"
    for step in walk:
        edge_update(conn, machine, subject, step)
    assert current_state(conn, machine, subject) == state
    return subject
