"""Read-only lookups over one NavigatorState, shared by the app and its palette.

Plain functions over the core-authored rows: they find rows, they never
derive presentation fields (core does that).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import TypeVar

from core.state.state_types import (
    FrameSummary,
    NavigatorState,
    ProjectRow,
    ViewRow,
)

_Row = TypeVar("_Row")


def live_views(state: NavigatorState | None) -> tuple[ViewRow, ...]:
    return tuple(v for v in state.views if v.state != "retired") if state else ()


def _pick(state: NavigatorState, key: str | None, rows: Iterable[_Row],
          entity_id: Callable[[_Row], str | None], host_id: Callable[[_Row], str]) -> _Row | None:
    """The row ``key`` names (``NavigatorState.row_key``): ``HOST/ID`` only on that
    host, a bare id on the host that owns it here (this host first). Ids are unique
    per host only, so a remote row reusing a local id never shadows the local one."""
    if key is None:
        return None
    host, wanted = state.resolve_key(key)
    return next((row for row in rows
                 if entity_id(row) == wanted and (host is None or host_id(row) == host)),
                None)


def view_by_id(state: NavigatorState | None, view_id: str | None) -> ViewRow | None:
    """The live view a key names (a bare view id or a ``row_key``)."""
    if state is None:
        return None
    return _pick(state, view_id, live_views(state), lambda v: v.view_id, lambda v: v.host_id)


def view_of_project(state: NavigatorState | None, project_id: str | None) -> ViewRow | None:
    """One live view per project (the contract's one_live_view_per_project)."""
    if state is None:
        return None
    return _pick(state, project_id, live_views(state), lambda v: v.active_project_id,
                 lambda v: v.host_id)


def project_by_id(state: NavigatorState | None, project_id: str | None) -> ProjectRow | None:
    if state is None:
        return None
    return _pick(state, project_id, state.projects, lambda p: p.project_id,
                 lambda p: p.host_id)


def frame_with_project(state: NavigatorState | None, frame_id: str | None
                       ) -> tuple[FrameSummary, ProjectRow] | None:
    if state is None or frame_id is None:
        return None
    pairs = ((frame, project) for project in state.projects for frame in project.frames)
    return _pick(state, frame_id, pairs, lambda pair: pair[0].frame_id,
                 lambda pair: pair[1].host_id)


def frame_by_id(state: NavigatorState | None, frame_id: str | None) -> FrameSummary | None:
    found = frame_with_project(state, frame_id)
    return found[0] if found is not None else None


def host_of_frame(state: NavigatorState | None, frame_id: str | None) -> str | None:
    found = frame_with_project(state, frame_id)
    return found[1].host_id if found is not None else None


_UUID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")


def humanize(text: str, state: NavigatorState | None) -> str:
    """Engine messages name rows by id; a person knows them by name. Every UUID of a
    frame, project or view in ``state`` becomes its quoted title; an unknown one is
    shortened to its first 8 characters (still enough to find it in the CLI)."""
    names: dict[str, str] = {}
    if state is not None:
        # This host's rows first: an engine message names this host's ids, and another
        # host's row reusing one never renames it.
        local = state.local_host_id
        for project in sorted(state.projects, key=lambda p: p.host_id != local):
            names.setdefault(project.project_id, project.name)
            for frame in project.frames:
                names.setdefault(frame.frame_id, frame.title)
        for view in sorted(state.views, key=lambda v: v.host_id != local):
            names.setdefault(view.view_id, view.title)

    def name(match: re.Match[str]) -> str:
        found = names.get(match.group(0))
        return f"“{found}”" if found is not None else match.group(0)[:8]

    return _UUID.sub(name, text)
