"""UiStateStore: per-pane entries, version gate, never an error."""

from __future__ import annotations

from typing import Any

from navigator.ui_state import UI_STATE_VERSION, UiStateStore
from tests.navigator.scenario import Scenario


class _Broken:
    def load_ui_state(self) -> dict[str, Any]:
        raise OSError("disk gone")

    def save_ui_state(self, state: dict[str, Any]) -> None:
        raise OSError("disk gone")


def test_panes_keep_their_own_entries(empty: Scenario) -> None:
    alpha = UiStateStore(empty.client, "view-a")
    beta = UiStateStore(empty.client, "view-b")
    alpha.write({"tree_cursor": "frame:1"})
    beta.write({"tree_cursor": "frame:2"})
    assert alpha.read() == {"tree_cursor": "frame:1", "version": UI_STATE_VERSION}
    assert beta.read()["tree_cursor"] == "frame:2"
    assert (empty.home.root / "ui_state.json").is_file()


def test_foreign_or_old_documents_are_ignored(empty: Scenario) -> None:
    store = UiStateStore(empty.client, "default")
    empty.client.save_ui_state({"navigators": {"default": {"version": 99, "panel": "x"}}})
    assert store.read() == {}
    (empty.home.root / "ui_state.json").write_text("not json", encoding="utf-8")
    assert store.read() == {}
    store.write({"panel": "views"})  # replaces the unreadable document
    assert store.read()["panel"] == "views"


def test_a_broken_backend_is_never_an_error() -> None:
    store = UiStateStore(_Broken(), "default")
    assert store.read() == {}
    store.write({"panel": "views"})
