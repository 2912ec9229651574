"""The project-level evidence files: ``debug-records.db`` and ``learned-memory.db``.

Schemas are the spec's section 20 verbatim (plus ``schema_meta`` for the
file's identity, and CHECK constraints for the closed enums of section 21).
They live under ``$SWITCHBOARD_HOME/projects/<safe project id>/`` rather than
in the person's checkout (``<project>/.air/local`` in the spec): Switchboard
never writes into the code it manages, and the session files already live
under the home.

Opening follows ``storage.session_db`` exactly: the header is diagnosed before
SQLite opens the file (foreign, newer or non-WAL files are refused and left
byte-identical), ``schema_meta`` before any write, a new file is built beside
the target and linked into place, WAL + synchronous NORMAL + foreign_keys OFF.
Each kind has its own application id, so one kind of file is never mistaken
for the other.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from core.model.errors import RegistryUnavailable
from storage import held_files
from storage.session_db import (
    BUSY_TIMEOUT_MS,
    CREATED_BY,
    SWITCHBOARD_VERSION,
    _check_header,
    _check_meta,
    iso,
    new_id,
    safe_key,
)
from storage.uri import sqlite_uri

SCHEMA_VERSION = 1
"""The project-level files' own version (the session files' moved to 2 alone)."""


class ProjectDbRefused(RegistryUnavailable):
    """The project-level file is not ours (or is newer); nothing was written to it."""

    code = "project_db_refused"


class MemoryType(StrEnum):
    PROJECT_RULE = "project_rule"
    TOOLCHAIN_RULE = "toolchain_rule"
    SKILL_UPDATE = "skill_update"
    DEBUG_EXPERIENCE = "debug_experience"


class MemoryStatus(StrEnum):
    CANDIDATE = "candidate"
    PROMOTED = "promoted"
    ARCHIVED = "archived"
    REJECTED = "rejected"


@dataclass(frozen=True)
class ProjectDbKind:
    file_name: str
    application_id: int
    what: str
    ddl: tuple[str, ...]


_META = "CREATE TABLE schema_meta (\n  key TEXT PRIMARY KEY,\n  value TEXT NOT NULL\n)"

DEBUG_RECORDS = ProjectDbKind("debug-records.db", 0x53574452, "debug-records", (  # "SWDR"
    _META,
    """CREATE TABLE debug_records (
  id TEXT PRIMARY KEY,
  task_id TEXT,
  failure_signature TEXT NOT NULL,
  summary TEXT NOT NULL,
  root_cause TEXT,
  fix_ref TEXT,
  evidence_json TEXT,
  verification_json TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  metadata_json TEXT
)""",
    "CREATE INDEX idx_debug_records_signature ON debug_records(failure_signature)",
    "CREATE INDEX idx_debug_records_task ON debug_records(task_id)",
))


def _closed(column: str, values: type[StrEnum]) -> str:
    allowed = ", ".join(f"'{v.value}'" for v in values)
    return f",\n  CONSTRAINT learned_memories_{column}_closed CHECK ({column} IN ({allowed}))"


LEARNED_MEMORY = ProjectDbKind("learned-memory.db", 0x53574C4D, "learned-memory", (  # "SWLM"
    _META,
    """CREATE TABLE learned_memories (
  id TEXT PRIMARY KEY,
  memory_type TEXT NOT NULL,
  summary TEXT NOT NULL,
  content TEXT,
  source_entity_type TEXT,
  source_entity_id TEXT,
  status TEXT NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  metadata_json TEXT"""
    + _closed("memory_type", MemoryType) + _closed("status", MemoryStatus) + "\n)",
    "CREATE INDEX idx_learned_memories_type ON learned_memories(memory_type)",
    "CREATE INDEX idx_learned_memories_status ON learned_memories(status)",
))


def project_dir(root: Path, project_id: str) -> Path:
    return Path(root) / "projects" / safe_key(project_id)


def project_db_path(root: Path, project_id: str, kind: ProjectDbKind) -> Path:
    return project_dir(root, project_id) / kind.file_name


def _create(path: Path, kind: ProjectDbKind, now_ms: int) -> None:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.creating")
    try:
        os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        conn = sqlite3.connect(sqlite_uri(tmp, mode="rw"), uri=True, isolation_level=None)
        try:
            conn.execute(f"PRAGMA application_id = {kind.application_id}")
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("BEGIN IMMEDIATE")
            for statement in kind.ddl:
                conn.execute(statement)
            conn.executemany("INSERT INTO schema_meta (key, value) VALUES (?, ?)", [
                ("schema_version", str(SCHEMA_VERSION)), ("created_by", CREATED_BY),
                ("created_at", iso(now_ms)),
                ("switchboard_version_created", SWITCHBOARD_VERSION),
                ("switchboard_version_last_opened", SWITCHBOARD_VERSION)])
            conn.execute("COMMIT")
        finally:
            conn.close()
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass  # another writer created it first; its file is just as good
    finally:
        for leftover in (tmp, Path(f"{tmp}-wal"), Path(f"{tmp}-shm")):
            leftover.unlink(missing_ok=True)


def open_project_db(path: Path, kind: ProjectDbKind, *, create: bool = True,
                    readonly: bool = False, now_ms: int | None = None) -> sqlite3.Connection:
    """A diagnosed connection (created when missing unless ``create`` is False)."""
    path = Path(path)
    if not path.exists():
        if not create or readonly:
            raise ProjectDbRefused(f"no {kind.what} file at {path}", code="project_db_missing")
        _create(path, kind, now_ms if now_ms is not None else time.time_ns() // 1_000_000)
    _check_header(path, kind.application_id, kind.what, ProjectDbRefused, SCHEMA_VERSION, ())
    if readonly:
        live = Path(f"{path}-wal").exists()
        uri = sqlite_uri(path, mode="ro") if live else sqlite_uri(path, mode="ro", immutable=1)
    else:
        uri = sqlite_uri(path, mode="rw")
    conn = held_files.connect(path, uri, uri=True, isolation_level=None,
                              check_same_thread=False)
    conn.row_factory = sqlite3.Row
    try:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        if not readonly:
            conn.execute("PRAGMA foreign_keys = OFF")
            conn.execute("PRAGMA synchronous = NORMAL")
        _check_meta(conn, path, kind.what, ProjectDbRefused, SCHEMA_VERSION)
    except BaseException:
        conn.close()
        raise
    return conn


# --------------------------------------------------------------------------- writers


@dataclass(frozen=True)
class DebugRecord:
    """A failure that was seen failing and later passing: what fixed it."""

    record_id: str
    task_id: str | None
    failure_signature: str
    summary: str
    fix_ref: str
    evidence: dict[str, object]
    verification: dict[str, object]
    metadata: dict[str, object]


def _json(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def write_debug_record(conn: sqlite3.Connection, record: DebugRecord, now_ms: int) -> bool:
    """Insert once (the id is derived from what it records); False when it existed."""
    at = iso(now_ms)
    cursor = conn.execute(
        "INSERT OR IGNORE INTO debug_records (id, task_id, failure_signature, summary,"
        " root_cause, fix_ref, evidence_json, verification_json, created_at, updated_at,"
        " metadata_json) VALUES (?, ?, ?, ?, NULL, ?, ?, ?, ?, ?, ?)",
        (record.record_id, record.task_id, record.failure_signature, record.summary,
         record.fix_ref, _json(record.evidence), _json(record.verification), at, at,
         _json(record.metadata)))
    return cursor.rowcount == 1


def attach_handoff(conn: sqlite3.Connection, frame_id: str, summary: str,
                   next_action: str | None, now_ms: int) -> int:
    """The frame's handoff summary joins its debug records (what the agent said fixed it)."""
    rows = conn.execute("SELECT id, metadata_json FROM debug_records WHERE"
                        " json_extract(metadata_json, '$.frame_id') = ?", (frame_id,)).fetchall()
    for row in rows:
        meta = json.loads(row["metadata_json"] or "{}")
        meta["handoff"] = {"summary": summary, "next_action": next_action}
        conn.execute("UPDATE debug_records SET metadata_json = ?, updated_at = ? WHERE id = ?",
                     (_json(meta), iso(now_ms), row["id"]))
    return len(rows)


def add_memory_candidate(conn: sqlite3.Connection, *, memory_type: MemoryType, summary: str,
                         content: str | None, source_type: str, source_id: str,
                         now_ms: int) -> str:
    """A ``candidate`` memory: promotion is the person's decision, never automatic."""
    memory_id = new_id()
    at = iso(now_ms)
    conn.execute(
        "INSERT INTO learned_memories (id, memory_type, summary, content, source_entity_type,"
        " source_entity_id, status, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (memory_id, memory_type.value, summary, content, source_type, source_id,
         MemoryStatus.CANDIDATE.value, at, at))
    return memory_id
