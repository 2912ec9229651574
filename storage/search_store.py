"""``$SWITCHBOARD_HOME/search.db``: one SQLite FTS5 index over every frame's evidence.

What is indexed (``kind``): a task's brief, its handoff (the summary a parent
claims), the person's prompts, the shell commands agents ran and the failure
signatures parsed from their output, for every frame of every project of this
host. Each entry names where it came from (project, frame, session, the
command run it anchors to) so a hit opens the frame's timeline at that entry.

Layout: ``entries`` holds the rows (``ref`` is unique, so writing the same
evidence twice, e.g. the hook and a rebuild, indexes it once) and
``entries_fts`` is an external-content FTS5 table over ``entries.body`` kept in
step by triggers. The file holds prompts and commands: 0600 like the session
files (``storage.side_files``). Only this module writes it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

from storage.side_files import open_side_file, open_side_file_readonly

APPLICATION_ID = 0x53575358  # "SWSX"
VERSION = 1
FILE_NAME = "search.db"
WHAT = "search index"
MAX_BODY_CHARS = 4000
#: snippet() markers: private-use characters no evidence text is stored with.
HIT_START, HIT_END = "\ue000", "\ue001"

DDL = (
    "CREATE TABLE IF NOT EXISTS entries ("
    " id INTEGER PRIMARY KEY, ref TEXT NOT NULL UNIQUE, kind TEXT NOT NULL,"
    " project_id TEXT NOT NULL, frame_id TEXT, session_key TEXT, at TEXT NOT NULL,"
    " anchor TEXT, body TEXT NOT NULL)",
    "CREATE INDEX IF NOT EXISTS idx_entries_project ON entries (project_id)",
    "CREATE VIRTUAL TABLE IF NOT EXISTS entries_fts USING fts5("
    " body, content='entries', content_rowid='id', tokenize='unicode61 remove_diacritics 2')",
    "CREATE TRIGGER IF NOT EXISTS entries_added AFTER INSERT ON entries BEGIN"
    " INSERT INTO entries_fts (rowid, body) VALUES (new.id, new.body); END",
    "CREATE TRIGGER IF NOT EXISTS entries_removed AFTER DELETE ON entries BEGIN"
    " INSERT INTO entries_fts (entries_fts, rowid, body) VALUES ('delete', old.id, old.body);"
    " END",
)


class Entry(NamedTuple):
    """One indexed piece of evidence. ``ref`` identifies its source row (``kind:id``);
    ``anchor`` is the command run it belongs to, when it has one."""

    ref: str
    kind: str
    project_id: str
    frame_id: str | None
    session_key: str | None
    at: str
    body: str
    anchor: str | None = None


class Hit(NamedTuple):
    ref: str
    kind: str
    project_id: str
    frame_id: str | None
    session_key: str | None
    at: str
    anchor: str | None
    snippet: str
    score: float


def search_path(root: Path) -> Path:
    return Path(root) / FILE_NAME


def open_index(root: Path) -> sqlite3.Connection:
    return open_side_file(search_path(root), application_id=APPLICATION_ID, version=VERSION,
                          ddl=DDL, what=WHAT)


def open_index_readonly(root: Path) -> sqlite3.Connection | None:
    return open_side_file_readonly(search_path(root), application_id=APPLICATION_ID,
                                   version=VERSION, what=WHAT)


def add_entries(conn: sqlite3.Connection, entries: Iterable[Entry]) -> int:
    """Index entries in one transaction; an entry already indexed is left as it is."""
    rows = [(e.ref, e.kind, e.project_id, e.frame_id, e.session_key, e.at, e.anchor,
             e.body[:MAX_BODY_CHARS]) for e in entries if e.body.strip()]
    if not rows:
        return 0
    conn.execute("BEGIN IMMEDIATE")
    try:
        before = conn.total_changes
        conn.executemany(
            "INSERT OR IGNORE INTO entries (ref, kind, project_id, frame_id, session_key, at,"
            " anchor, body) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)
        added = conn.total_changes - before
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return added


def clear(conn: sqlite3.Connection) -> None:
    """Empty the index (a rebuild starts from nothing)."""
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("DELETE FROM entries")
    conn.execute("INSERT INTO entries_fts (entries_fts) VALUES ('delete-all')")
    conn.execute("COMMIT")


def count(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT count(*) FROM entries").fetchone()[0])


def query(conn: sqlite3.Connection, match: str, *, project_id: str | None = None,
          limit: int = 50) -> list[Hit]:
    """The newest matches first. ``match`` is an FTS5 query the caller built safely.

    Newest, not best (bm25): ranking has to score every matching row before the
    first can be returned, 140 ms for a common word at 100,000 rows, while rowid
    order stops after ``limit`` rows; a person looking back for "which task ran
    that migration" wants the latest sessions first anyway. ``score`` is still
    each shown row's bm25, for callers that want to re-rank what they got."""
    where = " AND e.project_id = ?" if project_id else ""
    args: tuple[object, ...] = (match, project_id, limit) if project_id else (match, limit)
    rows = conn.execute(
        "SELECT e.ref, e.kind, e.project_id, e.frame_id, e.session_key, e.at, e.anchor,"
        f" snippet(entries_fts, 0, '{HIT_START}', '{HIT_END}', '…', 14) AS snip,"
        " bm25(entries_fts) AS score FROM entries_fts JOIN entries e ON e.id = entries_fts.rowid"
        f" WHERE entries_fts MATCH ?{where} ORDER BY entries_fts.rowid DESC LIMIT ?",
        args).fetchall()
    return [Hit(r["ref"], r["kind"], r["project_id"], r["frame_id"], r["session_key"], r["at"],
                r["anchor"], r["snip"], float(r["score"])) for r in rows]
