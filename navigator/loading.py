"""One read of what the navigator shows: the state, its data_version, the inbox.

Runs in a worker thread (the client blocks on SQLite). The inbox is read for
one view and may be unavailable without the state being so: a missing or
refusing broker becomes the panel's own line, never a failed load.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from core.client import EngineClient
from core.errors import SwitchboardError
from core.state_types import NavigatorState
from navigator.targeting import inbox_view_id


@dataclass(frozen=True)
class Loaded:
    """A new NavigatorState and the inbox of the view it was read for."""

    state: NavigatorState
    version: int
    inbox: list[Any] | None
    inbox_problem: str | None


def read_state(client: EngineClient, wanted_view: str | None, *,
               known: int | None = None) -> Loaded | None:
    """The state, or None when the client's data_version still equals ``known``."""
    version = client.data_version()
    if known is not None and version == known:
        return None
    state = client.state()
    inbox, problem = read_inbox(client, state, wanted_view)
    return Loaded(state, version, inbox, problem)


def read_inbox(client: EngineClient, state: NavigatorState,
               wanted_view: str | None) -> tuple[list[Any] | None, str | None]:
    """The messages for the wanted view (else the first live one), or why there are none."""
    view_id = inbox_view_id(state, wanted_view)
    if view_id is None:
        return [], None
    try:
        return list(client.inbox(view_id)), None
    except (NotImplementedError, ImportError, AttributeError):
        return None, "inbox unavailable: the broker is not set up"
    except SwitchboardError as exc:
        return None, f"inbox unavailable: {exc.message}"
