"""Which view, frame or task a key acts on, and why a key does nothing.

Pure functions over one NavigatorState and a ``Selection`` (what the person
points at when the key is pressed), so the rules are tested without a screen.
A key either gets its target or a ``Refusal`` whose text says what to select
instead; the app shows a refusal as a warning and sends nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from core.apps.client import SubjectPlace
from core.state.state_types import FrameSummary, NavigatorState, ProjectRow, RecoveryRow, ViewRow
from navigator.lookup import (
    frame_with_project,
    host_of_frame,
    live_views,
    view_by_id,
    view_of_project,
)

NO_VIEW = "No view yet: select a project and press enter."


class Panel(StrEnum):
    """The panel that has the keyboard, as far as targeting cares."""

    VIEWS = "views"
    TREE = "projects"
    OTHER = "other"


@dataclass(frozen=True)
class Selection:
    """What the person points at: the pane's own view, the view keys followed last,
    the focused panel, the Views cursor, the Projects tree cursor and the selected
    recovery."""

    bound_view_id: str | None = None
    current_view_id: str | None = None
    focused: Panel = Panel.OTHER
    views_cursor: str | None = None
    tree_project_id: str | None = None
    tree_frame: FrameSummary | None = None
    recovery: RecoveryRow | None = None


@dataclass(frozen=True)
class Refusal:
    """Why a key does nothing, in words that say what to do instead."""

    text: str


def target_view(state: NavigatorState | None, selection: Selection) -> ViewRow | None:
    """The view a key acts on: the pane's own view, else the selection's view, else the
    current view, else the first live one."""
    if selection.bound_view_id:
        return view_by_id(state, selection.bound_view_id)
    if selection.focused is Panel.VIEWS:
        view = view_by_id(state, selection.views_cursor)
        if view is not None:
            return view
    if selection.focused is Panel.TREE and selection.tree_project_id is not None:
        view = view_of_project(state, selection.tree_project_id)
        if view is not None:
            return view
    views = live_views(state)
    return view_by_id(state, selection.current_view_id) or (views[0] if views else None)


def target_frame(state: NavigatorState | None, selection: Selection) -> FrameSummary | None:
    """The selected frame in the tree (when the tree has the keyboard), else the target
    view's active frame."""
    located = _located(state, selection)
    return located[0] if located is not None else None


def _located(state: NavigatorState | None, selection: Selection
             ) -> tuple[FrameSummary, str | None] | None:
    """``target_frame`` with its host (None: no longer in the state). Frame ids are
    unique per host only, so the host comes from where the frame was picked (its tree
    project's row key, its view), never from the bare id, which a remote row may
    share with a local one."""
    frame = selection.tree_frame
    if selection.focused is Panel.TREE and frame is not None:
        return _in_tree(state, selection, frame)
    view = target_view(state, selection)
    if state is None or view is None or view.active_frame_id is None:
        return None
    found = frame_with_project(state, state.row_key(view.host_id, view.active_frame_id))
    return (found[0], found[1].host_id) if found is not None else None


def _in_tree(state: NavigatorState | None, selection: Selection,
             frame: FrameSummary) -> tuple[FrameSummary, str | None]:
    """The tree's frame as the state has it now, and its host (from the project's key)."""
    found = _found_in_tree(state, selection, frame)
    if found is not None:
        return found[0], found[1].host_id
    host_id = state.resolve_key(selection.tree_project_id)[0] \
        if state is not None and selection.tree_project_id else None
    return frame, host_id


def _found_in_tree(state: NavigatorState | None, selection: Selection,
                   frame: FrameSummary) -> tuple[FrameSummary, ProjectRow] | None:
    """The tree's frame and its project in the state, on the host of the tree project's
    row key (a bare frame id alone may name a local row)."""
    if state is None:
        return None
    host_id = state.resolve_key(selection.tree_project_id)[0] \
        if selection.tree_project_id else None
    key = state.row_key(host_id, frame.frame_id) if host_id is not None else frame.frame_id
    return frame_with_project(state, key)


def is_remote(state: NavigatorState | None, host_id: str | None) -> bool:
    """Another host's rows are a read-only cache here."""
    return state is not None and host_id is not None and host_id != state.local_host_id


def remote_refusal(state: NavigatorState | None, host_id: str | None) -> Refusal | None:
    """Cached state of another host is shown, never acted on from here."""
    if state is None or not is_remote(state, host_id):
        return None
    assert host_id is not None
    host = state.host_row(host_id)
    name = host.display_name if host is not None else host_id
    return Refusal(f"This belongs to host {name}; its state here is a read-only cache. From "
                   f"here, enter opens it on {name}, t messages its agent and p pushes a task "
                   f"under it; run other actions on {name}.")


@dataclass(frozen=True)
class RemoteFrame:
    """A frame of another host that a key acts on through that host's own engine."""

    host_id: str
    host_name: str
    frame: FrameSummary


def remote_frame_for_key(state: NavigatorState | None, selection: Selection, *,
                         open_only: bool = False) -> RemoteFrame | Refusal | None:
    """The target frame when it belongs to another host (None when it is local or
    nothing is selected); refused while that host is offline (its cached state may
    be old, and the request could not reach it anyway)."""
    located = _located(state, selection)
    frame, host_id = located if located is not None else (None, None)
    if state is None or frame is None or host_id is None or not is_remote(state, host_id):
        return None
    host = state.host_row(host_id)
    name = host.display_name if host is not None else host_id
    if host is None or host.reachability == "offline":
        return Refusal(f"Host {name} is offline; its frames take requests again once it "
                       "is back.")
    if open_only and frame.lifecycle_state != "open":
        return Refusal(f"“{frame.title}” on {name} is {frame.lifecycle_state}; reopen it "
                       f"on {name} first.")
    return RemoteFrame(host_id, name, frame)


def view_for_key(state: NavigatorState | None, selection: Selection) -> ViewRow | Refusal:
    """The target view of a view key (back, withdraw, mode, stream), on this host."""
    view = target_view(state, selection)
    if view is None:
        return Refusal(NO_VIEW)
    return remote_refusal(state, view.host_id) or view


def frame_for_key(state: NavigatorState | None, selection: Selection, missing: str, *,
                  open_only: bool = False) -> FrameSummary | Refusal:
    """The target frame of a frame key, on this host; ``open_only``: it must be open
    (a closed or closing frame is reopened first)."""
    located = _located(state, selection)
    if located is None:
        return Refusal(missing)
    frame, host_id = located
    refusal = remote_refusal(state, host_id)
    if refusal is not None:
        return refusal
    if open_only and frame.lifecycle_state != "open":
        return Refusal(f"“{frame.title}” is {frame.lifecycle_state}; press r to reopen it "
                       "first.")
    return frame


def task_for_key(state: NavigatorState | None, selection: Selection,
                 verb: str) -> FrameSummary | Refusal:
    """The open task complete (c) or close (x) act on; a workspace has no parent."""
    located = _located(state, selection)
    if located is None:
        return Refusal(f"Select a task to {verb}.")
    frame, host_id = located
    if frame.role != "task":
        return Refusal(f"The workspace “{frame.title}” has no parent; select a task to "
                       f"{verb}.")
    if frame.lifecycle_state != "open":
        return Refusal(f"“{frame.title}” is {frame.lifecycle_state}, not open.")
    return remote_refusal(state, host_id) or frame


def closed_frame_for_key(state: NavigatorState | None,
                         selection: Selection) -> FrameSummary | Refusal:
    """The closed frame under the tree cursor that r reopens."""
    tree_frame = selection.tree_frame
    found = _found_in_tree(state, selection, tree_frame) if tree_frame is not None else None
    if found is None or found[0].lifecycle_state != "closed":
        return Refusal("Select a closed frame under History to reopen it.")
    return remote_refusal(state, found[1].host_id) or found[0]


def view_to_focus(state: NavigatorState | None, project_id: str) -> ViewRow | Refusal:
    """The view a frame of this project is focused in (enter on a frame, the palette)."""
    view = view_of_project(state, project_id)
    if view is None:
        return Refusal("This project has no view yet: select the project and press enter "
                       "to create it.")
    return remote_refusal(state, view.host_id) or view


def recovery_for_key(state: NavigatorState | None,
                     recovery: RecoveryRow | None) -> RecoveryRow | Refusal:
    """The selected recovery R runs, on this host."""
    if recovery is None:
        return Refusal("No recovery selected: none is open.")
    return remote_refusal(state, recovery.host_id) or recovery


def inbox_view_id(state: NavigatorState, wanted: str | None) -> str | None:
    """The view whose inbox the panel lists: the wanted one while it lives, else the
    first live view."""
    live = [v.view_id for v in live_views(state)]
    if wanted in live:
        return wanted
    return live[0] if live else None


@dataclass(frozen=True)
class RecoveryTarget:
    """What going to a recovery selects: its view and its frame (with the project)."""

    view: ViewRow | None
    found: tuple[FrameSummary, ProjectRow] | None


def recovery_target(state: NavigatorState | None, place: SubjectPlace) -> RecoveryTarget:
    """The view and frame a recovery's subject names; a missing half is filled in from
    the other (a frame's project's view, a view's active frame)."""
    found = frame_with_project(state, place.frame_id)
    view = view_by_id(state, place.view_id)
    if found is not None and view is None:
        view = view_of_project(state, found[1].project_id)
    if view is not None and found is None:
        found = frame_with_project(state, view.active_frame_id)
    return RecoveryTarget(view, found)


def recovery_about(state: NavigatorState | None, place: SubjectPlace) -> str | None:
    """What a manual recovery is about, in names: its frame, else its view."""
    found = frame_with_project(state, place.frame_id)
    if found is not None:
        return f"{found[0].title} ({found[1].name})"
    view = view_by_id(state, place.view_id)
    return f"the view {view.title}" if view is not None else None


def preview_frame(state: NavigatorState | None, frame: FrameSummary | None,
                  shown: bool) -> FrameSummary | None:
    """The tree cursor's frame when its pane is worth a preview: a live agent of this
    host that its view does not show (a parked one)."""
    session = frame.current_session if frame is not None else None
    if (frame is None or shown or session is None or session.runtime_presence != "live"
            or is_remote(state, host_of_frame(state, frame.frame_id))):
        return None
    return frame
