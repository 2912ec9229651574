"""``$SWITCHBOARD_HOME/review.db``: review comments and each frame's changed files.

Two tables, both keyed by frame (a frame id is unique on the host):

- ``review_comments``: what the person wrote on a diff line. A comment is a
  draft until its review is sent (``sent_at``, the broker ``message_id``), and
  resolved (``resolved_at``) once a later change of the agent touches its line.
  ``snapshot`` is the file as it was when the comment was written (zlib), so
  "touched" is a line diff against what the person saw, not a guess.
- ``frame_changes``: the files a frame's checkout changed since the frame's base
  ref, written by the change worker once per change a hook saw (never per
  navigator refresh); conflicts between open frames are read from it.

Only this module writes these rows (``tests/test_sql_writes.py``).
"""

from __future__ import annotations

import json
import sqlite3
import zlib
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

from storage.side_files import open_side_file, open_side_file_readonly

APPLICATION_ID = 0x53575256  # "SWRV"
VERSION = 1
FILE_NAME = "review.db"
WHAT = "review"
MAX_SNAPSHOT_BYTES = 2 * 1024 * 1024

DDL = (
    "CREATE TABLE IF NOT EXISTS review_comments ("
    " comment_id TEXT PRIMARY KEY, frame_id TEXT NOT NULL, path TEXT NOT NULL,"
    " line INTEGER NOT NULL CHECK (line >= 1), body TEXT NOT NULL, line_text TEXT NOT NULL,"
    " snapshot BLOB, created_at INTEGER NOT NULL, sent_at INTEGER, message_id INTEGER,"
    " resolved_at INTEGER)",
    "CREATE INDEX IF NOT EXISTS idx_review_comments_frame"
    " ON review_comments (frame_id, created_at)",
    "CREATE TABLE IF NOT EXISTS frame_changes ("
    " frame_id TEXT PRIMARY KEY, project_id TEXT NOT NULL, repository_id TEXT,"
    " checkout_path TEXT NOT NULL, base_ref TEXT, files_json TEXT NOT NULL,"
    " computed_at INTEGER NOT NULL)",
    "CREATE INDEX IF NOT EXISTS idx_frame_changes_repository ON frame_changes (repository_id)",
)


class CommentRow(NamedTuple):
    comment_id: str
    frame_id: str
    path: str
    line: int
    body: str
    line_text: str
    created_at: int
    sent_at: int | None
    message_id: int | None
    resolved_at: int | None


class ChangeRow(NamedTuple):
    frame_id: str
    project_id: str
    repository_id: str | None
    checkout_path: str
    base_ref: str | None
    files: tuple[str, ...]
    computed_at: int


def review_path(root: Path) -> Path:
    return Path(root) / FILE_NAME


def open_review(root: Path) -> sqlite3.Connection:
    return open_side_file(review_path(root), application_id=APPLICATION_ID, version=VERSION,
                          ddl=DDL, what=WHAT)


def open_review_readonly(root: Path) -> sqlite3.Connection | None:
    return open_side_file_readonly(review_path(root), application_id=APPLICATION_ID,
                                   version=VERSION, what=WHAT)


_COMMENT_COLUMNS = ("comment_id, frame_id, path, line, body, line_text, created_at, sent_at,"
                    " message_id, resolved_at")


# --------------------------------------------------------------------------- comments


def add_comment(conn: sqlite3.Connection, comment_id: str, frame_id: str, path: str, line: int,
                body: str, line_text: str, snapshot: bytes | None, now_ms: int) -> CommentRow:
    """A draft comment; ``snapshot`` (the file's bytes now) is kept when small enough."""
    packed = zlib.compress(snapshot) if snapshot is not None and \
        len(snapshot) <= MAX_SNAPSHOT_BYTES else None
    conn.execute(
        "INSERT INTO review_comments (comment_id, frame_id, path, line, body, line_text,"
        " snapshot, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (comment_id, frame_id, path, line, body, line_text, packed, now_ms))
    return CommentRow(comment_id, frame_id, path, line, body, line_text, now_ms, None, None,
                      None)


def delete_draft(conn: sqlite3.Connection, comment_id: str) -> bool:
    """Drop a comment that was never sent (a sent one is the agent's record too)."""
    done = conn.execute("DELETE FROM review_comments WHERE comment_id = ? AND sent_at IS NULL",
                        (comment_id,))
    return done.rowcount == 1


def comments(conn: sqlite3.Connection, frame_id: str) -> list[CommentRow]:
    return [CommentRow(*r) for r in conn.execute(
        f"SELECT {_COMMENT_COLUMNS} FROM review_comments WHERE frame_id = ?"
        " ORDER BY created_at, path, line", (frame_id,))]


def drafts(conn: sqlite3.Connection, frame_id: str) -> list[CommentRow]:
    return [c for c in comments(conn, frame_id) if c.sent_at is None]


def mark_sent(conn: sqlite3.Connection, comment_ids: Iterable[str], message_id: int,
              now_ms: int) -> None:
    conn.executemany(
        "UPDATE review_comments SET sent_at = ?, message_id = ? WHERE comment_id = ?"
        " AND sent_at IS NULL", [(now_ms, message_id, c) for c in comment_ids])


def open_sent(conn: sqlite3.Connection, frame_id: str) -> list[tuple[CommentRow, bytes | None]]:
    """Sent, unresolved comments with their snapshots (what resolution compares against)."""
    rows = conn.execute(
        f"SELECT {_COMMENT_COLUMNS}, snapshot FROM review_comments WHERE frame_id = ?"
        " AND sent_at IS NOT NULL AND resolved_at IS NULL ORDER BY created_at",
        (frame_id,)).fetchall()
    return [(CommentRow(*tuple(r)[:10]), zlib.decompress(r["snapshot"])
             if r["snapshot"] is not None else None) for r in rows]


def mark_resolved(conn: sqlite3.Connection, comment_ids: Iterable[str], now_ms: int) -> None:
    conn.executemany("UPDATE review_comments SET resolved_at = ? WHERE comment_id = ?"
                     " AND resolved_at IS NULL", [(now_ms, c) for c in comment_ids])


# --------------------------------------------------------------------------- changes


def record_changes(conn: sqlite3.Connection, row: ChangeRow) -> None:
    conn.execute(
        "INSERT INTO frame_changes (frame_id, project_id, repository_id, checkout_path,"
        " base_ref, files_json, computed_at) VALUES (?, ?, ?, ?, ?, ?, ?)"
        " ON CONFLICT(frame_id) DO UPDATE SET project_id = excluded.project_id,"
        " repository_id = excluded.repository_id, checkout_path = excluded.checkout_path,"
        " base_ref = excluded.base_ref, files_json = excluded.files_json,"
        " computed_at = excluded.computed_at",
        (row.frame_id, row.project_id, row.repository_id, row.checkout_path, row.base_ref,
         json.dumps(sorted(row.files), ensure_ascii=False), row.computed_at))


def changes(conn: sqlite3.Connection) -> list[ChangeRow]:
    result = []
    for r in conn.execute("SELECT frame_id, project_id, repository_id, checkout_path,"
                          " base_ref, files_json, computed_at FROM frame_changes"):
        try:
            files = json.loads(r["files_json"])
        except ValueError:
            files = []
        result.append(ChangeRow(r["frame_id"], r["project_id"], r["repository_id"],
                                r["checkout_path"], r["base_ref"],
                                tuple(str(f) for f in files if isinstance(f, str)),
                                r["computed_at"]))
    return result
