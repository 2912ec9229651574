"""The one connection factory and transaction helper for the registry.

Every connection gets the same PRAGMAs (foreign keys on, WAL, busy timeout) so
no caller can forget them, and every SQLite constraint failure is mapped to a
domain error named for the invariant it guards.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from core.model.errors import Conflict, IllegalEdge, InvariantViolation, RegistryUnavailable
from storage import held_files
from storage.environment import database_path, environment_failure
from storage.uri import sqlite_uri

BUSY_TIMEOUT_MS = 5000
#: WAL pages after which a hook's commit checkpoints the registry itself. SQLite's
#: default (1000) made whichever hook crossed it copy ~4 MB into the database file:
#: 100-150 ms, the hook p99 of a storm. The reconcile holder checkpoints every turn
#: (``checkpoint_wal``), so a hook reaches this only when no navigator runs.
HOOK_WAL_AUTOCHECKPOINT_PAGES = 8000
CACHE_KIB = 32 * 1024
MMAP_BYTES = 64 * 1024 * 1024

# SQLite names the columns, not the index, when a unique index refuses a row;
# map each column signature back to the invariant it guards.
UNIQUE_INVARIANTS: dict[str, str] = {
    "frames.host_id, frames.project_id": "one_workspace_per_project",
    "work_contexts.checkout_id": "one_held_context_per_checkout",
    "frame_sessions.session_key": "one_frame_per_session",
    "frame_sessions.frame_id, frame_sessions.ordinal": "one_membership_per_ordinal",
    "surfaces.session_key": "one_live_surface_per_session",
    "surfaces.tmux_server_id, surfaces.pane_id": "one_live_surface_per_pane",
    "launch_intents.session_key": "one_pending_launch_per_session",
    "view_transitions.view_id": "one_nonterminal_transition_per_view",
    "frame_placements.view_id": "one_active_placement_per_view",
    "frame_placements.frame_id": "one_owning_placement_per_frame",
    "frame_placements.surface_id": "one_placement_per_surface",
    "transition_briefs.transition_id": "one_brief_per_push",
    "completion_handoffs.transition_id": "one_handoff_per_completion",
    "control_turns.transition_id": "one_control_turn_per_transition",
    "desktop_attachment_leases.view_id": "one_active_lease_per_view",
    "request_records.host_id, request_records.request_id": "one_fingerprint_per_request",
    "user_views.host_id, user_views.project_id": "one_live_view_per_project",
    "recoveries.host_id, recoveries.kind, recoveries.subject_type, recoveries.subject_id":
        "one_open_recovery_per_subject",
    "provider_sessions.host_id, provider_sessions.provider, provider_sessions.provider_session_id":
        "one_session_per_provider_id",
    "tmux_servers.socket_path, tmux_servers.server_pid, tmux_servers.server_start_time":
        "one_row_per_server_identity",
}


def map_integrity_error(exc: sqlite3.IntegrityError) -> Conflict:
    """Turn a refused write into the domain error that names its invariant.

    The name is the error's ``code`` (agents and tests match on it); the message is
    the rule in words (``storage.refusals``), so no constraint name reaches a person.
    """
    from storage.refusals import refusal_words

    text = str(exc)
    if text.startswith("illegal_edge:"):
        machine = text.split(":", 1)[1].replace("_", " ")
        return IllegalEdge(f"refused: a {machine} cannot change to that state from its "
                           "current one; nothing was changed", code="illegal_edge")
    if text.startswith("illegal_initial_state:"):
        machine = text.split(":", 1)[1].replace("_", " ")
        return IllegalEdge(f"refused: a {machine} cannot be created in that state; "
                           "nothing was changed")
    if text.startswith("invariant:"):
        name = text.split(":", 1)[1]
        return InvariantViolation(f"refused: {refusal_words(name)}; nothing was changed",
                                  code=name)
    match = re.match(r"UNIQUE constraint failed: (.*)$", text)
    if match:
        name = UNIQUE_INVARIANTS.get(match.group(1).strip(), "unique:" + match.group(1))
        return InvariantViolation(f"refused: {refusal_words(name)}; nothing was changed",
                                  code=name)
    match = re.match(r"CHECK constraint failed: (.*)$", text)
    if match:
        from storage.limits import describe_check

        rule = match.group(1)
        code = rule if re.fullmatch(r"\w+", rule) else "check_failed"
        return InvariantViolation(f"refused: {describe_check(rule)}; nothing was changed",
                                  code=code)
    if "FOREIGN KEY" in text:
        return InvariantViolation("refused: a referenced row does not exist",
                                  code="foreign_key")
    return InvariantViolation(f"refused by the registry: {text}; nothing was changed")


def connect(path: Path, *, readonly: bool = False) -> sqlite3.Connection:
    """Open an already-diagnosed registry file with the standard PRAGMAs.

    A read-only or full disk shows up here first (setting WAL writes): it is
    reported as the EnvironmentFailure it is, naming the file.
    """
    try:
        return _connect(path, readonly=readonly)
    except sqlite3.OperationalError as exc:
        failure = environment_failure(exc, path)
        if failure is None:
            raise
        raise failure from exc


def _connect(path: Path, *, readonly: bool) -> sqlite3.Connection:
    if readonly:
        conn = held_files.connect(path, sqlite_uri(path, mode="ro"), uri=True,
                                  isolation_level=None, check_same_thread=False)
    else:
        conn = held_files.connect(path, sqlite_uri(path, mode="rw"), uri=True,
                                  isolation_level=None, check_same_thread=False)
    conn.row_factory = sqlite3.Row
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    # State builds read every table: keep a registry of thousands of frames in the
    # page cache (and memory-mapped) instead of re-reading pages from the OS each time.
    conn.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
    conn.execute(f"PRAGMA mmap_size = {MMAP_BYTES}")
    conn.execute("PRAGMA foreign_keys = ON")
    if not readonly:
        mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
        if mode != "wal":
            conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
    return conn


def checkpoint_wal(conn: sqlite3.Connection) -> None:
    """Copy the WAL's committed pages into the database file, waiting for no one.

    PASSIVE: pages a reader still needs stay in the WAL for the next call. The
    host's reconcile holder calls this after each turn so that no hook has to
    (``HOOK_WAL_AUTOCHECKPOINT_PAGES``).
    """
    conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()


@contextmanager
def write_transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """BEGIN IMMEDIATE ... COMMIT; constraint failures become domain errors."""
    try:
        conn.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as exc:
        failure = environment_failure(exc, conn=conn)
        if failure is not None and failure.code != "busy":
            raise failure from exc
        raise RegistryUnavailable(
            f"the registry {database_path(conn)} stayed locked by another Switchboard "
            f"process for {BUSY_TIMEOUT_MS // 1000} s: retry in a moment; nothing was "
            "changed", code="registry_busy") from exc
    try:
        yield conn
        conn.execute("COMMIT")
    except sqlite3.IntegrityError as exc:
        conn.execute("ROLLBACK")
        raise map_integrity_error(exc) from exc
    except sqlite3.OperationalError as exc:
        _rollback_quietly(conn)
        failure = environment_failure(exc, conn=conn)
        if failure is None:
            raise
        raise failure from exc
    except BaseException:
        _rollback_quietly(conn)
        raise


def _rollback_quietly(conn: sqlite3.Connection) -> None:
    """Roll back if a transaction is open; SQLite may already have (on SQLITE_FULL)."""
    if conn.in_transaction:
        try:
            conn.execute("ROLLBACK")
        except sqlite3.Error:
            pass  # the original error is the one worth reporting
