"""Debug records: a failure seen failing, then passing, in the same frame's session.

When a command run passes, the earlier failing runs of the same command in
this session (since its previous pass) are what it fixed. Each failure
signature those runs showed (their diagnostics' semantic signatures, or, for
output in no known shape, the command's own signature) that the passing run
no longer shows becomes one ``debug_records`` row in the project's
``debug-records.db``: the signature, the frame, the failing and passing runs
with their artifacts, and later the frame's handoff summary. Record ids are
derived from (session, passing run, signature), so a second look writes
nothing new.

Scope: one session file is one attempt of a frame; a failure in one session
and its pass in a later session of the same frame are not paired (see
docs/decisions.md, "evidence").
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING

from core.model.digest import sha256_hex

if TYPE_CHECKING:
    from core.config.home import Home
    from storage.project_db import DebugRecord


def command_signature(command: str) -> str:
    """The failure signature of a run whose output showed no known diagnostic."""
    normalized = " ".join(command.split())
    return "command:" + sha256_hex(normalized.encode())


def _record_id(*parts: str) -> str:
    h = sha256_hex("\x1f".join(parts).encode())
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-8{h[17:20]}-{h[20:32]}"


def _outcome(row: sqlite3.Row) -> str | None:
    try:
        return json.loads(row["metadata_json"] or "{}").get("outcome")
    except ValueError:
        return None


def _signatures(conn: sqlite3.Connection, run_ids: list[str]) -> dict[str, dict[str, object]]:
    if not run_ids:
        return {}
    marks = ", ".join("?" for _ in run_ids)
    found: dict[str, dict[str, object]] = {}
    ids_of: dict[str, list[str]] = {}  # the same lists as found[...]["diagnostics"], typed
    for row in conn.execute(
            "SELECT id, command_run_id, artifact_id, toolchain, code, file, message,"
            f" semantic_signature FROM diagnostics WHERE command_run_id IN ({marks})"
            " ORDER BY created_at, rowid", run_ids):
        ids = ids_of.setdefault(row["semantic_signature"], [])
        found.setdefault(row["semantic_signature"], {
            "toolchain": row["toolchain"], "code": row["code"], "file": row["file"],
            "message": row["message"], "diagnostics": ids})
        ids.append(row["id"])
    return found


def _parse_pending(row: sqlite3.Row) -> bool:
    try:
        return json.loads(row["parsed_diagnostics_json"] or "{}").get("state") == "pending"
    except ValueError:
        return False


def later_pass(conn: sqlite3.Connection, session_key: str, run_id: str) -> str | None:
    """The first passing run of the same command after ``run_id`` (a detached parse of a
    failing run that finished after its fix had already been seen)."""
    row = conn.execute(
        "SELECT p.id FROM command_runs p JOIN command_runs f ON f.id = ?"
        " WHERE p.session_id = ? AND p.command = f.command AND p.started_at >= f.started_at"
        " AND p.id != f.id AND json_extract(p.metadata_json, '$.outcome') = 'passed'"
        " ORDER BY p.started_at, p.rowid LIMIT 1", (run_id, session_key)).fetchone()
    return row[0] if row else None


def fixes(conn: sqlite3.Connection, session_key: str, run_id: str,
          frame_id: str | None) -> list[DebugRecord]:
    """The debug records the passing run ``run_id`` proves (none unless it passed)."""
    run = conn.execute("SELECT * FROM command_runs WHERE id = ?", (run_id,)).fetchone()
    if run is None or _outcome(run) != "passed":
        return []
    earlier = conn.execute(
        "SELECT * FROM command_runs WHERE session_id = ? AND command = ? AND id != ?"
        " AND started_at <= ? AND completed_at IS NOT NULL ORDER BY started_at DESC, rowid DESC",
        (session_key, run["command"], run_id, run["started_at"])).fetchall()
    failing = []
    for row in earlier:
        outcome = _outcome(row)
        if outcome == "passed":
            break  # failures before an earlier pass were that pass's to record
        if outcome == "failed":
            failing.append(row)
    if not failing or any(_parse_pending(r) for r in failing):
        return []  # a detached parse is still running: its worker decides (later_pass)
    from storage.project_db import DebugRecord  # only now: a plain pass imports nothing

    failing_ids = [r["id"] for r in failing]
    before = _signatures(conn, failing_ids)
    if not before:
        before = {command_signature(run["command"]): {"message": "the command failed",
                                                      "diagnostics": []}}
    still = set(_signatures(conn, [run_id]))
    artifacts = [r[0] for r in conn.execute(
        "SELECT id FROM artifacts WHERE command_run_id IN"
        f" ({', '.join('?' for _ in failing_ids)})", failing_ids)]
    task = conn.execute("SELECT id FROM tasks WHERE id = ?", (frame_id,)).fetchone() \
        if frame_id else None
    records = []
    for signature, seen in before.items():
        if signature in still:
            continue
        what = " ".join(str(seen[k]) for k in ("code", "message") if seen.get(k))
        records.append(DebugRecord(
            record_id=_record_id(session_key, run_id, signature),
            task_id=task[0] if task else None,
            failure_signature=signature,
            summary=(f"`{run['command'][:200]}` failed ({what[:300]}) and passed "
                     f"{len(failing)} run(s) later"),
            fix_ref=f"frame/{frame_id or '-'}/session/{session_key}/command_run/{run_id}",
            evidence={"session_key": session_key, "failing_command_runs": failing_ids,
                      "artifacts": artifacts, "diagnostics": seen["diagnostics"],
                      "where": {k: seen.get(k) for k in ("toolchain", "file")}},
            verification={"command_run": run_id, "command": run["command"],
                          "exit_code": run["exit_code"], "outcome": "passed",
                          "completed_at": run["completed_at"]},
            metadata={"frame_id": frame_id, "session_key": session_key},
        ))
    return records


def record_fixes(home: Home, project_id: str, conn: sqlite3.Connection, session_key: str,
                 run_id: str, frame_id: str | None, now_ms: int,
                 memory_enabled: bool | None = None) -> int:
    """Write the debug records of a passing run; returns how many were new.

    Opens (creating) the project's debug-records.db only when there is one to
    write. With ``[memory] enabled`` each new record also becomes a
    ``candidate`` learned memory (never promoted automatically).
    """
    found = fixes(conn, session_key, run_id, frame_id)
    if not found or not project_id:
        return 0
    from storage.project_db import (
        DEBUG_RECORDS,
        open_project_db,
        project_db_path,
        write_debug_record,
    )

    db = open_project_db(project_db_path(home.root, project_id, DEBUG_RECORDS), DEBUG_RECORDS,
                         now_ms=now_ms)
    try:
        db.execute("BEGIN IMMEDIATE")
        new = [r for r in found if write_debug_record(db, r, now_ms)]
        db.execute("COMMIT")
    finally:
        db.close()
    if new and (memory_enabled if memory_enabled is not None else _memory_enabled(home)):
        _remember(home.root, project_id, new, now_ms)
    return len(new)


def _memory_enabled(home: Home) -> bool:
    """``[memory] enabled`` of the person's config (off when it cannot be read)."""
    try:
        from core.config.config import load_config

        return bool(load_config(home.config_path).memory.enabled)
    except Exception:  # memory is optional: an unreadable config means off
        return False


def _remember(root: Path, project_id: str, records: list[DebugRecord], now_ms: int) -> None:
    from storage.project_db import (
        LEARNED_MEMORY,
        MemoryType,
        add_memory_candidate,
        open_project_db,
        project_db_path,
    )

    db = open_project_db(project_db_path(root, project_id, LEARNED_MEMORY), LEARNED_MEMORY,
                         now_ms=now_ms)
    try:
        db.execute("BEGIN IMMEDIATE")
        for record in records:
            add_memory_candidate(db, memory_type=MemoryType.DEBUG_EXPERIENCE,
                                 summary=record.summary, content=None,
                                 source_type="debug_record", source_id=record.record_id,
                                 now_ms=now_ms)
        db.execute("COMMIT")
    finally:
        db.close()
