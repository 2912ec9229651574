"""Conflict marks for the tree: read when the review file or the set of open frames moved.

The change worker writes ``review.db`` after a hook (git runs there, never here);
this only notices that the file moved (two stats on a slow tick) or that a frame
opened or closed (from the state the app already loaded), and then reads the
stored overlaps in a thread worker. An idle navigator reads nothing.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

from navigator.jobs import Group, Job

if TYPE_CHECKING:
    from core.review.changes import Conflict
    from core.review.client import ReviewClient
    from core.state.state_types import NavigatorState

#: Seconds between checks of the review file's stamp.
TICK_S = 2.0


class ConflictWatch:
    def __init__(self, app: Any, review: ReviewClient) -> None:
        """``app``: the SwitchboardApp (its ``start_job`` runs the read in a thread)."""
        self.app = app
        self.review = review
        self.by_frame: dict[str, tuple[Conflict, ...]] = {}
        self._stamp: tuple[tuple[int, int], ...] | None = None
        self._open: frozenset[str] | None = None

    def start(self) -> None:
        self.app.set_interval(TICK_S, self.tick)

    def tick(self) -> None:
        stamp = self.review.stamp()
        if stamp != self._stamp:
            self._stamp = stamp
            self._read()

    def on_state(self, state: NavigatorState) -> None:
        """A frame that closed (or opened) changes the marks with no new git data."""
        open_ids = frozenset(f.frame_id for p in state.projects for f in p.frames
                             if f.lifecycle_state == "open")
        if open_ids != self._open:
            self._open = open_ids
            self._read()

    def _read(self) -> None:
        if self._stamp is None:
            self._stamp = self.review.stamp()
        if self._stamp == ((0, 0), (0, 0)) and not self.by_frame:
            return  # no review file yet: nothing to read
        self.app.start_job(partial(self.review.conflicts, fresh=True), Group.REVIEW,
                           Job(self._show, lambda _error: None), name="conflicts")

    def _show(self, by_frame: dict[str, tuple[Conflict, ...]]) -> None:
        from navigator.widgets.frames import FrameTree

        self.by_frame = by_frame
        self.app.query_one(FrameTree).conflicted = frozenset(by_frame)
