"""The navigator's Inbox: broker messages for the agents placed in one view.

The view's agents are the broker members whose pane is one of the view's
live surfaces; with no view (or no broker file yet) the inbox is empty rather
than an error, because most people never start a fleet.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from core.broker.broker import Broker
    from core.engine.engine import Engine
    from core.install.home import Home


@dataclass(frozen=True)
class InboxScope:
    """Whose messages a view's Inbox lists: its project's fleet, and hand-registered
    members whose pane is one of the view's live panes (all members without a view)."""

    panes: frozenset[str] | None
    fleet_name: str | None


def inbox_scope(engine: Engine, view_id: str | None) -> InboxScope:
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
    """The broker half: the scope's members' messages (empty without a broker file)."""
    if not home.broker_path.exists():
        return []
    from core.broker.broker import Broker

    panes = scope.panes
    with Broker.open(home.broker_path, tmux_socket=None, create=False, readonly=True) as broker:
        # The project's own fleet (its agents and the person, who has no pane), plus
        # hand-registered members whose pane is one of this view's.
        fleets = {f.fleet_id for f in broker.list_fleets() if f.name == scope.fleet_name}
        members = [e.member_id for e in broker.roster()
                   if panes is None or e.fleet_id in fleets
                   or _pane_of(broker, e.member_id) in panes]
        return broker.inbox(members) if members else []


def inbox_for_view(engine: Engine, home: Home, view_id: str | None) -> list[Any]:
    if not home.broker_path.exists():
        return []
    return inbox_in_scope(home, inbox_scope(engine, view_id))


def _pane_of(broker: Broker, member_id: int) -> str | None:
    detail = broker.member_detail(member_id)
    placement = getattr(detail, "placement", None)
    return getattr(placement, "mux_pane_id", None)


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
