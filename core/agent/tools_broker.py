"""Agent tools for talking through the broker: send, broadcast, poll, ack, wait.

Same rules as ``core.agent.tools``: all authority comes from the caller's
capability (the pane environment); the caller is the broker member of its own
frame and can act only as that member. Results are bounded and privacy-safe:
member ids, names and message text, never session paths, panes or capabilities.

Mutations are idempotent: sending the same text to the same recipient while
the earlier copy is still unread returns that copy (a retried tool call does
not post twice); ACKing an already ACKed message of one's own succeeds.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from core.broker.broker import (
    MAX_MESSAGE_CHARS,
    AlreadyAcked,
    Broker,
    InvalidRequest,
    Message,
    MessageState,
    UnknownMessage,
)
from core.broker.delivery import DrainReport
from core.model.errors import Conflict

if TYPE_CHECKING:
    from core.broker.membership import ProjectFleet

MAX_TEXT = MAX_MESSAGE_CHARS  # the broker's one limit, said here before anything is opened
MAX_LISTED = 50
MAX_WAIT_S = 600.0


@dataclass(frozen=True)
class _Me:
    broker: Broker
    fleet: ProjectFleet
    member_id: int
    parent_frame: str | None


@contextmanager
def _as_member(env: dict[str, str] | None) -> Iterator[_Me]:
    from core.agent.tools import authorized
    from core.broker.membership import open_managed_broker, sync_project

    with authorized(env) as (engine, authority):
        frame = engine.conn.execute(
            "SELECT project_id, parent_frame_id FROM frames WHERE frame_id = ?",
            (authority.frame_id,)).fetchone()
        with open_managed_broker(engine) as broker:
            fleet = sync_project(engine, broker, frame["project_id"])
            if fleet is None:
                raise Conflict("this project's workspace agent is not running, so it has no "
                               "broker fleet yet; start the workspace agent first",
                               code="no_fleet")
            me = fleet.member_for(authority.frame_id)
            if me is None:
                raise Conflict("this frame is not a broker member (its agent has no live "
                               "pane); restart the agent from the navigator", code="not_member")
            yield _Me(broker, fleet, me, frame["parent_frame_id"])


def _who(broker: Broker, member_id: int) -> dict[str, Any]:
    member = broker.get_member(member_id)
    return {"member_id": member.member_id, "name": member.name, "kind": member.kind.value}


def _delivery(report: DrainReport | None) -> str:
    if report is None:
        return "stored"
    if report.notified:
        return "typed into the recipient's pane"
    reason = report.deferred or report.skipped or (
        report.not_notified.reason if report.not_notified else None)
    return f"pending: {reason}" if reason else "pending"


def _text(text: str) -> str:
    if not text or not text.strip():
        raise InvalidRequest("message text must not be empty")
    if len(text) > MAX_TEXT:
        raise InvalidRequest(f"message text is {len(text)} characters; the limit is {MAX_TEXT}")
    return text


def _send_once(me: _Me, to_member_id: int, text: str) -> dict[str, Any]:
    for row in me.broker.store.pending_messages(to_member_id):
        if row["from_member_id"] == me.member_id and row["text"] == text:
            return {"message_id": row["message_id"], "to": _who(me.broker, to_member_id),
                    "delivery": "already sent and still unread", "duplicate": True}
    result = me.broker.send(me.fleet.fleet.fleet_id, me.member_id, to_member_id, text)
    return {"message_id": result.message.message_id, "to": _who(me.broker, to_member_id),
            "delivery": _delivery(result.delivery), "duplicate": False}


def message_send(to: str, text: str, *, env: dict[str, str] | None = None) -> dict[str, Any]:
    """Send one message to a member of this project (id, frame title, parent or person)."""
    from core.broker.membership import resolve_member

    text = _text(text)
    with _as_member(env) as me:
        recipient = resolve_member(me.broker, me.fleet, str(to), me=me.member_id,
                                   parent_frame=me.parent_frame)
        return {"ok": True, **_send_once(me, recipient.member_id, text)}


def message_broadcast(text: str, *, env: dict[str, str] | None = None) -> dict[str, Any]:
    """The same message to every other member of this project, the person included."""
    text = _text(text)
    with _as_member(env) as me:
        others = [m for m in (*me.fleet.by_frame.values(),
                              *([me.fleet.person_id] if me.fleet.person_id else []))
                  if m != me.member_id]
        sent = [_send_once(me, member_id, text) for member_id in others]
    return {"ok": True, "sent": sent, "recipients": len(sent)}


def _public(broker: Broker, message: Message) -> dict[str, Any]:
    return {"message_id": message.message_id, "from": _who(broker, message.from_member_id),
            "created_at": message.created_at, "status": message.status.value,
            "text": message.text[:MAX_TEXT]}


def message_poll(*, env: dict[str, str] | None = None) -> dict[str, Any]:
    """My unread messages, oldest first (reading changes nothing; ACK each when handled)."""
    with _as_member(env) as me:
        pending = me.broker.poll(me.member_id)
        listed = [_public(me.broker, m) for m in pending[:MAX_LISTED]]
        return {"ok": True, "me": _who(me.broker, me.member_id), "messages": listed,
                "more": max(0, len(pending) - MAX_LISTED)}


def message_ack(message_id: int | str, *, env: dict[str, str] | None = None
                ) -> dict[str, Any]:
    """Mark one of my messages handled; ACKing it again is fine."""
    try:
        number = int(message_id)
    except (TypeError, ValueError):
        raise InvalidRequest(f"message id must be a number, not {message_id!r}") from None
    with _as_member(env) as me:
        try:
            message = me.broker.ack(me.member_id, number)
            again = False
        except AlreadyAcked:
            message = Message(**_row(me.broker, number))
            again = True
        return {"ok": True, "message_id": message.message_id, "status": message.status.value,
                "already_acked": again}


def _row(broker: Broker, message_id: int) -> dict[str, Any]:
    row = broker.store.get_message(message_id)
    if row is None:
        raise UnknownMessage(f"no message {message_id}")
    return {"message_id": row["message_id"], "from_member_id": row["from_member_id"],
            "to_member_id": row["to_member_id"], "created_at": row["created_at"],
            "status": MessageState(row["status_state"]),
            "status_timestamp": row["status_timestamp"], "text": row["text"]}


def message_wait(timeout: float | str = 60, *, env: dict[str, str] | None = None
                 ) -> dict[str, Any]:
    """Block until I have unread messages or ``timeout`` seconds pass (at most 600)."""
    try:
        seconds = float(timeout)
    except (TypeError, ValueError):
        raise InvalidRequest(f"timeout must be a number of seconds, not {timeout!r}") from None
    if seconds < 0 or seconds != seconds:
        raise InvalidRequest("timeout must be zero or more seconds")
    with _as_member(env) as me:
        waited = me.broker.wait(me.member_id, min(seconds, MAX_WAIT_S))
        return {"ok": True, "timed_out": waited.timed_out,
                "messages": [_public(me.broker, m) for m in waited.messages[:MAX_LISTED]]}




def call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    if name == "message_send":
        return message_send(arguments["to"], arguments["text"])
    if name == "message_broadcast":
        return message_broadcast(arguments["text"])
    if name == "message_poll":
        return message_poll()
    if name == "message_ack":
        return message_ack(arguments["id"])
    if name == "message_wait":
        return message_wait(arguments.get("timeout", 60))
    raise KeyError(name)
