"""Command-palette entries for every project and open frame, by name.

Actions (start, back, close, ...) reach the palette through the app's
bindings (see ``SwitchboardApp.get_system_commands``); this provider adds the
places a person can go, so "ctrl+p, type a task name, enter" focuses it.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from typing import Protocol

from textual.command import DiscoveryHit, Hit, Hits, Provider

from core.state.state_types import NavigatorState


class Navigable(Protocol):
    """What the provider needs from the app (kept narrow to avoid an import cycle)."""

    navigator_state: NavigatorState | None

    def configured_project_names(self) -> dict[str, str]: ...

    def request_enter_project(self, project_id: str, name: str) -> None: ...

    def request_focus_frame(self, frame_id: str, project_id: str) -> None: ...


class PlacesProvider(Provider):
    """Projects ("Enter project alpha") and open frames ("Focus frame Fix login")."""

    def _places(self) -> Iterator[tuple[str, str, partial[None]]]:
        app: Navigable = self.app  # type: ignore[assignment]
        state = app.navigator_state
        names = dict(app.configured_project_names())
        if state is not None:  # keyed by row key: two hosts' equal ids stay two places
            names.update({state.row_key(p.host_id, p.project_id): p.name
                          for p in state.projects})
        for project_id, name in sorted(names.items(), key=lambda item: item[1].casefold()):
            yield (f"Enter project {name}", "show this project in its view",
                   partial(app.request_enter_project, project_id, name))
        if state is None:
            return
        for project in state.projects:
            for frame in project.frames:
                if frame.lifecycle_state != "open":
                    continue
                yield (f"Focus frame {frame.title}", f"{frame.role} in {project.name}",
                       partial(app.request_focus_frame, frame.frame_id,
                               state.row_key(project.host_id, project.project_id)))

    async def discover(self) -> Hits:
        for text, help_text, command in self._places():
            yield DiscoveryHit(text, command, text=text, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for text, help_text, command in self._places():
            score = matcher.match(text)
            if score > 0:
                yield Hit(score, matcher.highlight(text), command, text=text, help=help_text)
