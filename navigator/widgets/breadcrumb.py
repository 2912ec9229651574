"""The header line: where the current view is (core's breadcrumb), its mode, and
any transition or control turn in flight, so a person knows before pressing a key
whether something is still moving."""

from __future__ import annotations

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from core.state.state_types import HostRow, ViewRow
from navigator.widgets.badges import BADGE_COMPONENT_CLASSES, BadgeKind, badge_text

SEPARATOR = " › "


class Breadcrumb(Widget):
    """Data in: ``view`` (the current view's row) and its ``host``; no intent out."""

    COMPONENT_CLASSES = BADGE_COMPONENT_CLASSES | {
        "breadcrumb--separator", "breadcrumb--mode", "breadcrumb--flight",
        "breadcrumb--current", "breadcrumb--empty",
    }

    view: reactive[ViewRow | None] = reactive(None)
    host: reactive[HostRow | None] = reactive(None)

    def show(self, view: ViewRow | None, host: HostRow | None) -> None:
        """Take a new view and host row, repainting only when what the line shows moved
        (every load brings new rows: a view's last activity, a host's observation time)."""
        if _shown(view, host) != _shown(self.view, self.host):
            self.view, self.host = view, host

    def render(self) -> Text:
        view = self.view
        style = self.get_component_rich_style
        if view is None:
            return Text("Switchboard · pick a project, press enter",
                        style=style("breadcrumb--empty", partial=True))
        crumbs = [item.title for item in view.breadcrumb] or [view.title]
        line = Text(no_wrap=True, overflow="ellipsis")
        for index, title in enumerate(crumbs):
            if index:
                line.append(SEPARATOR, style=style("breadcrumb--separator", partial=True))
            last = index == len(crumbs) - 1
            line.append(title, style=style("breadcrumb--current", partial=True) if last else "")
        line.append(f"  [{view.mode}]", style=style("breadcrumb--mode", partial=True))
        flight = self._flight_text(view)
        if flight:
            line.append("  ")
            line.append_text(badge_text(self, BadgeKind.IN_FLIGHT))
            line.append(" " + flight, style=style("breadcrumb--flight", partial=True))
        if self.host is not None and (self.host.stale or self.host.reachability == "offline"):
            kind = BadgeKind.OFFLINE if self.host.reachability == "offline" else BadgeKind.STALE
            line.append("  ")
            line.append_text(badge_text(self, kind, with_word=True))
        return line

    @staticmethod
    def _flight_text(view: ViewRow) -> str:
        parts = []
        if view.transition_state is not None:
            parts.append(view.transition_state.replace("_", " "))
        if view.control_state is not None:
            parts.append(f"turn {view.control_state}")
        if view.state == "degraded":
            parts.append("view degraded")
        return " · ".join(parts)


def _shown(view: ViewRow | None, host: HostRow | None) -> tuple[object, ...]:
    """What ``Breadcrumb.render`` reads of its rows (the view's id too: keys act on it)."""
    return (view and (view.view_id, view.breadcrumb, view.title, view.mode,
                      view.transition_state, view.control_state, view.state),
            host and (host.stale, host.reachability))
