"""The navigator's Inbox: broker messages for the agents placed in one view.

The view's agents are the broker members whose pane is one of the view's
live surfaces; with no view (or no broker file yet) the inbox is empty rather
than an error, because most people never start a fleet.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from core.config.home import Home
    from core.context.reader import RegistryReader
    from storage.broker_store import BrokerStore


@dataclass(frozen=True)
class InboxScope:
    """Whose messages a view's Inbox lists: its project's fleet, and hand-registered
    members whose pane is one of the view's live panes (all members without a view)."""

    panes: frozenset[str] | None
    fleet_name: str | None


def inbox_scope(engine: RegistryReader, view_id: str | None) -> InboxScope:
    """The registry half of the read (the engine's connection; the caller's lock)."""
    panes: frozenset[str] | None = None
    if view_id is not None:
        panes = frozenset(r[0] for r in engine.conn.execute(
            "SELECT s.pane_id FROM frame_placements p JOIN surfaces s"
            " ON s.surface_id = p.surface_id WHERE p.view_id = ?"
            " AND s.lifecycle_state = 'live'", (view_id,)))
    project = None if view_id is None else engine.conn.execute(
        "SELECT project_id FROM user_views WHERE view_id = ?", (view_id,)).fetchone()
    return InboxScope(panes, f"project:{project[0]}" if project and project[0] else None)


def inbox_in_scope(home: Home, scope: InboxScope) -> list[Any]:
    """The broker half: the scope's members' messages (empty without a broker file).

    Read straight from the store (``core.broker.reading``): a navigator that only
    reads its Inbox loads neither the Broker's writes nor its pane delivery."""
    if not home.broker_path.exists():
        return []
    from core.broker.reading import inbox_entries, member_status, open_broker
    from core.model.ports import SystemClock

    panes = scope.panes
    store = open_broker(home.broker_path, create=False, readonly=True)
    try:
        # The project's own fleet (its agents and the person, who has no pane), plus
        # hand-registered members whose pane is one of this view's.
        fleets = {r["fleet_id"] for r in store.list_fleets(include_deleted=False)
                  if r["name"] == scope.fleet_name}
        members = []
        for row in store.list_members(None, active_in_live_fleets=True):
            member_status(row["status"])  # strict, as the roster: an unknown one is refused
            if (panes is None or row["fleet_id"] in fleets
                    or _pane_of(store, row["member_id"]) in panes):
                members.append(row["member_id"])
        return inbox_entries(store, members, SystemClock().now_ms()) if members else []
    finally:
        store.close()


def inbox_for_view(engine: RegistryReader, home: Home, view_id: str | None) -> list[Any]:
    if not home.broker_path.exists():
        return []
    return inbox_in_scope(home, inbox_scope(engine, view_id))


def _pane_of(store: BrokerStore, member_id: int) -> str | None:
    placement = store.get_placement(member_id)
    return None if placement is None else placement["mux_pane_id"]


def ack(home: Home, message_id: int, member_id: int | None) -> Any:
    from core.broker.broker import Broker
    from core.model.errors import SwitchboardError

    with Broker.open(home.broker_path, tmux_socket=None, create=False) as broker:
        if member_id is None:
            rows = [e for e in broker.inbox([m.member_id for m in broker.roster()])
                    if e.message_id == message_id]
            if not rows:
                raise SwitchboardError(f"message {message_id} is not pending in any inbox",
                                       code="unknown_message")
            member_id = rows[0].to_member_id
        return broker.ack(member_id, message_id)
