"""Read-only lookups over one NavigatorState, shared by the app and its palette.

Plain functions over the core-authored rows: they find rows, they never
derive presentation fields (core does that).
"""

from __future__ import annotations

import re

from core.state.state_types import FrameSummary, NavigatorState, ProjectRow, ViewRow


def live_views(state: NavigatorState | None) -> tuple[ViewRow, ...]:
    return tuple(v for v in state.views if v.state != "retired") if state else ()


def view_by_id(state: NavigatorState | None, view_id: str | None) -> ViewRow | None:
    return next((v for v in live_views(state) if v.view_id == view_id), None)


def view_of_project(state: NavigatorState | None, project_id: str | None) -> ViewRow | None:
    """One live view per project (the contract's one_live_view_per_project)."""
    return next((v for v in live_views(state) if v.active_project_id == project_id), None)


def project_by_id(state: NavigatorState | None, project_id: str | None) -> ProjectRow | None:
    projects = state.projects if state is not None else ()
    return next((p for p in projects if p.project_id == project_id), None)


def frame_with_project(state: NavigatorState | None, frame_id: str | None
                       ) -> tuple[FrameSummary, ProjectRow] | None:
    if state is None or frame_id is None:
        return None
    for project in state.projects:
        for frame in project.frames:
            if frame.frame_id == frame_id:
                return frame, project
    return None


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
        for project in state.projects:
            names[project.project_id] = project.name
            for frame in project.frames:
                names[frame.frame_id] = frame.title
        for view in state.views:
            names.setdefault(view.view_id, view.title)

    def name(match: re.Match[str]) -> str:
        found = names.get(match.group(0))
        return f"“{found}”" if found is not None else match.group(0)[:8]

    return _UUID.sub(name, text)
