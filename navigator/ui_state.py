"""Where a navigator pane keeps its UI state between runs, and what it keeps.

One JSON document (through the client, written atomically) holds an entry per
navigator pane, keyed by the view it belongs to ("default" when unbound), so
two panes of two views never overwrite each other. Anything unreadable or of
another version is ignored: UI state is a convenience, never a reason to fail.
``PaneLayout`` is one entry; ``capture_layout`` and ``apply_layout`` read it from
and put it back on the panels.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Protocol

from textual.app import App
from textual.timer import Timer
from textual.widget import Widget

from navigator.jobs import Group
from navigator.widgets.frames import FrameTree
from navigator.widgets.recoveries import RecoveryList
from navigator.widgets.views import ViewList

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

    def read_layout(self) -> PaneLayout | None:
        """This pane's remembered layout, or None when it has none."""
        mine = self.read()
        return PaneLayout.from_entry(mine) if mine else None

    def write_layout(self, layout: PaneLayout) -> None:
        self.write(layout.to_entry())


#: The panels whose focus and scroll a pane remembers (their widget ids).
PANELS = ("views", "projects", "recoveries", "inbox")


@dataclass(frozen=True)
class PaneLayout:
    """What a pane remembers: the focused panel, the view keys follow, each cursor,
    the folded tree nodes and each panel's scroll (stored as this entry's fields)."""

    panel: str | None = None
    current_view: str | None = None
    tree_cursor: str | None = None
    collapsed: tuple[str, ...] = ()
    views_cursor: str | None = None
    recoveries_cursor: str | None = None
    scroll: dict[str, int] = field(default_factory=dict)

    @classmethod
    def from_entry(cls, entry: dict[str, Any]) -> PaneLayout:
        """Tolerant: a field of the wrong type is left at its default."""
        collapsed = entry.get("collapsed")
        scroll = entry.get("scroll")
        return cls(
            panel=_text(entry.get("panel")),
            current_view=_text(entry.get("current_view")),
            tree_cursor=_text(entry.get("tree_cursor")),
            collapsed=tuple(str(key) for key in collapsed) if isinstance(collapsed, list)
            else (),
            views_cursor=_text(entry.get("views_cursor")),
            recoveries_cursor=_text(entry.get("recoveries_cursor")),
            scroll={panel: y for panel, y in scroll.items()
                    if panel in PANELS and isinstance(y, int)}
            if isinstance(scroll, dict) else {})

    def to_entry(self) -> dict[str, Any]:
        return {"panel": self.panel, "current_view": self.current_view,
                "tree_cursor": self.tree_cursor, "collapsed": sorted(self.collapsed),
                "views_cursor": self.views_cursor,
                "recoveries_cursor": self.recoveries_cursor, "scroll": dict(self.scroll)}


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def capture_layout(app: App[Any], current_view_id: str | None,
                   previous: PaneLayout) -> PaneLayout:
    """The pane's layout now; the focused panel falls back to the last one known (a
    dialog or the search box has the keyboard)."""
    tree = app.query_one(FrameTree)
    focused = app.focused
    panel = focused.id if isinstance(focused, Widget) and focused.id in PANELS else None
    return PaneLayout(
        panel=panel or previous.panel,
        current_view=current_view_id,
        tree_cursor=tree.cursor_key,
        collapsed=tuple(sorted(tree.collapsed)),
        views_cursor=app.query_one(ViewList).highlighted_key,
        recoveries_cursor=app.query_one(RecoveryList).highlighted_key,
        scroll={panel_id: app.query_one(f"#{panel_id}").scroll_offset.y
                for panel_id in PANELS})


def apply_layout(app: App[Any], layout: PaneLayout) -> None:
    """Put folds, cursors, focus and scroll back (the current view is the app's)."""
    tree = app.query_one(FrameTree)
    tree.apply_collapsed(layout.collapsed)
    tree.select_key(layout.tree_cursor)
    app.query_one(ViewList).highlight_key(layout.views_cursor)
    app.query_one(RecoveryList).highlight_key(layout.recoveries_cursor)
    if layout.panel in PANELS:
        app.query_one(f"#{layout.panel}").focus()

    def apply_scroll() -> None:
        for panel_id, y in layout.scroll.items():
            app.query_one(f"#{panel_id}").scroll_to(y=y, animate=False)

    if layout.scroll:
        app.call_after_refresh(apply_scroll)


class PaneMemory:
    """One pane's layout between runs: put back once the first state is shown, then
    snapshotted on every move (cheap), written at most twice a second in a thread and
    once more, synchronously, at exit."""

    SAVE_DELAY = 0.5

    def __init__(self, app: App[Any], store: UiStateStore) -> None:
        self._app = app
        self.store = store
        self.layout: PaneLayout | None = None
        self.restored = False
        self._timer: Timer | None = None

    def restore_once(self, apply: Callable[[PaneLayout], None]) -> None:
        """The first state is on screen: ``apply`` the remembered layout, if any."""
        if self.restored:
            return
        self.restored = True
        if self.layout is not None:
            apply(self.layout)

    def snapshot(self, current_view_id: str | None) -> None:
        if not self.restored or not self._app.is_running:
            return
        self.layout = capture_layout(self._app, current_view_id, self.layout or PaneLayout())
        if self._timer is not None:
            self._timer.stop()
        self._timer = self._app.set_timer(self.SAVE_DELAY, self._save)

    def _save(self) -> None:
        if self.layout is not None:  # the store never raises
            self._app.run_worker(partial(self.store.write_layout, self.layout),
                                 group=Group.UI_STATE, thread=True, exclusive=True,
                                 exit_on_error=False)

    def flush(self) -> None:
        """At exit: one small file, once."""
        if self.restored and self.layout is not None:
            self.store.write_layout(self.layout)
