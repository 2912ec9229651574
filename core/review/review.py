"""Diff review of a frame: its change, the person's line comments, and sending them.

- ``frame_diff``: the frame's change since its base ref (``core.review.diff``),
  with the review's comments attached.
- ``add_comment``: a draft on one line of the change as it is now. The file's
  bytes are kept with it (``storage.review_store``), so resolution later asks
  "did a change touch this line since the person saw it", not "is the text the
  same".
- ``send_review``: every draft of the frame as ONE broker message to the
  frame's agent, one ``review: path:line: text`` line per comment, through the
  person's own send (``core.broker.membership.person_send``): the broker types
  it only when the agent's pane is shown and ready, like any message.
- ``resolve_comments``: sent comments whose line a later change touched are
  resolved (run by the change worker after a hook saw a change, and when a
  diff is read).
"""

from __future__ import annotations

import difflib
import errno
import sqlite3
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from core.model.errors import NotFound, SwitchboardError
from core.model.text import TextShape, refuse_unsafe, shown
from core.review.diff import EntryKind, FrameDiff, read_diff, read_entry, resolve_base
from core.review.frames import FramePlace, frame_place, recorded_base
from core.review.model import ReviewComment

if TYPE_CHECKING:
    from collections.abc import Callable

    from core.broker.membership import PersonSent
    from core.config.home import Home

MAX_COMMENT_CHARS = 2000


class ReviewRefused(SwitchboardError):
    """A review request that cannot be carried out as asked; nothing was written."""

    code = "review_refused"

REVIEW_PREFIX = "review:"
#: A commented file is read (and its snapshot kept) up to this size; larger is refused.
MAX_REVIEWED_FILE_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class ReviewSent:
    frame_id: str
    message_id: int
    comments: int
    delivery: str
    text: str


def _now() -> int:
    return time.time_ns() // 1_000_000


def _comment(row: object) -> ReviewComment:
    from storage.review_store import CommentRow

    assert isinstance(row, CommentRow)
    return ReviewComment(row.comment_id, row.path, row.line, row.body, row.line_text,
                         row.created_at, row.sent_at is not None, row.resolved_at is not None,
                         row.message_id)


def frame_comments(home: Home, frame_id: str) -> tuple[ReviewComment, ...]:
    from storage.review_store import comments, open_review_readonly

    conn = open_review_readonly(home.root)
    if conn is None:
        return ()
    try:
        return tuple(_comment(r) for r in comments(conn, frame_id))
    finally:
        conn.close()


def diff_for_place(home: Home, place: FramePlace) -> FrameDiff:
    """The change of one frame (git runs here: call it off any UI thread)."""
    base, problem = resolve_base(place.checkout, recorded_base(home, place.session_keys))
    if base is None:
        return FrameDiff(place.frame_id, place.title, place.checkout, None, problem=problem)
    files, truncated = read_diff(place.checkout, base)
    return FrameDiff(place.frame_id, place.title, place.checkout, base, tuple(files),
                     truncated)


def frame_diff(home: Home, conn: sqlite3.Connection, frame_id: str) -> FrameDiff:
    """``switchboard frame diff`` and the diff screen: the change and its comments."""
    diff = diff_for_place(home, frame_place(conn, frame_id))
    if diff.base_ref is not None:
        resolve_comments(home, frame_id, diff.checkout)
    return replace(diff, comments=frame_comments(home, frame_id))


def _file_in(checkout: str, path: str) -> Path:
    if not path or path.startswith("/") or ".." in Path(path).parts:
        raise ReviewRefused(f"{shown(path)!r} is not a path inside the frame's checkout; "
                             "name a file of its diff (as `frame diff --stat` lists it)",
                             code="review_path_invalid")
    return Path(checkout) / path


def checkout_bytes(checkout: str, path: str) -> bytes:
    """What git diffs at ``path``: a regular file's bytes or a symlink's target, read
    without following a link or blocking on a FIFO (``read_entry``); ``OSError`` for
    anything else, a missing path or a file over ``MAX_REVIEWED_FILE_BYTES``."""
    entry = read_entry(checkout, path, MAX_REVIEWED_FILE_BYTES)
    if entry.kind is EntryKind.OTHER:
        raise OSError(errno.EINVAL, "not a regular file", path)
    if entry.cut:
        raise OSError(errno.EFBIG, f"larger than {MAX_REVIEWED_FILE_BYTES} bytes", path)
    return entry.data


def add_comment(home: Home, conn: sqlite3.Connection, frame_id: str, path: str, line: int,
                text: str) -> ReviewComment:
    """A draft comment on ``path:line`` (the line as the file has it now)."""
    from storage import session_db
    from storage.review_store import add_comment as store_comment
    from storage.review_store import open_review

    text = text.strip()
    if not text:
        raise ReviewRefused("the comment is empty; type what the agent should change",
                             code="review_comment_empty")
    if len(text) > MAX_COMMENT_CHARS:
        raise ReviewRefused(f"the comment is {len(text)} characters; the limit is "
                             f"{MAX_COMMENT_CHARS}", code="review_comment_long")
    refuse_unsafe("comment", text, TextShape.LINE)
    refuse_unsafe("path", path, TextShape.LINE)
    place = frame_place(conn, frame_id)
    _file_in(place.checkout, path)
    try:
        data = checkout_bytes(place.checkout, path)
    except OSError as exc:
        raise NotFound(f"{shown(path)} is not in the checkout {place.checkout} now "
                       f"({exc.strerror}); comment on a line that exists (+ or context)",
                       code="review_line_missing") from exc
    lines = data.decode("utf-8", "replace").splitlines()
    if not 1 <= line <= len(lines):
        raise NotFound(f"{shown(path)} has {len(lines)} lines; line {line} is not one of them",
                       code="review_line_missing")
    review = open_review(home.root)
    try:
        row = store_comment(review, session_db.new_id(), frame_id, path, line, text,
                            lines[line - 1], data, _now())
    finally:
        review.close()
    return _comment(row)


def delete_draft(home: Home, comment_id: str) -> bool:
    from storage.review_store import delete_draft as store_delete
    from storage.review_store import open_review

    review = open_review(home.root)
    try:
        return store_delete(review, comment_id)
    finally:
        review.close()


def review_text(comments: tuple[ReviewComment, ...] | list[ReviewComment]) -> str:
    """The one message: a line per comment, in file and line order."""
    ordered = sorted(comments, key=lambda c: (c.path, c.line, c.created_at))
    return "\n".join(f"{REVIEW_PREFIX} {shown(c.path)}:{c.line}: {c.text}" for c in ordered)


def send_review(send: Callable[[str, str], PersonSent], home: Home,
                frame_id: str) -> ReviewSent:
    """Every draft of the frame as one broker message to its agent.

    ``send`` is the person's send (``EngineClient.message_frame``, i.e.
    ``core.broker.membership.person_send`` under the client's lock): the review is
    delivered exactly as a message the person typed.
    """
    from storage.review_store import drafts, mark_sent, open_review

    review = open_review(home.root)
    try:
        pending = [_comment(r) for r in drafts(review, frame_id)]
        if not pending:
            raise ReviewRefused("no review comments to send; press c on a line of the diff "
                                 "first", code="review_nothing_to_send")
        text = review_text(pending)
        sent = send(frame_id, text)
        review.execute("BEGIN IMMEDIATE")
        mark_sent(review, [c.comment_id for c in pending], sent.message_id, _now())
        review.execute("COMMIT")
    finally:
        review.close()
    return ReviewSent(frame_id, sent.message_id, len(pending), sent.delivery, text)


def touched(before: str, after: str, line: int) -> bool:
    """Whether ``line`` (1-based, of ``before``) was changed or removed in ``after``."""
    old, new = before.splitlines(), after.splitlines()
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    index = line - 1
    for tag, i1, i2, _j1, _j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        if i1 <= index < i2:  # replaced or deleted (an insert beside it leaves it as is)
            return True
    return False


def resolve_comments(home: Home, frame_id: str, checkout: str) -> int:
    """Resolve sent comments whose line a change touched; returns how many."""
    from storage.review_store import mark_resolved, open_review, open_review_readonly, open_sent

    reader = open_review_readonly(home.root)
    if reader is None:
        return 0
    try:
        waiting = open_sent(reader, frame_id)
    finally:
        reader.close()
    done = []
    for comment, snapshot in waiting:
        try:
            current = checkout_bytes(checkout, comment.path)
        except OSError:
            done.append(comment.comment_id)  # the file is gone: the line surely changed
            continue
        if snapshot is None:
            lines = current.decode("utf-8", "replace").splitlines()
            if comment.line > len(lines) or lines[comment.line - 1] != comment.line_text:
                done.append(comment.comment_id)
            continue
        if current != snapshot and touched(snapshot.decode("utf-8", "replace"),
                                           current.decode("utf-8", "replace"), comment.line):
            done.append(comment.comment_id)
    if done:
        review = open_review(home.root)
        try:
            review.execute("BEGIN IMMEDIATE")
            mark_resolved(review, done, _now())
            review.execute("COMMIT")
        finally:
            review.close()
    return len(done)
