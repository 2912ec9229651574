"""Command runs, their output artifacts and diagnostics in a session's evidence file.

The spec's rules, kept here in one place:

- **Artifacts**: temp file -> atomic rename -> DB record. A file is written
  (0600, in the session's own 0700 ``artifacts`` folder) and renamed into
  place before the row naming it is inserted, so a row never points at a
  half-written file; a file whose row never committed is an orphan that
  ``sweep_orphans`` removes, never a dangling reference.
- **Bounded**: at most ``ARTIFACT_CAP`` bytes per artifact (the head and the
  tail are kept, the middle replaced by a marker saying how much was cut: a
  failure's summary is usually at the end) and ``SESSION_CAP`` bytes of
  artifacts per session (past it, output is not stored and the command run's
  metadata says so).
- **One transaction**: the command run, its artifact rows and its diagnostics
  commit with the hook event that carried them (``session_db.record_hook_event``
  calls ``write_command`` inside its transaction). A hook that dies between
  the rename and the commit leaves an unnamed file; the session's end sweeps
  those (``sweep_orphans``).

Stdlib only (the hook path imports it on tool events).
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from core.model.digest import sha256_hex

ARTIFACT_CAP = 256 * 1024
SESSION_CAP = 16 * 1024 * 1024
HEAD_KEEP = 32 * 1024
ARTIFACTS_DIR = "artifacts"
ORPHAN_GRACE_S = 60.0
ARTIFACT_LOG = "log"  # ArtifactType.LOG
SEVERITY_BY_DIAGNOSTIC = {"error": "error", "warning": "warning", "note": "info"}
#: parsed_diagnostics_json "state": parsed inline, waiting for the detached parser, or
#: nothing to parse (no output stored).
PARSED, PENDING, NO_OUTPUT = "parsed", "pending", "no_output"


class ArtifactFile(NamedTuple):
    """One output stream, written and renamed into place, not yet recorded."""

    artifact_id: str
    stream: str  # stdout | stderr | output
    path: str
    size_bytes: int
    sha256: str
    original_bytes: int
    truncated: bool


class DiagnosticRow(NamedTuple):
    """One parsed diagnostic, already mapped to the spec's closed severities."""

    artifact_id: str | None
    language: str | None
    toolchain: str
    severity: str
    file: str | None
    line: int | None
    column: int | None
    code: str | None
    message: str
    semantic_signature: str


class CommandRecord(NamedTuple):
    """What a tool hook says about a shell command, ready to be written."""

    command: str
    cwd: str
    finished: bool
    exit_code: int | None = None
    exit_source: str | None = None
    duration_ms: int | None = None
    outcome: str = "unknown"
    interrupted: bool = False
    artifacts: tuple[ArtifactFile, ...] = ()
    diagnostics: tuple[DiagnosticRow, ...] = ()
    parse_state: str = NO_OUTPUT
    dropped_streams: tuple[str, ...] = ()


# --------------------------------------------------------------------------- files


def artifacts_dir(session_dir: Path) -> Path:
    folder = Path(session_dir) / ARTIFACTS_DIR
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    return folder


def bound(data: bytes, cap: int = ARTIFACT_CAP) -> tuple[bytes, bool]:
    """``data`` within ``cap`` bytes: head + marker + tail when it is longer."""
    if len(data) <= cap:
        return data, False
    head = min(HEAD_KEEP, cap // 4)
    marker = (f"\n[... {{}} bytes cut by Switchboard: this output was {len(data)} bytes, "
              f"stored at most {cap} ...]\n")
    # The marker's own length depends on the number it prints; size it for the widest.
    room = cap - head - len(marker.format(len(data)).encode())
    tail = max(0, room)
    cut = len(data) - head - tail
    return data[:head] + marker.format(cut).encode() + data[len(data) - tail:], True


def write_artifact_file(session_dir: Path, artifact_id: str, stream: str, text: str,
                        budget: int) -> ArtifactFile | None:
    """Write one stream (temp -> rename); None when the session budget is spent.

    No fsync: evidence is best effort, and a hook must not wait for the disk; the
    rename keeps a reader from ever seeing a partial file."""
    data = text.encode("utf-8", "replace")
    cap = min(ARTIFACT_CAP, budget)
    if cap <= 1024:  # not even a marker's worth left: store nothing
        return None
    stored, truncated = bound(data, cap)
    folder = artifacts_dir(session_dir)
    final = folder / f"{artifact_id}.{stream}.log"
    tmp = folder / f".{artifact_id}.{stream}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(stored)
        os.replace(tmp, final)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return ArtifactFile(artifact_id, stream, str(final), len(stored),
                        sha256_hex(stored), len(data), truncated)


def session_artifact_bytes(conn: sqlite3.Connection, session_id: str) -> int:
    row = conn.execute("SELECT COALESCE(SUM(size_bytes), 0) FROM artifacts"
                       " WHERE session_id = ?", (session_id,)).fetchone()
    return int(row[0])


def sweep_orphans(conn: sqlite3.Connection, session_dir: Path, now_s: float,
                  grace_s: float = ORPHAN_GRACE_S) -> list[str]:
    """Remove artifact files no row names (a hook that died between the rename and its
    commit). Files younger than ``grace_s`` are left: a parallel hook may be about to
    commit the row that names them."""
    folder = Path(session_dir) / ARTIFACTS_DIR
    if not folder.is_dir():
        return []
    known = {r[0] for r in conn.execute("SELECT path FROM artifacts")}
    removed = []
    for path in folder.iterdir():
        try:
            young = now_s - path.stat().st_mtime < grace_s
        except FileNotFoundError:
            continue
        if str(path) not in known and not young:
            path.unlink(missing_ok=True)
            removed.append(path.name)
    return sorted(removed)


# --------------------------------------------------------------------------- rows


def _json(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def insert_artifact(conn: sqlite3.Connection, session_id: str, artifact: ArtifactFile, *,
                    agent_id: str | None, tool_run_id: str | None, command_run_id: str,
                    at: str) -> None:
    conn.execute(
        "INSERT INTO artifacts (id, session_id, type, uri, path, original_name, size_bytes,"
        " sha256, agent_id, tool_run_id, command_run_id, associated_entity_type,"
        " associated_entity_id, created_at, metadata_json)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'command_run', ?, ?, ?)",
        (artifact.artifact_id, session_id, ARTIFACT_LOG, Path(artifact.path).as_uri(),
         artifact.path, artifact.stream, artifact.size_bytes, artifact.sha256, agent_id,
         tool_run_id, command_run_id, command_run_id, at,
         _json({"stream": artifact.stream, "original_bytes": artifact.original_bytes,
                "truncated": artifact.truncated})))


def insert_diagnostics(conn: sqlite3.Connection, session_id: str, rows: tuple[DiagnosticRow, ...]
                       | list[DiagnosticRow], *, agent_id: str | None, command_run_id: str,
                       task_id: str | None, at: str,
                       new_id: Callable[[], str]) -> None:
    conn.executemany(
        "INSERT INTO diagnostics (id, session_id, task_id, agent_id, command_run_id,"
        " artifact_id, language, toolchain, severity, file, line, column, code, message,"
        " semantic_signature, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [(new_id(), session_id, task_id, agent_id, command_run_id, d.artifact_id, d.language,
          d.toolchain, d.severity, d.file, d.line, d.column, d.code, d.message,
          d.semantic_signature, at) for d in rows])


def parsed_summary(state: str, rows: tuple[DiagnosticRow, ...] | list[DiagnosticRow]) -> str:
    signatures = sorted({d.semantic_signature for d in rows})
    return _json({"state": state, "count": len(rows), "signatures": signatures})


def _stream_ids(record: CommandRecord) -> dict[str, str]:
    return {a.stream: a.artifact_id for a in record.artifacts}


def write_command(conn: sqlite3.Connection, *, session_id: str, agent_id: str,
                  tool_run_id: str | None, task_id: str | None, record: CommandRecord,
                  at_ms: int, iso: Callable[[int], str],
                  new_id: Callable[[], str]) -> str:
    """Insert or complete the command run of ``tool_run_id``; returns its id.

    A start (PreToolUse) inserts the run; its finish completes the run with
    the same tool run, or inserts a finished one when the start was never seen
    (its start is then ``at - duration`` when the provider gave a duration).
    Call inside the hook event's transaction.
    """
    assert conn.in_transaction, "write_command runs inside record_hook_event's transaction"
    at = iso(at_ms)
    row = conn.execute("SELECT id, started_at FROM command_runs WHERE tool_run_id = ?"
                       " ORDER BY started_at DESC LIMIT 1", (tool_run_id,)).fetchone() \
        if tool_run_id is not None else None
    if not record.finished:
        if row is not None:
            return row[0]
        run_id = new_id()
        conn.execute(
            "INSERT INTO command_runs (id, session_id, task_id, agent_id, tool_run_id, command,"
            " cwd, started_at, metadata_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (run_id, session_id, task_id, agent_id, tool_run_id, record.command, record.cwd,
             at, _json({"exit_code": "unknown", "outcome": "running"})))
        return run_id
    meta: dict[str, object] = {"outcome": record.outcome}
    meta["exit_code"] = "provided" if record.exit_code is not None else "unknown"
    if record.exit_source:
        meta["exit_source"] = record.exit_source
    if record.interrupted:
        meta["interrupted"] = True
    if record.dropped_streams:
        meta["not_stored"] = {"streams": list(record.dropped_streams),
                              "reason": f"session artifact cap ({SESSION_CAP} bytes) reached"}
    streams = _stream_ids(record)
    summary = parsed_summary(record.parse_state, record.diagnostics)
    if row is None:
        run_id = new_id()
        start_seen = False
        started = iso(at_ms - record.duration_ms) if record.duration_ms is not None else at
        meta["start_seen"] = start_seen
        conn.execute(
            "INSERT INTO command_runs (id, session_id, task_id, agent_id, tool_run_id, command,"
            " cwd, exit_code, stdout_artifact_id, stderr_artifact_id, combined_artifact_id,"
            " started_at, completed_at, duration_ms, parsed_diagnostics_json, metadata_json)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (run_id, session_id, task_id, agent_id, tool_run_id, record.command, record.cwd,
             record.exit_code, streams.get("stdout"), streams.get("stderr"),
             streams.get("output"), started, at, record.duration_ms, summary, _json(meta)))
    else:
        run_id = row[0]
        duration = record.duration_ms
        if duration is None:
            duration = conn.execute(
                "SELECT MAX(0, CAST(round((julianday(?) - julianday(?)) * 86400000)"
                " AS INTEGER))", (at, row[1])).fetchone()[0]
        meta["duration_source"] = "provider" if record.duration_ms is not None else "hooks"
        conn.execute(
            "UPDATE command_runs SET exit_code = ?, stdout_artifact_id = ?,"
            " stderr_artifact_id = ?, combined_artifact_id = ?, completed_at = ?,"
            " duration_ms = ?, parsed_diagnostics_json = ?, metadata_json = ? WHERE id = ?",
            (record.exit_code, streams.get("stdout"), streams.get("stderr"),
             streams.get("output"), at, duration, summary, _json(meta), run_id))
    for artifact in record.artifacts:
        insert_artifact(conn, session_id, artifact, agent_id=agent_id, tool_run_id=tool_run_id,
                        command_run_id=run_id, at=at)
    insert_diagnostics(conn, session_id, record.diagnostics, agent_id=agent_id,
                       command_run_id=run_id, task_id=task_id, at=at, new_id=new_id)
    return run_id


def complete_parse(conn: sqlite3.Connection, session_id: str, command_run_id: str,
                   rows: list[DiagnosticRow], at: str,
                   new_id: Callable[[], str]) -> bool:
    """The detached parser's result for a run whose parse was deferred (one transaction).

    Returns False when the run was already parsed (a second worker): nothing changes.
    """
    conn.execute("BEGIN IMMEDIATE")
    try:
        row = conn.execute("SELECT agent_id, task_id, parsed_diagnostics_json FROM command_runs"
                           " WHERE id = ?", (command_run_id,)).fetchone()
        state = json.loads(row[2]).get("state") if row is not None and row[2] else None
        if state != PENDING:
            conn.execute("ROLLBACK")
            return False
        insert_diagnostics(conn, session_id, rows, agent_id=row[0], command_run_id=command_run_id,
                           task_id=row[1], at=at, new_id=new_id)
        conn.execute("UPDATE command_runs SET parsed_diagnostics_json = ? WHERE id = ?",
                     (parsed_summary(PARSED, rows), command_run_id))
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return True
