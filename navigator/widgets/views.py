"""The Views panel: one row per durable tmux window, as core summarized it."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual.binding import Binding
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import OptionList

from core.state.state_types import FrameSummary, HostRow, NavigatorState, ViewRow
from navigator.lookup import view_by_id
from navigator.widgets.badges import (
    BADGE_COMPONENT_CLASSES,
    BadgeKind,
    badge_kind,
    badge_text,
)
from navigator.widgets.rows import Row, RowList

_NONTERMINAL = {"prepared", "executing", "presented", "awaiting_claim", "settling"}


def view_badge(view: ViewRow, host: HostRow | None,
               active: FrameSummary | None = None) -> BadgeKind:
    """The badge of a view row: host trust first, then movement, then attention, then
    the shown frame's badge (the same words the Projects tree gives that frame)."""
    if host is not None and host.reachability == "offline":
        return BadgeKind.OFFLINE
    if host is not None and host.stale:
        return BadgeKind.STALE
    if view.control_state == "uncertain":
        return BadgeKind.UNCERTAIN
    if view.transition_state in _NONTERMINAL:
        return BadgeKind.IN_FLIGHT
    if view.activity == "needs_input":
        return BadgeKind.NEEDS_INPUT
    if view.state == "degraded":
        return BadgeKind.DEGRADED  # a recovery is open about it: see Recoveries
    if view.attention:
        return BadgeKind.NEEDS_INPUT
    session = active.current_session if active is not None else None
    return badge_kind(activity=view.activity,
                      runtime_presence=session.runtime_presence if session else None,
                      lifecycle=active.lifecycle_state if active is not None else "open")


class ViewList(RowList):
    """Data in: ``navigator_state``; intent out: ``ViewList.EnterRequested``."""

    EMPTY_TEXT = "no views yet: enter a project"
    COMPONENT_CLASSES = BADGE_COMPONENT_CLASSES | {"view-list--mode", "view-list--current"}
    BINDINGS = [Binding("enter", "select", "Enter view", show=True)]

    navigator_state: reactive[NavigatorState | None] = reactive(None, always_update=True,
                                                               repaint=False)
    current_view_id: reactive[str | None] = reactive(None)

    @dataclass
    class EnterRequested(Message):
        """Show this view's project (the engine routes to its frame). Both are row keys
        (``NavigatorState.row_key``): the ids on this host, ``HOST/ID`` on another."""

        view_id: str
        project_id: str | None

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.border_title = "Views"
        self._prompt_cache: dict[str, tuple[tuple[object, ...], Text]] = {}

    @property
    def views(self) -> tuple[ViewRow, ...]:
        state = self.navigator_state
        return state.views if state is not None else ()

    def view(self, view_id: str | None) -> ViewRow | None:
        """The live view a row key (or a bare view id) names."""
        return view_by_id(self.navigator_state, view_id)

    def watch_navigator_state(self) -> None:
        self._render_rows()

    def watch_current_view_id(self) -> None:
        self._render_rows()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._prompt_cache.clear()
        self._render_rows()  # badge colours come from the theme

    def _render_rows(self) -> None:
        state = self.navigator_state
        if state is None or not self.is_mounted:
            return
        rows = []
        # Ids are unique per host only: rows are keyed (and frames found) by both.
        shown = {(view.host_id, view.active_frame_id) for view in state.views}
        active = {(project.host_id, frame.frame_id): frame for project in state.projects
                  for frame in project.frames if (project.host_id, frame.frame_id) in shown}
        current_view = view_by_id(state, self.current_view_id)
        cache: dict[str, tuple[tuple[object, ...], Text]] = {}
        for view in state.views:
            if view.state == "retired":
                continue
            key = state.row_key(view.host_id, view.view_id)
            host = state.host_row(view.host_id)
            badge = view_badge(view, host, active.get((view.host_id, view.active_frame_id or "")))
            crumbs = view.breadcrumb
            title = view.title or "(untitled view)"
            if len(crumbs) > 1:
                title = f"{crumbs[0].title} › {title}"
            current = view is current_view
            looks = (badge, title, view.mode, current)
            cached = self._prompt_cache.get(key)
            prompt = cached[1] if cached is not None and cached[0] == looks else \
                self._prompt(badge, title, view.mode, current)
            cache[key] = (looks, prompt)
            rows.append(Row(key, prompt))
        self._prompt_cache = cache
        self.sync_rows(rows)

    def _prompt(self, badge: BadgeKind, title: str, mode: str, current: bool) -> Text:
        """One row's text; cached by what it shows (each load brings new rows, and
        styling every row of 20 views on every hook was most of this panel's cost)."""
        prompt = Text.assemble(badge_text(self, badge), " ")
        title_style = (self.get_component_rich_style("view-list--current", partial=True)
                       if current else "")
        prompt.append(title, style=title_style)
        prompt.append(f" · {mode}",
                      style=self.get_component_rich_style("view-list--mode", partial=True))
        return prompt

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        state = self.navigator_state
        view = self.view(event.option.id)
        if view is not None and state is not None:
            project = state.row_key(view.host_id, view.active_project_id) \
                if view.active_project_id is not None else None
            self.post_message(self.EnterRequested(state.row_key(view.host_id, view.view_id),
                                                  project))
