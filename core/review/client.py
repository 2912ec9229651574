"""ReviewClient: what a frontend asks about review, conflicts and search.

The navigator holds one beside its EngineClient. Every call opens what it reads
(the registry read-only, the review file, the search index, git) and closes it,
so it shares no connection or lock with the engine; the only engine call is the
review's send, which goes through the person's own message send (``send``,
``EngineClient.message_frame``) so the broker delivers it under its rules.
Blocking: call from a worker thread.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING

from core.model.files import file_stamps

if TYPE_CHECKING:
    from core.broker.membership import PersonSent
    from core.config.home import Home
    from core.review.changes import Conflict
    from core.review.diff import FrameDiff
    from core.review.review import ReviewComment, ReviewSent
    from core.review.search import SearchResult


class ReviewClient:
    def __init__(self, home: Home, send: Callable[[str, str], PersonSent]) -> None:
        self.home = home
        self._send = send
        self._conflicts: tuple[tuple[tuple[int, int], ...], dict[str, tuple[Conflict, ...]]] \
            | None = None

    def frame_diff(self, frame_id: str) -> FrameDiff:
        from core.review.frames import open_registry
        from core.review.review import frame_diff

        registry = open_registry(self.home)
        try:
            return frame_diff(self.home, registry, frame_id)
        finally:
            registry.close()

    def comment(self, frame_id: str, path: str, line: int, text: str) -> ReviewComment:
        from core.review.frames import open_registry
        from core.review.review import add_comment

        registry = open_registry(self.home)
        try:
            return add_comment(self.home, registry, frame_id, path, line, text)
        finally:
            registry.close()

    def delete_draft(self, comment_id: str) -> bool:
        from core.review.review import delete_draft

        return delete_draft(self.home, comment_id)

    def send_review(self, frame_id: str) -> ReviewSent:
        from core.review.review import send_review

        return send_review(self._send, self.home, frame_id)

    def stamp(self) -> tuple[tuple[int, int], ...]:
        """(mtime, size) of the review file and its WAL: cheap change detection."""
        from storage.review_store import review_path

        path = os.fspath(review_path(self.home.root))
        return file_stamps((path, f"{path}-wal"))

    def conflicts(self, *, fresh: bool = False) -> dict[str, tuple[Conflict, ...]]:
        """Conflicts by frame. Re-read only when the review file moved or ``fresh``: the
        closing of a frame is in the registry, so callers pass ``fresh`` on a registry
        change (it is a read of two small tables, never git)."""
        from core.review.changes import conflicts, conflicts_by_frame

        stamp = self.stamp()
        if not fresh and self._conflicts is not None and self._conflicts[0] == stamp:
            return self._conflicts[1]
        found = conflicts_by_frame(conflicts(self.home))
        self._conflicts = (stamp, found)
        return found

    def search(self, text: str, project: str | None = None) -> list[SearchResult]:
        from core.review.search import search

        return search(self.home, text, project=project)
