"""Where a navigator pane keeps its UI state between runs.

One JSON document (through the client, written atomically) holds an entry per
navigator pane, keyed by the view it belongs to ("default" when unbound), so
two panes of two views never overwrite each other. Anything unreadable or of
another version is ignored: UI state is a convenience, never a reason to fail.
"""

from __future__ import annotations

from typing import Any, Protocol

UI_STATE_VERSION = 1


class UiStateBackend(Protocol):
    def load_ui_state(self) -> dict[str, Any]: ...

    def save_ui_state(self, state: dict[str, Any]) -> None: ...


class UiStateStore:
    def __init__(self, backend: UiStateBackend, pane_key: str) -> None:
        self.backend = backend
        self.pane_key = pane_key

    def _document(self) -> dict[str, Any]:
        try:
            stored = self.backend.load_ui_state()
        except Exception:
            return {}
        return stored if isinstance(stored, dict) else {}

    def read(self) -> dict[str, Any]:
        """This pane's entry, or {} when absent, foreign or of another version."""
        panes = self._document().get("navigators")
        mine = panes.get(self.pane_key) if isinstance(panes, dict) else None
        if isinstance(mine, dict) and mine.get("version") == UI_STATE_VERSION:
            return mine
        return {}

    def write(self, mine: dict[str, Any]) -> None:
        """Read-modify-write so the entries of other panes survive."""
        try:
            panes = self._document().get("navigators")
            panes = dict(panes) if isinstance(panes, dict) else {}
            panes[self.pane_key] = {**mine, "version": UI_STATE_VERSION}
            self.backend.save_ui_state({"navigators": panes})
        except Exception:
            pass
