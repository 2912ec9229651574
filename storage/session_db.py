"""Create, diagnose and write one provider session's evidence file.

``$SWITCHBOARD_HOME/sessions/<safe session key>/session.db`` holds what the
spec's session DB holds: the hook path fills ``sessions``, ``agents``,
``events``, ``messages``, ``tool_runs`` and (through ``storage.session_evidence``)
``command_runs``, ``artifacts`` and ``diagnostics``; ``core.evidence.tasks`` the
task lineage. Why this shape:

- Diagnosis before any write, like the registry and the broker: the 100-byte
  header (magic, application_id, user_version, WAL flag) is read with plain
  file IO, so a foreign, newer or rollback-journal file is refused before
  SQLite ever opens it and stays byte-identical; ``schema_meta`` is then read
  (a SELECT) before the first write.
- A new file is built beside the target and hard-linked into place, so a
  reader never sees a half-created schema and two first hooks cannot both
  create it (the loser opens the winner's file).
- One connection factory sets WAL, synchronous NORMAL and foreign_keys OFF
  (the spec's settings) so no caller forgets them.
- Writers are named operations; ``record_hook_event`` owns the transaction so
  the event insert and its domain updates (agent row, tool run start/finish)
  commit together (spec transaction rule). Content (a prompt's text, a shell
  command, its output and diagnostics) is written only here, in the session's own
  0600 file and 0700 folder; never the transcript, never the registry.

Stdlib only and no Textual: the hook imports this on every provider event,
so the closed values it writes are the StrEnum values of
``core.model.evidence_enums`` spelled as constants (a test keeps them equal) rather
than an import of every enum, and rows are plain arguments, not dataclasses.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from core.model.errors import RegistryUnavailable
from core.model.files import create_private_file, private_dir
from storage import held_files
from storage.environment import environment_failure
from storage.uri import sqlite_uri

if TYPE_CHECKING:
    from storage.session_evidence import CommandRecord

APPLICATION_ID = 0x53575345  # "SWSE": a Switchboard session evidence file
SCHEMA_VERSION = 2
"""V2 adds the usage tables (``storage.session_schema.USAGE_TABLES``)."""
UPGRADABLE = (1,)
"""Older session files upgraded in place at their first read-write open (V1 -> V2 only
adds tables); a read-only open reads them as they are."""
CREATED_BY = "switchboard"
SWITCHBOARD_VERSION = "0.1.0"  # kept in step with pyproject.toml
EVENT_VERSION = 1
BUSY_TIMEOUT_MS = 2000
WAL_SIZE_LIMIT_BYTES = 1024 * 1024
"""What a writer truncates a session file's -wal to when it starts the log again. SQLite
reuses a -wal file from its start but never shrinks it on its own: a log that grew while
a reader held an old snapshot kept that size. (The hook's held-open connection, which
kept the log from ever starting again, is bounded in ``core.evidence.hook``.)"""
# The closed values this module writes (ToolRunStatus, AgentStatus, SessionStatus,
# EventSourceKind).
RUNNING, OK, ERROR, CANCELLED = "running", "ok", "error", "cancelled"
AGENT_STARTING, AGENT_RUNNING, AGENT_COMPLETED = "starting", "running", "completed"
SESSION_ACTIVE = "active"
MESSAGE_USER, FORMAT_ANTHROPIC = "user", "anthropic"
SOURCE_HOOK = "hook"
#: payload_json keys: the only hook facts that are ever stored.
PAYLOAD_KEYS = ("event", "kind", "tool_name", "tool_use_id", "turn_id", "notification_type",
                "activity")
FILE_NAME = "session.db"
SQLITE_MAGIC = b"SQLite format 3\x00"
_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_")


class SessionDbRefused(RegistryUnavailable):
    """The session file is not ours (or is newer); nothing was written to it."""

    code = "session_db_refused"


# --------------------------------------------------------------------------- paths


def safe_key(session_key: str) -> str:
    """A folder name for a session key (``host:provider:id``): injective, never
    ``.``/``..``, no separators. Letters, digits, ``-`` and ``_`` stay; every
    other character becomes ``%XX`` of its UTF-8 bytes."""
    if not session_key:
        raise ValueError("empty session key")
    return "".join(ch if ch in _SAFE else "".join(f"%{b:02X}" for b in ch.encode())
                   for ch in session_key)


def session_db_path(root: Path, session_key: str) -> Path:
    return Path(root) / "sessions" / safe_key(session_key) / FILE_NAME


# --------------------------------------------------------------------------- diagnosis


def _check_header(path: Path, application_id: int = APPLICATION_ID,
                  what: str = "session", refused: type[RegistryUnavailable] = SessionDbRefused,
                  version: int = SCHEMA_VERSION, older: tuple[int, ...] = UPGRADABLE) -> int:
    """Refuse from the header alone, before SQLite opens (and could change) the file;
    returns its version (``version``, or one of the ``older`` ones it may be upgraded from).

    ``storage.project_db`` reuses this for the project-level files, with their own
    application id, version and wording."""
    header = held_files.read_header(path)
    if header is None:
        return version  # held through SQLite by this process: diagnosed (and upgraded)
    if len(header) < 100 or not header.startswith(SQLITE_MAGIC):
        raise refused(f"{path} is not a SQLite {what} file; it was left unchanged")
    app_id = int.from_bytes(header[68:72], "big", signed=True)
    user_version = int.from_bytes(header[60:64], "big", signed=True)
    if app_id != application_id:
        raise refused(f"{path} belongs to another application (application_id "
                      f"{app_id}); it was left unchanged")
    if user_version > version:
        raise refused(f"{path} has {what} schema v{user_version}, newer than this "
                      f"Switchboard (v{version}); upgrade Switchboard. The "
                      "file was left unchanged")
    if (user_version != version and user_version not in older) \
            or header[18:20] != b"\x02\x02":
        raise refused(f"{path} is not a v{version} WAL {what} file "
                      f"(user_version {user_version}); it was left unchanged")
    return user_version


def _check_meta(conn: sqlite3.Connection, path: Path, what: str = "session",
                refused: type[RegistryUnavailable] = SessionDbRefused,
                version: int = SCHEMA_VERSION) -> dict[str, str]:
    """schema_meta (read through the WAL, so it is the newest committed truth)."""
    try:
        found = conn.execute("PRAGMA user_version").fetchone()[0]
        meta = dict(conn.execute("SELECT key, value FROM schema_meta").fetchall())
    except sqlite3.DatabaseError as exc:
        raise refused(f"{path} has no readable schema_meta ({exc}); it was left "
                      "unchanged") from exc
    if meta.get("created_by") != CREATED_BY:
        raise refused(f"{path} was created by {meta.get('created_by')!r}, not "
                      f"{CREATED_BY!r}; it was left unchanged")
    recorded = meta.get("schema_version", "")
    if found != version or recorded != str(version):
        newer = recorded.isdigit() and int(recorded) > version or found > version
        raise refused(
            f"{path} has {what} schema v{recorded or found}"
            + ("; upgrade Switchboard" if newer else "") + ". The file was left unchanged")
    return meta


# --------------------------------------------------------------------------- opening


def _connect(path: Path) -> sqlite3.Connection:
    conn = held_files.connect(path, sqlite_uri(path, mode="rw"), uri=True,
                              isolation_level=None, check_same_thread=False)
    conn.row_factory = sqlite3.Row
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    conn.execute(f"PRAGMA journal_size_limit = {WAL_SIZE_LIMIT_BYTES}")
    conn.execute("PRAGMA foreign_keys = OFF")
    conn.execute("PRAGMA synchronous = NORMAL")
    return conn


def _create(path: Path, now_ms: int) -> None:
    """Build the file beside ``path`` and link it into place (never over an existing one)."""
    from storage.session_schema import ddl

    # The folder holds prompts and command output: the person's own eyes only.
    private_dir(path.parent)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.creating")
    try:
        create_private_file(tmp)  # -wal/-shm take the database file's mode
        conn = sqlite3.connect(sqlite_uri(tmp, mode="rwc"), uri=True, isolation_level=None)
        try:
            conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("BEGIN IMMEDIATE")
            for statement in ddl():
                conn.execute(statement)
            created = iso(now_ms)
            conn.executemany("INSERT INTO schema_meta (key, value) VALUES (?, ?)", [
                ("schema_version", str(SCHEMA_VERSION)), ("created_by", CREATED_BY),
                ("created_at", created),
                ("switchboard_version_created", SWITCHBOARD_VERSION),
                ("switchboard_version_last_opened", SWITCHBOARD_VERSION)])
            conn.execute("COMMIT")
        finally:
            conn.close()  # the last connection checkpoints and removes tmp's -wal
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass  # another first hook won; its file is just as good
    finally:
        for leftover in (tmp, Path(f"{tmp}-wal"), Path(f"{tmp}-shm")):
            leftover.unlink(missing_ok=True)


def open_session_db(path: Path, *, now_ms: int | None = None,
                    create: bool = True) -> sqlite3.Connection:
    """A read-write connection to a diagnosed session file (created when missing).

    A full or read-only disk while creating or opening it is said as such.
    """
    try:
        return _open_session_db(Path(path), now_ms, create)
    except sqlite3.OperationalError as exc:
        failure = environment_failure(exc, path)
        if failure is None:
            raise
        raise failure from exc


def _open_session_db(path: Path, now_ms: int | None, create: bool) -> sqlite3.Connection:
    if not path.exists():
        if not create:
            raise SessionDbRefused(f"no session file at {path}", code="session_db_missing")
        _create(path, now_ms if now_ms is not None else time.time_ns() // 1_000_000)
    found = _check_header(path)
    conn = _connect(path)
    try:
        if found != SCHEMA_VERSION:
            _upgrade(conn, path, found)
        meta = _check_meta(conn, path)
        if meta.get("switchboard_version_last_opened") != SWITCHBOARD_VERSION:
            conn.execute("UPDATE schema_meta SET value = ? WHERE key = ?",
                         (SWITCHBOARD_VERSION, "switchboard_version_last_opened"))
    except BaseException:
        conn.close()
        raise
    return conn


def _upgrade(conn: sqlite3.Connection, path: Path, found: int) -> None:
    """V1 -> V2 in place: add the usage tables, then the version, in one transaction.

    Only tables are added (no row or V1 object changes), so there is nothing to back
    up; the first hook or reader that opens a V1 file read-write does it once, and a
    second one that raced it finds the file already at V2 inside its transaction.
    """
    from storage.session_schema import usage_ddl

    with _transaction(conn):
        now = conn.execute("PRAGMA user_version").fetchone()[0]
        if now == SCHEMA_VERSION:
            return
        if now != found:
            raise SessionDbRefused(f"{path} changed while it was being upgraded; it was "
                                   "left unchanged")
        _check_meta(conn, path, version=found)
        for statement in usage_ddl():
            conn.execute(statement)
        conn.execute("UPDATE schema_meta SET value = ? WHERE key = 'schema_version'",
                     (str(SCHEMA_VERSION),))
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


def open_session_db_readonly(path: Path) -> sqlite3.Connection:
    """A read-only connection for the detail views; never creates or changes the file.

    A file nobody has open (no ``-wal``) is read with ``immutable=1`` so not even
    -wal/-shm files appear beside it.
    """
    path = Path(path)
    if not path.exists():
        raise SessionDbRefused(f"no session file at {path}", code="session_db_missing")
    found = _check_header(path)
    live = Path(f"{path}-wal").exists()
    # URI-escape the path: safe_key's %XX must reach the file system as written.
    uri = sqlite_uri(path, mode="ro") if live else sqlite_uri(path, mode="ro", immutable=1)
    conn = held_files.connect(path, uri, uri=True, isolation_level=None,
                              check_same_thread=False)
    conn.row_factory = sqlite3.Row
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    try:
        _check_meta(conn, path, version=found)  # a V1 file is read as it is (no usage)
    except BaseException:
        conn.close()
        raise
    return conn


@contextmanager
def reading(root: Path, session_key: str) -> Iterator[sqlite3.Connection | None]:
    """The session's evidence file opened read-only and closed after, or None when the
    session has no file yet or the file is refused (``SessionDbRefused``: not ours, or
    newer). For readers to whom both mean "nothing recorded here"."""
    path = session_db_path(root, session_key)
    if not path.exists():
        yield None
        return
    try:
        conn = open_session_db_readonly(path)
    except SessionDbRefused:
        yield None
        return
    try:
        yield conn
    finally:
        conn.close()


def has_usage_tables(conn: sqlite3.Connection) -> bool:
    """A V1 file opened read-only has no usage tables: its usage is simply unknown."""
    return conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table'"
                        " AND name = 'turn_usage'").fetchone() is not None


@contextmanager
def _transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """BEGIN IMMEDIATE ... COMMIT; a full, read-only or busy disk becomes words."""
    try:
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                try:
                    conn.execute("ROLLBACK")
                except sqlite3.Error:
                    pass  # SQLite may have rolled back already (SQLITE_FULL)
                raise
            raise
    except sqlite3.OperationalError as exc:
        failure = environment_failure(exc, conn=conn)
        if failure is None:
            raise
        raise failure from exc


# --------------------------------------------------------------------------- values


def iso(ms: int) -> str:
    """UTC ISO-8601 with milliseconds: sorts as text, and SQLite's julianday() reads it."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms // 1000)) + f".{ms % 1000:03d}Z"


def new_id() -> str:
    """A random UUID4-shaped id without importing ``uuid`` on the hook path."""
    raw = bytearray(os.urandom(16))
    raw[6] = (raw[6] & 0x0F) | 0x40
    raw[8] = (raw[8] & 0x3F) | 0x80
    h = raw.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


# --------------------------------------------------------------------------- writers

TOOL_STARTED = "tool_started"
TOOL_FINISHED = "tool_finished"
PERMISSION_REQUESTED = "permission_requested"
TURN_ENDS = frozenset({"turn_stopped", "session_ended"})
#: hook kind -> the agent status it proves; other kinds keep the row's status.
AGENT_STATUS_BY_KIND = {
    "session_started": AGENT_STARTING,
    "prompt_submitted": AGENT_RUNNING, TOOL_STARTED: AGENT_RUNNING,
    TOOL_FINISHED: AGENT_RUNNING, PERMISSION_REQUESTED: AGENT_RUNNING,
    "session_ended": AGENT_COMPLETED,
}
_DURATION = ("MAX(0, CAST(round((julianday(?) - julianday(started_at)) * 86400000)"
             " AS INTEGER))")
_RUN_BY_ID = ("SELECT id FROM tool_runs WHERE session_id = ? AND status = ?"
              " AND json_extract(metadata_json, '$.tool_use_id') = ?"
              " ORDER BY started_at, rowid LIMIT 1")


def _ensure_session(conn: sqlite3.Connection, key: str, project_id: str, project_root: str,
                    provider: str, frame_id: str | None, at: str, kind: str) -> None:
    """The ``sessions`` row on first sight (from registry facts, never the payload)."""
    metadata = json.dumps({"frame_id": frame_id}) if frame_id else None
    conn.execute(
        "INSERT INTO sessions (id, project_id, project_root, title, status, created_at,"
        " updated_at, model_provider_id, metadata_json) VALUES (?, ?, ?, NULL, ?, ?, ?, ?, ?)"
        " ON CONFLICT(id) DO UPDATE SET updated_at = excluded.updated_at",
        (key, project_id, project_root, SESSION_ACTIVE, at, at, provider, metadata))
    if kind == "session_ended":
        conn.execute("UPDATE sessions SET exited_at = ? WHERE id = ?", (at, key))
    elif kind == "session_started":
        conn.execute("UPDATE sessions SET exited_at = NULL WHERE id = ?", (key,))


def upsert_agent(conn: sqlite3.Connection, agent_id: str, session_id: str, provider: str,
                 kind: str, at: str, model_id: str | None) -> None:
    """The provider session's one ``agents`` row, moved by what this hook proves.

    SessionStart says ``starting``, prompt and tool activity ``running``,
    SessionEnd ``completed``; any other hook keeps the status (a new row is
    ``running``: the agent evidently lives). Leaving a terminal status starts a
    new lifetime (``started_at`` now, ``completed_at`` cleared). Every hook is a
    heartbeat. ``model_id`` only ever comes from the payload and is kept when a
    later hook names none. Call inside a transaction.
    """
    assert conn.in_transaction, "upsert_agent runs inside record_hook_event's transaction"
    status = AGENT_STATUS_BY_KIND.get(kind)
    live = (AGENT_STARTING, AGENT_RUNNING)
    conn.execute(
        "INSERT INTO agents (id, session_id, type, status, model_id, started_at, completed_at,"
        " last_heartbeat_at) VALUES (:id, :session, :type, COALESCE(:status, :running),"
        " :model, :at, CASE WHEN :status = :completed THEN :at END, :at)"
        " ON CONFLICT(id) DO UPDATE SET"
        " started_at = CASE WHEN :status IN (:starting, :running)"
        "   AND status NOT IN (:starting, :running) THEN :at ELSE started_at END,"
        " completed_at = CASE WHEN :status = :completed THEN :at"
        "   WHEN :status IN (:starting, :running) THEN NULL ELSE completed_at END,"
        " status = COALESCE(:status, status),"
        " model_id = COALESCE(:model, model_id),"
        " last_heartbeat_at = MAX(COALESCE(last_heartbeat_at, ''), :at)",
        {"id": agent_id, "session": session_id, "type": provider, "status": status,
         "model": model_id, "at": at, "starting": live[0], "running": live[1],
         "completed": AGENT_COMPLETED})


SUBAGENT_STARTED, SUBAGENT_STOPPED = "subagent_started", "subagent_stopped"
SUBAGENT_KINDS = frozenset({SUBAGENT_STARTED, SUBAGENT_STOPPED})
SUBAGENTS_END_WITH = frozenset({"session_ended"})
"""A session's end takes its subagents with it. (Not SessionStart: Claude Code sends it
after ``/clear`` and a compaction too, while background subagents run on; a process
that died without SessionEnd leaves rows running, which the tree ignores while the
session is not live.)"""
SUBAGENT_TYPE = "subagent"
"""``agents.type`` of a subagent's row (the session's own row has the provider name)."""
AGENT_CANCELLED = "cancelled"


def subagent_row_id(session_key: str, subagent_id: str) -> str:
    """A subagent's ``agents.id``: the session key and the CLI's ``agent_id``."""
    return f"{session_key}/subagent/{subagent_id}"


def record_subagent(conn: sqlite3.Connection, session_key: str, kind: str,
                    subagent_id: str | None, subagent_type: str | None, at: str) -> None:
    """One subagent's lifetime in ``agents``: running from its SubagentStart, completed at
    its SubagentStop; every running one cancelled when the session ends.

    A stop without a start seen (hooks installed mid-run) is recorded completed, so the
    live count never goes below what the CLI said. An event without an ``agent_id``
    cannot say which subagent it is and changes nothing. Call inside a transaction.
    """
    assert conn.in_transaction, "record_subagent runs inside record_hook_event's transaction"
    if kind in SUBAGENTS_END_WITH:
        conn.execute("UPDATE agents SET status = ?, completed_at = ? WHERE session_id = ?"
                     " AND type = ? AND status = ?",
                     (AGENT_CANCELLED, at, session_key, SUBAGENT_TYPE, AGENT_RUNNING))
        return
    if subagent_id is None:
        return
    row_id = subagent_row_id(session_key, subagent_id)
    meta = json.dumps({"agent_id": subagent_id, "agent_type": subagent_type},
                      sort_keys=True)
    if kind == SUBAGENT_STARTED:
        conn.execute(
            "INSERT INTO agents (id, session_id, type, status, started_at, last_heartbeat_at,"
            " metadata_json) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET"
            " status = excluded.status, started_at = excluded.started_at,"
            " completed_at = NULL, last_heartbeat_at = excluded.last_heartbeat_at",
            (row_id, session_key, SUBAGENT_TYPE, AGENT_RUNNING, at, at, meta))
        return
    conn.execute(
        "INSERT INTO agents (id, session_id, type, status, started_at, completed_at,"
        " last_heartbeat_at, metadata_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
        " ON CONFLICT(id) DO UPDATE SET status = excluded.status,"
        " completed_at = excluded.completed_at, last_heartbeat_at = excluded.completed_at",
        (row_id, session_key, SUBAGENT_TYPE, AGENT_COMPLETED, at, at, at, meta))


def running_subagents(conn: sqlite3.Connection, session_key: str) -> int:
    """How many subagents of the session are running now (started, not stopped)."""
    row = conn.execute("SELECT count(*) FROM agents WHERE session_id = ? AND type = ?"
                       " AND status = ?", (session_key, SUBAGENT_TYPE, AGENT_RUNNING)
                       ).fetchone()
    return int(row[0])


def _metadata(turn_id: str | None, tool_use_id: str | None, **more: object) -> str | None:
    facts = {"turn_id": turn_id, "tool_use_id": tool_use_id, **more}
    kept = {k: v for k, v in facts.items() if v is not None}
    return json.dumps(kept, sort_keys=True) if kept else None


def start_tool_run(conn: sqlite3.Connection, session_id: str, tool_name: str,
                   turn_id: str | None, at: str, *, tool_use_id: str | None = None,
                   agent_id: str | None = None) -> str:
    """PreToolUse: a ``running`` tool run. ``input_json`` is ``'{}'``: the spec makes it
    NOT NULL, and we deliberately keep no tool input. The provider's tool-use id
    goes to ``metadata_json`` (the spec has no column for it) so its
    PostToolUse finds exactly this run. Call inside a transaction."""
    assert conn.in_transaction, "start_tool_run runs inside record_hook_event's transaction"
    run_id = new_id()
    conn.execute(
        "INSERT INTO tool_runs (id, session_id, agent_id, tool_name, status, input_json,"
        " started_at, metadata_json) VALUES (?, ?, ?, ?, ?, '{}', ?, ?)",
        (run_id, session_id, agent_id, tool_name, RUNNING, at,
         _metadata(turn_id, tool_use_id)))
    return run_id


def _running_run(conn: sqlite3.Connection, session_id: str, tool_name: str,
                 tool_use_id: str | None) -> str | None:
    """The run a finish closes: the one with its tool-use id; without an id, the
    oldest running run of that tool. An id never closes a run started with a
    different id, but may close an id-less start of the same tool (its start
    predates ids, or its id was unusable)."""
    if tool_use_id is not None:
        row = conn.execute(_RUN_BY_ID, (session_id, RUNNING, tool_use_id)).fetchone()
        if row is not None:
            return row[0]
        row = conn.execute(
            "SELECT id FROM tool_runs WHERE session_id = ? AND tool_name = ? AND status = ?"
            " AND json_extract(metadata_json, '$.tool_use_id') IS NULL"
            " ORDER BY started_at, rowid LIMIT 1", (session_id, tool_name, RUNNING)).fetchone()
    else:
        row = conn.execute(
            "SELECT id FROM tool_runs WHERE session_id = ? AND tool_name = ? AND status = ?"
            " ORDER BY started_at, rowid LIMIT 1", (session_id, tool_name, RUNNING)).fetchone()
    return row[0] if row is not None else None


def finish_tool_run(conn: sqlite3.Connection, session_id: str, tool_name: str,
                    turn_id: str | None, at: str, *, failed: bool,
                    tool_use_id: str | None = None, agent_id: str | None = None) -> str:
    """PostToolUse(+Failure): the run with the same tool-use id becomes ok/error.

    Without an id, runs pair first-in first-out by tool name (see ``_running_run``);
    a finish with no running start is recorded as a finished run of unknown
    duration. Call inside a transaction.
    """
    assert conn.in_transaction, "finish_tool_run runs inside record_hook_event's transaction"
    status = ERROR if failed else OK
    run_id = _running_run(conn, session_id, tool_name, tool_use_id)
    if run_id is None:
        run_id = new_id()
        conn.execute(
            "INSERT INTO tool_runs (id, session_id, agent_id, tool_name, status, input_json,"
            " started_at, completed_at, metadata_json) VALUES (?, ?, ?, ?, ?, '{}', ?, ?, ?)",
            (run_id, session_id, agent_id, tool_name, status, at, at,
             _metadata(turn_id, tool_use_id, start_seen=False)))
        return run_id
    conn.execute(f"UPDATE tool_runs SET status = ?, completed_at = ?, duration_ms = {_DURATION}"
                 " WHERE id = ?", (status, at, at, run_id))
    return run_id


def _cancel_running(conn: sqlite3.Connection, session_id: str, at: str) -> None:
    """A turn or session that ended leaves no tool running (a denied permission never
    sends PostToolUse)."""
    conn.execute(f"UPDATE tool_runs SET status = ?, completed_at = ?, duration_ms = {_DURATION}"
                 " WHERE session_id = ? AND status = ?",
                 (CANCELLED, at, at, session_id, RUNNING))


def record_hook_event(conn: sqlite3.Connection, *, session_key: str, provider: str,
                      project_id: str, project_root: str, event: str, kind: str,
                      now_ms: int, frame_id: str | None = None, turn_id: str | None = None,
                      tool_name: str | None = None, tool_use_id: str | None = None,
                      model_id: str | None = None, notification_type: str | None = None,
                      activity: str | None = None, failed: bool = False,
                      command: CommandRecord | None = None, prompt: str | None = None,
                      task_id: str | None = None, subagent_id: str | None = None,
                      subagent_type: str | None = None) -> str:
    """One hook event and its domain updates, in one transaction; returns the event id.

    ``type`` is the normalized hook kind; ``payload_json`` holds only the
    PAYLOAD_KEYS facts (names, ids, closed values), whatever the caller had.
    The session's agent (``agents.id`` = the session key: one provider session
    is one agent) is upserted and linked from the event and its tool run.
    A tool event's ``command`` (its artifact files already renamed into place)
    becomes the tool run's command run, with its artifact and diagnostic rows;
    a prompt's text becomes a ``messages`` row: both in this same transaction,
    and only in this session's own file. A subagent's start and stop move its own
    ``agents`` row (``record_subagent``).
    """
    at = iso(now_ms)
    key = agent_id = session_key
    route = {"session": key, "turn": turn_id} if turn_id else {"session": key}
    route_text = f"session/{key}/turn/{turn_id}" if turn_id else f"session/{key}"
    facts = dict(zip(PAYLOAD_KEYS, (event, kind, tool_name, tool_use_id, turn_id,
                                    notification_type, activity), strict=True))
    payload = {k: v for k, v in facts.items() if v is not None}
    event_id = new_id()
    with _transaction(conn):
        _ensure_session(conn, key, project_id, project_root, provider, frame_id, at, kind)
        upsert_agent(conn, agent_id, key, provider, kind, at, model_id)
        tool_run_id = None
        if kind == TOOL_STARTED and tool_name:
            tool_run_id = start_tool_run(conn, key, tool_name, turn_id, at,
                                         tool_use_id=tool_use_id, agent_id=agent_id)
        elif kind == TOOL_FINISHED and tool_name:
            tool_run_id = finish_tool_run(conn, key, tool_name, turn_id, at, failed=failed,
                                          tool_use_id=tool_use_id, agent_id=agent_id)
        elif kind == PERMISSION_REQUESTED and tool_use_id is not None:
            # Link the permission to its run only when the id says which; never guess.
            row = conn.execute(_RUN_BY_ID, (key, RUNNING, tool_use_id)).fetchone()
            tool_run_id = row[0] if row is not None else None
        elif kind in TURN_ENDS:
            _cancel_running(conn, key, at)
        command_run_id = None
        if command is not None and kind in (TOOL_STARTED, TOOL_FINISHED):
            from storage.session_evidence import write_command

            command_run_id = write_command(conn, session_id=key, agent_id=agent_id,
                                           tool_run_id=tool_run_id, task_id=task_id,
                                           record=command, at_ms=now_ms, iso=iso,
                                           new_id=new_id)
        if kind in SUBAGENT_KINDS or kind in SUBAGENTS_END_WITH:
            record_subagent(conn, key, kind, subagent_id, subagent_type, at)
        if prompt is not None and kind == "prompt_submitted":
            conn.execute(
                "INSERT INTO messages (id, session_id, role, canonical_format, content_json,"
                " route_json, created_at, metadata_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (new_id(), key, MESSAGE_USER, FORMAT_ANTHROPIC,
                 json.dumps([{"type": "text", "text": prompt}], ensure_ascii=False),
                 json.dumps(route, separators=(",", ":")), at,
                 json.dumps({"event_id": event_id, "turn_id": turn_id}, sort_keys=True)))
        conn.execute(
            "INSERT INTO events (id, session_id, type, version, timestamp, source_kind,"
            " source_id, agent_type, task_id, agent_id, tool_run_id, command_run_id,"
            " route_json, route_text, payload_json)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (event_id, key, kind, EVENT_VERSION, at, SOURCE_HOOK, event, provider, task_id,
             agent_id, tool_run_id, command_run_id, json.dumps(route, separators=(",", ":")),
             route_text, json.dumps(payload, separators=(",", ":"), sort_keys=True)))
    return event_id
