"""Keeping the search index current from the evidence writes themselves.

Called right after each evidence write that holds searchable text: the hook's
prompt and finished shell command (with the failure signatures parsed inline),
the evidence worker's late parse, a push's brief and a completion's handoff.
A plain turn (Stop, a tool start, a notification) indexes nothing and opens
nothing. Every call is best effort: the evidence is committed already, so an
index that cannot be written is said on stderr and rebuilt later
(``switchboard search --rebuild``), never a failed hook.

Lean on purpose (the hook imports it): no dataclasses, only
``storage.search_store`` and what it needs.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import sqlite3

    from storage.search_store import Entry
    from storage.session_evidence import DiagnosticRow

PROMPT, COMMAND, FAILURE, BRIEF, HANDOFF = "prompt", "command", "failure", "brief", "handoff"
KINDS = (BRIEF, HANDOFF, PROMPT, COMMAND, FAILURE)


def _write(root: Path, entries: Iterable[Entry]) -> None:
    try:
        from storage.search_store import add_entries, open_index

        conn = open_index(root)
        try:
            add_entries(conn, entries)
        finally:
            conn.close()
    except Exception as exc:  # the evidence is written; the index can be rebuilt
        from core.model.text import shown

        print(f"switchboard: search index not updated ({shown(exc)}); "
              "`switchboard search --rebuild` catches up", file=sys.stderr)


def failure_body(row: DiagnosticRow | sqlite3.Row) -> str:
    """What a failure signature is found by: tool, file, code, message, signature."""
    parts = (row["toolchain"], row["file"], row["code"], row["message"],
             row["semantic_signature"]) if not isinstance(row, tuple) else (
        row.toolchain, row.file, row.code, row.message, row.semantic_signature)
    return " ".join(str(p) for p in parts if p)


def failure_entries(project_id: str, frame_id: str | None, session_key: str, at: str,
                    run_id: str | None, rows: Sequence[DiagnosticRow]) -> list[Entry]:
    from storage.search_store import Entry

    return [Entry(f"{FAILURE}:{session_key}:{row.semantic_signature}", FAILURE, project_id,
                  frame_id, session_key, at, failure_body(row), run_id) for row in rows]


def after_hook(root: Path, conn: sqlite3.Connection, *, project_id: str, frame_id: str | None,
               session_key: str, event_id: str, at: str, prompt: str | None,
               command: str | None, finished: bool,
               diagnostics: Sequence[DiagnosticRow] = ()) -> None:
    """The hook's searchable evidence: its prompt, or its finished command and failures."""
    if prompt is None and not (command and finished):
        return
    from storage.search_store import Entry

    entries: list[Entry] = []
    if prompt is not None:
        entries.append(Entry(f"{PROMPT}:{event_id}", PROMPT, project_id, frame_id, session_key,
                             at, prompt))
    if command and finished:
        row = conn.execute("SELECT command_run_id FROM events WHERE id = ?",
                           (event_id,)).fetchone()
        run_id = row[0] if row is not None else None
        if run_id is not None:
            entries.append(Entry(f"{COMMAND}:{run_id}", COMMAND, project_id, frame_id,
                                 session_key, at, command, run_id))
            entries += failure_entries(project_id, frame_id, session_key, at, run_id,
                                       diagnostics)
    _write(root, entries)


def after_parse(root: Path, conn: sqlite3.Connection, session_key: str, run_id: str,
                project_id: str, frame_id: str | None) -> None:
    """The evidence worker parsed a big output: its failure signatures."""
    from storage.search_store import Entry

    rows = conn.execute("SELECT toolchain, file, code, message, semantic_signature, created_at"
                        " FROM diagnostics WHERE command_run_id = ?", (run_id,)).fetchall()
    _write(root, [Entry(f"{FAILURE}:{session_key}:{r['semantic_signature']}", FAILURE,
                        project_id, frame_id, session_key, r["created_at"], failure_body(r),
                        run_id) for r in rows])


def after_push(root: Path, registry: sqlite3.Connection, transition_id: str, at: str) -> None:
    """A pushed task's brief (title and text), found under the child frame."""
    from storage.search_store import Entry

    row = registry.execute(
        "SELECT b.brief, f.frame_id, f.project_id, f.title FROM transition_briefs b"
        " JOIN frames f ON f.frame_id = b.target_frame_id WHERE b.transition_id = ?",
        (transition_id,)).fetchone()
    if row is None:
        return
    _write(root, [Entry(f"{BRIEF}:{transition_id}", BRIEF, row[2], row[1], None, at,
                        f"{row[3]}\n{row[0]}")])


def after_complete(root: Path, registry: sqlite3.Connection, transition_id: str,
                   at: str) -> None:
    """A completed task's handoff (summary and next action), found under that task."""
    from storage.search_store import Entry

    row = registry.execute(
        "SELECT h.summary, h.next_action, h.source_frame_id, h.source_session_key,"
        " f.project_id FROM completion_handoffs h JOIN frames f"
        " ON f.frame_id = h.source_frame_id WHERE h.transition_id = ?",
        (transition_id,)).fetchone()
    if row is None:
        return
    body = row[0] + (f"\nnext: {row[1]}" if row[1] else "")
    _write(root, [Entry(f"{HANDOFF}:{transition_id}", HANDOFF, row[4], row[2], row[3], at,
                        body)])
