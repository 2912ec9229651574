"""Conflicts before merge: open frames of one repository that changed the same files.

Each frame's changed files since its base (``git diff --name-only`` plus
untracked files: plumbing, no content) are computed by ``refresh_frame``,
which runs in a detached worker (``core.review.worker``) once per agent turn
that ran tools, i.e. once per change a hook saw, and never when the navigator
refreshes. ``conflicts`` only reads those stored sets and the registry's open
frames, so closing a frame un-marks its partner at the next read with no git
call at all.

Two frames conflict when both are open, their checkouts belong to the same
repository, the checkouts differ (frames sharing one checkout share one
working tree: git cannot tell their changes apart, and the contract gives a
checkout one work context at a time) and their changed files overlap.
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from core.review.diff import changed_files, resolve_base
from core.review.frames import FramePlace, frame_place, open_places, open_registry, recorded_base

if TYPE_CHECKING:
    from core.config.home import Home
    from storage.review_store import ChangeRow


@dataclass(frozen=True)
class Conflict:
    """``frame_id`` overlaps ``other_frame_id`` in ``files`` (listed once per direction)."""

    frame_id: str
    title: str
    project_id: str
    other_frame_id: str
    other_title: str
    other_project_id: str
    files: tuple[str, ...]


def refresh_frame(home: Home, frame_id: str, now_ms: int | None = None) -> ChangeRow | None:
    """Recompute one frame's changed files and resolve its touched comments."""
    registry = open_registry(home)
    try:
        place = frame_place(registry, frame_id)
    finally:
        registry.close()
    return _refresh(home, place, now_ms)


def _refresh(home: Home, place: FramePlace, now_ms: int | None) -> ChangeRow | None:
    from core.review.review import resolve_comments
    from storage.review_store import ChangeRow, open_review, record_changes

    base, _problem = resolve_base(place.checkout, recorded_base(home, place.session_keys))
    if base is None:
        return None
    row = ChangeRow(place.frame_id, place.project_id, place.repository_id, place.checkout,
                    base, changed_files(place.checkout, base),
                    now_ms if now_ms is not None else time.time_ns() // 1_000_000)
    review = open_review(home.root)
    try:
        review.execute("BEGIN IMMEDIATE")
        record_changes(review, row)
        review.execute("COMMIT")
    finally:
        review.close()
    resolve_comments(home, place.frame_id, place.checkout)
    return row


def refresh_open_frames(home: Home) -> int:
    """``switchboard conflicts --refresh``: every open frame once (git per frame)."""
    registry = open_registry(home)
    try:
        places = open_places(registry)
    finally:
        registry.close()
    return sum(1 for place in places if _refresh(home, place, None) is not None)


def conflicts(home: Home) -> list[Conflict]:
    """Every overlap between open frames of one repository (read-only, no git)."""
    from storage.review_store import changes, open_review_readonly

    review = open_review_readonly(home.root)
    if review is None:
        return []
    try:
        stored = {row.frame_id: row for row in changes(review)}
    finally:
        review.close()
    if len(stored) < 2:
        return []
    registry = open_registry(home)
    try:
        places = [p for p in open_places(registry) if p.frame_id in stored]
    finally:
        registry.close()
    by_repository: dict[str, list[FramePlace]] = defaultdict(list)
    for place in places:
        if place.repository_id:
            by_repository[place.repository_id].append(place)
    found: list[Conflict] = []
    for group in by_repository.values():
        for place in group:
            mine = set(stored[place.frame_id].files)
            if not mine:
                continue
            for other in group:
                if other.frame_id == place.frame_id or other.checkout == place.checkout:
                    continue
                shared = mine & set(stored[other.frame_id].files)
                if shared:
                    found.append(Conflict(place.frame_id, place.title, place.project_id,
                                          other.frame_id, other.title, other.project_id,
                                          tuple(sorted(shared))))
    found.sort(key=lambda c: (c.title.casefold(), c.other_title.casefold(), c.frame_id))
    return found


def conflicts_by_frame(found: list[Conflict]) -> dict[str, tuple[Conflict, ...]]:
    by_frame: dict[str, list[Conflict]] = defaultdict(list)
    for conflict in found:
        by_frame[conflict.frame_id].append(conflict)
    return {k: tuple(v) for k, v in by_frame.items()}
