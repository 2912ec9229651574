"""The message broker: fleets, members, placements, messages and asset installs.

Agents talk to each other and to the person through this broker (spec:
``broker-data-model.txt``, the CAFleet format family). It owns its own SQLite
file; every operation here validates first and raises an exact domain error
before anything is written, then writes in one ``BEGIN IMMEDIATE``
transaction on the invocation's startup-validated connection.

Delivery of pane notifications lives in ``core.broker.delivery`` (at least
once, under a per-pane lock); the read-only inbox stream in
``core.broker.stream``. The navigator's Inbox panel reads through
``inbox_for_members`` and acts through ``ack``; it never touches SQLite.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from core.broker.delivery import (
    DeliveryGate,
    DrainReport,
    Notifier,
    PaneLocks,
    PaneTarget,
    TmuxTyper,
)
from core.broker.reading import (  # re-exported: the broker's own values and errors
    BrokerCorrupt,
    InboxEntry,
    inbox_entries,
    iso_utc,
    member_status,
    message_state,
    open_broker,
    parse_utc,
    seconds_since,
)
from core.broker.reading import (
    BrokerUnavailable as BrokerUnavailable,
)
from core.model.errors import Conflict, NotFound, SwitchboardError, Unauthorized
from core.model.ports import Clock, SystemClock
from core.model.text import TextShape, refuse_unsafe
from storage.broker_schema import (
    MemberStatus,  # re-exported: the value sets belong to the file format
    MessageState,
    StatusDecodeError,
)
from storage.broker_store import BrokerStore, ChangeWatcher

# --------------------------------------------------------------------------- errors


class InvalidRequest(SwitchboardError):
    code = "invalid_request"


class UnknownFleet(NotFound):
    code = "unknown_fleet"


class UnknownMember(NotFound):
    code = "unknown_member"


class UnknownMessage(NotFound):
    code = "unknown_message"


class FleetDeleted(Conflict):
    code = "fleet_deleted"


class MemberNotInFleet(Conflict):
    code = "member_not_in_fleet"


class SenderDeregistered(Conflict):
    code = "sender_deregistered"


class RecipientDeregistered(Conflict):
    code = "recipient_deregistered"


class MemberDeregistered(Conflict):
    code = "member_deregistered"


class DirectorProtected(Conflict):
    code = "director_protected"


class MemberHasMessages(Conflict):
    code = "member_has_messages"


class AlreadyAcked(Conflict):
    code = "already_acked"


class NotRecipient(Unauthorized):
    code = "not_recipient"


# --------------------------------------------------------------------------- records

class MemberKind(StrEnum):
    """Public kind: director exactly when the fleet's Director reference names the member."""

    DIRECTOR = "director"
    MEMBER = "member"


@dataclass(frozen=True)
class Fleet:
    fleet_id: int
    name: str | None
    created_at: str
    deleted_at: str | None
    director_member_id: int | None

    @property
    def live(self) -> bool:
        return self.deleted_at is None


@dataclass(frozen=True)
class PlacementSpec:
    """Where a member runs; ``mux_pane_id`` is None while its pane is still being created."""

    mux_session: str
    mux_window_id: str
    mux_pane_id: str | None
    coding_agent: str
    backend: str = "tmux"

    def target(self) -> PaneTarget | None:
        if self.mux_pane_id is None:
            return None
        return PaneTarget(self.backend, self.mux_session, self.mux_window_id, self.mux_pane_id)


@dataclass(frozen=True)
class Placement:
    backend: str
    mux_session: str
    mux_window_id: str
    mux_pane_id: str | None
    coding_agent: str
    created_at: str


@dataclass(frozen=True)
class Member:
    member_id: int
    fleet_id: int
    name: str
    description: str
    status: MemberStatus
    kind: MemberKind
    registered_at: str
    deregistered_at: str | None


@dataclass(frozen=True)
class MemberDetail:
    """A member with registration, description, placement and activity (any status)."""

    member: Member
    placement: Placement | None
    last_activity_at: str | None
    idle_seconds: float | None


@dataclass(frozen=True)
class RosterEntry:
    """One active member of a live fleet, with activity for "who is idle" views."""

    member_id: int
    fleet_id: int
    name: str
    kind: MemberKind
    coding_agent: str | None
    mux_pane_id: str | None
    last_activity_at: str | None
    idle_seconds: float | None


@dataclass(frozen=True)
class Message:
    """The public message record; internal ``notified_at`` is deliberately absent."""

    message_id: int
    from_member_id: int
    to_member_id: int
    created_at: str
    status: MessageState
    status_timestamp: str
    text: str


@dataclass(frozen=True)
class FleetCreated:
    fleet: Fleet
    director: MemberDetail


@dataclass(frozen=True)
class FleetDeletion:
    fleet: Fleet
    deregistered_members: int


@dataclass(frozen=True)
class SendResult:
    message: Message
    delivery: DrainReport | None  # None: self-send or no notifier configured


@dataclass(frozen=True)
class WaitResult:
    messages: tuple[Message, ...]
    deliveries: tuple[DrainReport, ...]
    timed_out: bool


@dataclass(frozen=True)
class AssetInstall:
    coding_agent: str
    path: str
    cafleet_version: str
    installed_at: str


def _fleet(row: Any) -> Fleet:
    return Fleet(row["fleet_id"], row["name"], row["created_at"], row["deleted_at"],
                 row["director_member_id"])


def _member(row: Any) -> Member:
    kind = (MemberKind.DIRECTOR if row["director_member_id"] == row["member_id"]
            else MemberKind.MEMBER)
    return Member(row["member_id"], row["fleet_id"], row["name"], row["description"],
                  member_status(row["status"]), kind, row["registered_at"],
                  row["deregistered_at"])


def _placement(row: Any) -> Placement | None:
    if row is None:
        return None
    return Placement(row["backend"], row["mux_session"], row["mux_window_id"],
                     row["mux_pane_id"], row["coding_agent"], row["created_at"])


def _message(row: Any) -> Message:
    return Message(row["message_id"], row["from_member_id"], row["to_member_id"],
                   row["created_at"], message_state(row["status_state"]),
                   row["status_timestamp"], row["text"])


# --------------------------------------------------------------------------- the broker


class Broker:
    """Broker behaviour over one validated store, a clock and an optional pane notifier.

    Ports, not globals: tests pass a fixed clock and a notifier typing into a
    private tmux server; the CLI builds one per invocation with ``Broker.open``.
    """

    def __init__(self, store: BrokerStore, *, clock: Clock | None = None,
                 notifier: Notifier | None = None, locks: PaneLocks | None = None) -> None:
        self.store = store
        self.clock = clock or SystemClock()
        self.notifier = notifier
        self.locks = locks or (notifier.locks if notifier else PaneLocks.beside(store.path))

    @classmethod
    def open(cls, path: str | os.PathLike[str], *, tmux_socket: str | os.PathLike[str] | None,
             clock: Clock | None = None, create: bool = True,
             gate: DeliveryGate | None = None, readonly: bool = False) -> Broker:
        """``gate``: typing into Switchboard-launched members waits until shown and ready.

        ``readonly``: a reader (a navigator's Inbox) that must not write, not even the
        checkpoint a read-write connection's close does: that close changed the files
        every other navigator watches, so each read made all the others read again."""
        store = open_broker(path, create=create, readonly=readonly)
        locks = PaneLocks.beside(store.path)
        return cls(store, clock=clock,
                   notifier=Notifier(TmuxTyper(tmux_socket), locks, gate=gate), locks=locks)

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> Broker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def now(self) -> str:
        return iso_utc(self.clock.now_ms())

    # ---- lookups that raise the exact error

    def get_fleet(self, fleet_id: int) -> Fleet:
        row = self.store.get_fleet(fleet_id)
        if row is None:
            raise UnknownFleet(f"no fleet {fleet_id}; `switchboard fleet list` shows fleets")
        return _fleet(row)

    def _live_fleet(self, fleet_id: int) -> Fleet:
        fleet = self.get_fleet(fleet_id)
        if not fleet.live:
            raise FleetDeleted(f"fleet {fleet_id} was deleted at {fleet.deleted_at}")
        return fleet

    def get_member(self, member_id: int) -> Member:
        row = self.store.get_member(member_id)
        if row is None:
            raise UnknownMember(
                f"no member {member_id}; `switchboard member list` shows active members")
        return _member(row)

    # ---- fleets

    def create_fleet(self, name: str | None, *, director_name: str,
                     director_description: str, placement: PlacementSpec) -> FleetCreated:
        """Bootstrap: fleet, Director and placement, Director reference backfilled, one commit."""
        _require_text(director_name, "director name")
        refuse_unsafe("fleet name", name, TextShape.LINE)
        refuse_unsafe("director name", director_name, TextShape.LINE)
        refuse_unsafe("director description", director_description, TextShape.BLOCK)
        _require_placement(placement)
        target = placement.target()
        if target is None:
            raise InvalidRequest("the Director needs a concrete pane (--pane)")
        with self.locks.hold(target), self.store.transaction():
            now = self.now()
            fleet_id = self.store.insert_fleet(name, now)
            director_id = self.store.insert_member(fleet_id, director_name,
                                                   director_description, now)
            self._insert_placement(director_id, placement, now)
            self.store.set_fleet_director(fleet_id, director_id)
        return FleetCreated(self.get_fleet(fleet_id), self.member_detail(director_id))

    def list_fleets(self, *, include_deleted: bool = False) -> list[Fleet]:
        return [_fleet(r) for r in self.store.list_fleets(include_deleted=include_deleted)]

    def delete_fleet(self, fleet_id: int) -> FleetDeletion:
        """Soft delete: the fleet is stamped, its members deregistered, messages kept."""
        with self.store.transaction():
            self._live_fleet(fleet_id)
            now = self.now()
            self.store.soft_delete_fleet(fleet_id, now)
            count = self.store.deregister_fleet_members(fleet_id, now)
        return FleetDeletion(self.get_fleet(fleet_id), count)

    # ---- members and placements

    def register_member(self, fleet_id: int, name: str, *, description: str,
                        placement: PlacementSpec) -> MemberDetail:
        _require_text(name, "member name")
        refuse_unsafe("member name", name, TextShape.LINE)
        refuse_unsafe("member description", description, TextShape.BLOCK)
        _require_placement(placement)
        target = placement.target()
        with self.locks.hold(*([target] if target else [])), self.store.transaction():
            self._live_fleet(fleet_id)
            now = self.now()
            member_id = self.store.insert_member(fleet_id, name, description, now)
            self._insert_placement(member_id, placement, now)
        return self.member_detail(member_id)

    def place_member(self, member_id: int, placement: PlacementSpec) -> MemberDetail:
        """Move (or first set) a placement under the old and new panes' input locks."""
        _require_placement(placement)
        member = self.get_member(member_id)
        old = _placement(self.store.get_placement(member_id))
        targets = [t for t in (placement.target(), _target_of(old)) if t is not None]
        if member.kind is MemberKind.DIRECTOR and placement.mux_pane_id is None:
            raise InvalidRequest("the Director's placement must keep a concrete pane")
        with self.locks.hold(*targets), self.store.transaction():
            member = self.get_member(member_id)
            if member.status is not MemberStatus.ACTIVE:
                raise MemberDeregistered(f"member {member_id} is deregistered")
            if self.store.get_placement(member_id) is None:
                self._insert_placement(member_id, placement, self.now())
            else:
                self.store.move_placement(
                    member_id, backend=placement.backend, mux_session=placement.mux_session,
                    mux_window_id=placement.mux_window_id, mux_pane_id=placement.mux_pane_id)
        return self.member_detail(member_id)

    def deregister_member(self, member_id: int) -> Member:
        with self.store.transaction():
            member = self.get_member(member_id)
            if member.kind is MemberKind.DIRECTOR:
                raise DirectorProtected(
                    f"member {member_id} is the root Director of fleet {member.fleet_id}; "
                    "delete the fleet instead")
            if member.status is not MemberStatus.ACTIVE:
                raise MemberDeregistered(f"member {member_id} is already deregistered")
            self.store.deregister_member(member_id, self.now())
        return self.get_member(member_id)

    def delete_member(self, member_id: int) -> Member:
        """Hard delete of a member without message history (e.g. a failed pending creation)."""
        member = self.get_member(member_id)
        old = _target_of(_placement(self.store.get_placement(member_id)))
        with self.locks.hold(*([old] if old else [])), self.store.transaction():
            member = self.get_member(member_id)
            if member.kind is MemberKind.DIRECTOR:
                raise DirectorProtected(
                    f"member {member_id} is the root Director of fleet {member.fleet_id} "
                    "and cannot be deleted")
            if self.store.count_member_messages(member_id):
                raise MemberHasMessages(
                    f"member {member_id} has messages, which are retained; "
                    "deregister it instead")
            self.store.delete_member(member_id)
        return member

    def member_detail(self, member_id: int) -> MemberDetail:
        member = self.get_member(member_id)
        last = self._last_activity(member_id)
        return MemberDetail(member, _placement(self.store.get_placement(member_id)), last,
                            None if last is None else seconds_since(last, self.clock.now_ms()))

    def roster(self, fleet_id: int | None = None) -> list[RosterEntry]:
        """Active members of live fleets, with activity and idle seconds."""
        if fleet_id is not None:
            self.get_fleet(fleet_id)
        now_ms = self.clock.now_ms()
        entries = []
        for row in self.store.list_members(fleet_id, active_in_live_fleets=True):
            member = _member(row)
            placement = _placement(self.store.get_placement(member.member_id))
            last = self._last_activity(member.member_id)
            entries.append(RosterEntry(
                member.member_id, member.fleet_id, member.name, member.kind,
                placement.coding_agent if placement else None,
                placement.mux_pane_id if placement else None,
                last, None if last is None else seconds_since(last, now_ms)))
        return entries

    def _last_activity(self, member_id: int) -> str | None:
        stamps = [s for s in self.store.member_activity(member_id) if s is not None]
        return max(stamps, key=parse_utc) if stamps else None

    def _insert_placement(self, member_id: int, placement: PlacementSpec, now: str) -> None:
        self.store.insert_placement(
            member_id, backend=placement.backend, mux_session=placement.mux_session,
            mux_window_id=placement.mux_window_id, mux_pane_id=placement.mux_pane_id,
            coding_agent=placement.coding_agent, created_at=now)

    # ---- messages

    def send(self, fleet_id: int, from_member_id: int, to_member_id: int,
             text: str) -> SendResult:
        """Store the message, then notify the recipient's pane (at least once, best effort).

        A notification failure does not fail the send: the message is stored
        and pending, and the result carries the not-notified diagnostic.
        """
        _require_message(text)
        self_send = from_member_id == to_member_id
        with self.store.transaction():
            self._live_fleet(fleet_id)
            sender = self.get_member(from_member_id)
            recipient = self.get_member(to_member_id)
            for member in (sender, recipient):
                if member.fleet_id != fleet_id:
                    raise MemberNotInFleet(
                        f"member {member.member_id} belongs to fleet {member.fleet_id}, "
                        f"not fleet {fleet_id}")
            if sender.status is not MemberStatus.ACTIVE:
                raise SenderDeregistered(f"sender member {from_member_id} is deregistered")
            if recipient.status is not MemberStatus.ACTIVE:
                raise RecipientDeregistered(
                    f"recipient member {to_member_id} is deregistered; nothing was sent")
            now = self.now()
            message_id = self.store.insert_message(
                from_member_id, to_member_id, text, now,
                notified_at=now if self_send else None)  # self-sends: stamped, typed nowhere
        message = _message(self.store.get_message(message_id))
        if self_send or self.notifier is None:
            return SendResult(message, None)
        return SendResult(message, self._drain(to_member_id, set()))

    def poll(self, member_id: int) -> list[Message]:
        """Pending messages for a member, oldest first; reading changes nothing."""
        self.get_member(member_id)
        return [_message(r) for r in self.store.pending_messages(member_id)]

    def ack(self, member_id: int, message_id: int) -> Message:
        """The recipient consumes a message: the only transition of status_state."""
        with self.store.transaction():
            row = self.store.get_message(message_id)
            if row is None:
                raise UnknownMessage(f"no message {message_id}")
            self.get_member(member_id)
            message = _message(row)
            if message.to_member_id != member_id:
                raise NotRecipient(
                    f"message {message_id} is addressed to member {message.to_member_id}, "
                    f"not member {member_id}; only its recipient can ACK it")
            if message.status is MessageState.COMPLETED:
                raise AlreadyAcked(
                    f"message {message_id} was already ACKed at {message.status_timestamp}")
            self.store.ack_message(message_id, member_id, self.now())
        return _message(self.store.get_message(message_id))

    def get_message(self, message_id: int) -> Message:
        row = self.store.get_message(message_id)
        if row is None:
            raise UnknownMessage(f"no message {message_id}")
        return _message(row)

    def cancel(self, sender_id: int, message_id: int) -> Message:
        """The sender withdraws an unread message: it leaves the recipient's pending set.

        The format knows only pending and completed, so a withdrawn message is
        completed with the withdrawal time (it is kept, like every message).
        """
        with self.store.transaction():
            message = self.get_message(message_id)
            self.get_member(sender_id)
            if message.from_member_id != sender_id:
                raise NotRecipient(
                    f"message {message_id} was sent by member {message.from_member_id}, "
                    f"not member {sender_id}; only its sender can cancel it",
                    code="not_sender")
            if message.status is MessageState.COMPLETED:
                raise AlreadyAcked(
                    f"message {message_id} was already ACKed at {message.status_timestamp}; "
                    "there is nothing to cancel")
            self.store.ack_message(message_id, message.to_member_id, self.now())
        return self.get_message(message_id)

    def broadcast(self, fleet_id: int, from_member_id: int, text: str) -> list[SendResult]:
        """The same text to every other active member of the fleet, one message each."""
        _require_message(text)
        self._live_fleet(fleet_id)
        others = [e.member_id for e in self.roster(fleet_id) if e.member_id != from_member_id]
        if not others:
            raise InvalidRequest(f"fleet {fleet_id} has no other active member to message")
        return [self.send(fleet_id, from_member_id, to, text) for to in others]

    def wait(self, member_id: int, timeout_s: float) -> WaitResult:
        """Block until the member has pending messages (or timeout), retrying its notifications.

        Wakes on commits seen by ``ChangeWatcher`` (a cheap stat every 50 ms),
        not by re-querying the messages table.
        """
        self.get_member(member_id)
        deadline = time.monotonic() + max(0.0, timeout_s)  # real time, even with a test clock
        attempted: set[int] = set()
        reports: list[DrainReport] = []
        watcher = ChangeWatcher(self.store.path, data_version=self.store.data_version)
        while True:
            if self.notifier is not None:
                report = self._drain(member_id, attempted)
                if report.notified or report.not_notified:
                    reports.append(report)
            pending = self.poll(member_id)
            if pending:
                return WaitResult(tuple(pending), tuple(reports), False)
            left = deadline - time.monotonic()
            if left <= 0:
                return WaitResult((), tuple(reports), True)
            watcher.wait(left)

    def _drain(self, member_id: int, attempted: set[int]) -> DrainReport:
        assert self.notifier is not None
        try:
            return self.notifier.drain(self.store, member_id, now=self.now, attempted=attempted)
        except StatusDecodeError as exc:
            raise BrokerCorrupt(f"broker file holds {exc}; it was left unchanged") from None

    # ---- asset installs

    def record_asset_install(self, coding_agent: str, path: str,
                             cafleet_version: str) -> AssetInstall:
        """Upsert after a successful backend asset installation (independent of members)."""
        _require_text(coding_agent, "coding agent")
        _require_text(path, "asset path")
        _require_text(cafleet_version, "version")
        now = self.now()
        with self.store.transaction():
            self.store.upsert_asset_install(coding_agent, path, cafleet_version, now)
        return AssetInstall(coding_agent, path, cafleet_version, now)

    def list_asset_installs(self) -> list[AssetInstall]:
        return [AssetInstall(r["coding_agent"], r["path"], r["cafleet_version"],
                             r["installed_at"]) for r in self.store.list_asset_installs()]

    # ---- inbox (navigator panel)

    def inbox(self, member_ids: Iterable[int], *, include_completed: bool = False
              ) -> list[InboxEntry]:
        """Messages to these members: pending first, then oldest first, with age."""
        return inbox_entries(self.store, member_ids, self.clock.now_ms(),
                             include_completed=include_completed)


def _target_of(placement: Placement | None) -> PaneTarget | None:
    if placement is None or placement.mux_pane_id is None:
        return None
    return PaneTarget(placement.backend, placement.mux_session, placement.mux_window_id,
                      placement.mux_pane_id)


MAX_MESSAGE_CHARS = 8000
"""One limit for every sender: agents' tools, the person's navigator and CLI (which
took a 120 KB message while agents were held to this)."""


def _require_message(text: str) -> None:
    _require_text(text, "message text")
    if len(text) > MAX_MESSAGE_CHARS:
        raise InvalidRequest(f"message text is {len(text)} characters; the limit is "
                             f"{MAX_MESSAGE_CHARS} for everyone; nothing was sent")
    refuse_unsafe("message text", text, TextShape.BLOCK)


def _require_text(value: str | None, what: str) -> None:
    if value is None or not value.strip():
        raise InvalidRequest(f"{what} must not be empty")


def _require_placement(placement: PlacementSpec) -> None:
    for value, what in ((placement.mux_session, "tmux session"),
                        (placement.mux_window_id, "tmux window id"),
                        (placement.coding_agent, "coding agent"),
                        (placement.backend, "backend")):
        _require_text(value, what)
        refuse_unsafe(what, value, TextShape.LINE)
    if placement.mux_pane_id is not None:
        _require_text(placement.mux_pane_id, "tmux pane id")
        refuse_unsafe("tmux pane id", placement.mux_pane_id, TextShape.LINE)


# --------------------------------------------------------------------------- navigator API

BrokerSource = Broker | BrokerStore | str | os.PathLike[str]


@contextmanager
def _broker_for(source: BrokerSource, clock: Clock | None) -> Iterator[Broker]:
    if isinstance(source, Broker):
        yield source
        return
    if isinstance(source, BrokerStore):
        yield Broker(source, clock=clock)
        return
    broker = Broker(open_broker(source, create=False), clock=clock)
    try:
        yield broker
    finally:
        broker.close()


def inbox_for_members(source: BrokerSource, member_ids: Iterable[int], *,
                      clock: Clock | None = None,
                      include_completed: bool = False) -> list[InboxEntry]:
    """The Inbox panel's query: pending first, oldest first, each with its age in seconds.

    Takes an open broker/store or a path (opened, diagnosed and closed per call,
    so it is safe from a thread worker). A missing broker file means no fleet
    exists yet and yields an empty inbox; any other unusable file raises
    BrokerUnavailable.
    """
    if not isinstance(source, Broker | BrokerStore) and not Path(source).exists():
        return []
    with _broker_for(source, clock) as broker:
        return broker.inbox(member_ids, include_completed=include_completed)


def ack(source: BrokerSource, member_id: int, message_id: int, *,
        clock: Clock | None = None) -> Message:
    """ACK on behalf of the recipient ``member_id`` (the Inbox panel's action)."""
    with _broker_for(source, clock) as broker:
        return broker.ack(member_id, message_id)

