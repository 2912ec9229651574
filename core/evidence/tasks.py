"""Task lineage evidence: where push, attempt, completion and claim are recorded.

Four moments, each written after the registry has committed (never inside a
registry transaction) and best effort (a refused or busy evidence file is
logged, the request it follows has already succeeded):

- ``task_pushed`` (``Engine.frame_push``): the child task, pending, in the
  pushing agent's session file; its spec is the brief's sha256 and title.
- ``attempt_from_hook`` (the first hook of a provider session): that session
  is an attempt of its frame's task, in the checkout at the commit it started
  from (``workspaces.base_ref``, later the base of "what changed").
- ``task_completed`` (``Engine.frame_complete``): task and attempt completed
  in the child's session file, with the handoff as the worker result.
- ``handoff_claimed`` (``claims.claim_for_frame``, first claim): the handoff
  becomes a summary with evidence refs to that session's commands, artifacts
  and diagnostics; the parent's file marks the task completed; the project's
  debug records of the frame learn the handoff summary.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from storage.session_lineage import SessionFacts, TaskFacts, WorkspaceFacts

if TYPE_CHECKING:
    from core.config.home import Home
    from core.evidence.capture import HookFacts

GIT_TIMEOUT_S = 5.0


# --------------------------------------------------------------------------- facts


def git(path: Path, *args: str) -> str | None:
    """One git read in ``path``; None when it is not a repository or git fails. Run with
    the checkout's fsmonitor, filters and hooks off (``core.model.git``)."""
    import subprocess

    from core.model.git import run_git

    try:
        done = run_git(path, *args, timeout=GIT_TIMEOUT_S, text=True)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None


def workspace_facts(path: str) -> WorkspaceFacts | None:
    """The checkout as it is now: its strategy, commit and branch."""
    if not path or not Path(path).is_dir():
        return None
    folder = Path(path)
    strategy = "worktree" if (folder / ".git").is_file() else "main"
    return WorkspaceFacts(str(folder), strategy, git(folder, "rev-parse", "--verify", "-q", "HEAD"),
                          git(folder, "symbolic-ref", "--short", "-q", "HEAD"))


def _task(conn: sqlite3.Connection, frame_id: str) -> TaskFacts | None:
    frame = conn.execute("SELECT role, title, parent_frame_id FROM frames WHERE frame_id = ?",
                         (frame_id,)).fetchone()
    if frame is None or frame["role"] != "task":
        return None
    brief = conn.execute(
        "SELECT transition_id, brief FROM transition_briefs WHERE target_frame_id = ?"
        " ORDER BY created_at DESC LIMIT 1", (frame_id,)).fetchone()
    digest = hashlib.sha256(brief["brief"].encode()).hexdigest() if brief else None
    return TaskFacts(frame_id, frame["title"], digest, brief["transition_id"] if brief else None,
                     frame["parent_frame_id"])


def _session(conn: sqlite3.Connection, session_key: str | None,
             frame_id: str) -> SessionFacts | None:
    if not session_key:
        return None
    row = conn.execute(
        "SELECT s.provider, f.project_id, c.path FROM provider_sessions s"
        " JOIN frames f ON f.frame_id = ? JOIN projects p ON p.project_id = f.project_id"
        " LEFT JOIN checkouts c ON c.checkout_id = p.checkout_id WHERE s.session_key = ?",
        (frame_id, session_key)).fetchone()
    if row is None:
        return None
    return SessionFacts(session_key, row["provider"], row["project_id"], row["path"] or "",
                        frame_id)


def _write(home: Home, session: SessionFacts, write: Callable[[sqlite3.Connection], Any]) -> Any:
    from storage import session_db

    conn = session_db.open_session_db(session_db.session_db_path(home.root, session.session_key))
    try:
        return write(conn)
    finally:
        conn.close()


def _best_effort(what: str, action: Callable[[], None]) -> None:
    try:
        action()
    except Exception as exc:  # evidence never undoes or fails the request it follows
        import logging

        logging.getLogger("switchboard.evidence").warning(
            "session evidence not recorded (%s): %s", what, exc)


def _home(engine: Any) -> Home | None:
    return getattr(engine, "home", None)


# --------------------------------------------------------------------------- moments


def attempt_from_hook(home: Home, conn: sqlite3.Connection, facts: HookFacts, provider: str,
                      now_ms: int) -> None:
    """The session's first hook: record it as an attempt (read-only registry look-up)."""
    from storage.session_lineage import has_attempt, record_attempt
    from storage.uri import open_uri

    if not facts.frame_id or has_attempt(conn, facts.session_key):
        return
    generation = home.read_current_generation()
    if not generation:
        return
    registry = open_uri(home.registry_path(generation), "ro")
    registry.row_factory = sqlite3.Row
    try:
        task = _task(registry, facts.frame_id)
        ordinal = registry.execute(
            "SELECT ordinal FROM frame_sessions WHERE frame_id = ? AND session_key = ?",
            (facts.frame_id, facts.session_key)).fetchone()
        earlier = [r[0] for r in registry.execute(
            "SELECT session_key FROM frame_sessions WHERE frame_id = ? AND session_key != ?"
            " AND ordinal < COALESCE((SELECT ordinal FROM frame_sessions WHERE frame_id = ?"
            "   AND session_key = ?), 1 << 30) ORDER BY ordinal",
            (facts.frame_id, facts.session_key, facts.frame_id, facts.session_key))]
    finally:
        registry.close()
    session = SessionFacts(facts.session_key, provider, facts.project_id, facts.project_root,
                           facts.frame_id)
    record_attempt(conn, session, task, ordinal[0] if ordinal else 1,
                   workspace_facts(facts.project_root), now_ms, earlier_sessions=earlier)


def task_pushed(engine: Any, transition_id: str) -> None:
    """After ``frame_push`` committed: the child task in the pushing session's file."""
    home = _home(engine)
    if home is None:
        return

    def act() -> None:
        from storage.session_lineage import record_task_pushed

        conn = engine.conn
        row = conn.execute("SELECT source_frame_id, target_frame_id FROM view_transitions"
                           " WHERE transition_id = ?", (transition_id,)).fetchone()
        if row is None:
            return
        source = conn.execute("SELECT current_session_key FROM frames WHERE frame_id = ?",
                              (row["source_frame_id"],)).fetchone()
        session = _session(conn, source["current_session_key"] if source else None,
                           row["source_frame_id"])
        task = _task(conn, row["target_frame_id"])
        if session is None or task is None:
            return
        _write(home, session, lambda db: record_task_pushed(db, session, task, engine.now()))

    _best_effort("push", act)
    _best_effort("search index", lambda: _index(engine, home, "push", transition_id))


def _handoff(conn: sqlite3.Connection, transition_id: str) -> sqlite3.Row | None:
    return conn.execute("SELECT * FROM completion_handoffs WHERE transition_id = ?",
                        (transition_id,)).fetchone()


def task_completed(engine: Any, transition_id: str) -> None:
    """After ``frame_complete`` committed: the child's task and attempt are completed."""
    home = _home(engine)
    if home is None:
        return

    def act() -> None:
        from storage.session_lineage import record_task_completed

        handoff = _handoff(engine.conn, transition_id)
        if handoff is None:
            return
        session = _session(engine.conn, handoff["source_session_key"],
                           handoff["source_frame_id"])
        if session is None:
            return
        _write(home, session, lambda db: record_task_completed(
            db, session, handoff["source_frame_id"], transition_id, handoff["summary"],
            handoff["next_action"], engine.now()))

    _best_effort("complete", act)
    _best_effort("search index", lambda: _index(engine, home, "complete", transition_id))


def _index(engine: Any, home: Home, moment: str, transition_id: str) -> None:
    """The brief or the handoff becomes searchable (``core.evidence.search_index``)."""
    from core.evidence.search_index import after_complete, after_push
    from storage.session_db import iso

    index = after_push if moment == "push" else after_complete
    index(home.root, engine.conn, transition_id, iso(engine.now()))


def handoff_claimed(engine: Any, transition_id: str, claimer_key: str | None) -> None:
    """After the first claim of a handoff: summary + evidence refs, parent's task done,
    the frame's debug records learn what the agent said fixed it."""
    home = _home(engine)
    if home is None:
        return

    def act() -> None:
        from storage.session_lineage import record_handoff, record_handoff_received

        conn = engine.conn
        handoff = _handoff(conn, transition_id)
        if handoff is None:
            return
        now = engine.now()
        child = handoff["source_frame_id"]
        claimer = claimer_key
        if claimer is None:  # claimed by the person, not an agent: the parent's session
            row = conn.execute("SELECT current_session_key FROM frames WHERE frame_id = ?",
                               (handoff["target_frame_id"],)).fetchone()
            claimer = row[0] if row else None
        session = _session(conn, handoff["source_session_key"], child)
        if session is not None:
            _write(home, session, lambda db: record_handoff(
                db, session, child, transition_id, handoff["summary"], handoff["next_action"],
                claimer, now))
            _attach_to_debug_records(home, session.project_id, child, handoff["summary"],
                                     handoff["next_action"], now)
        parent = _session(conn, claimer, handoff["target_frame_id"])
        if parent is not None:
            _write(home, parent, lambda db: record_handoff_received(
                db, parent, child, transition_id, handoff["summary"], handoff["next_action"],
                now))

    _best_effort("claim", act)


def _attach_to_debug_records(home: Home, project_id: str, frame_id: str, summary: str,
                             next_action: str, now_ms: int) -> None:
    from storage.project_db import DEBUG_RECORDS, attach_handoff, open_project_db, project_db_path

    path = project_db_path(home.root, project_id, DEBUG_RECORDS)
    if not path.exists():
        return  # no debug record anywhere in this project: nothing to attach to
    db = open_project_db(path, DEBUG_RECORDS, create=False, now_ms=now_ms)
    try:
        db.execute("BEGIN IMMEDIATE")
        attach_handoff(db, frame_id, summary, next_action, now_ms)
        db.execute("COMMIT")
    finally:
        db.close()
