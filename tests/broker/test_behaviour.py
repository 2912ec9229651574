"""Broker behaviour on a real SQLite file: bootstrap, members, messages, roster, errors."""

from __future__ import annotations

import dataclasses
import threading
import time
from pathlib import Path

import pytest

from core.broker.broker import (
    AlreadyAcked,
    Broker,
    BrokerCorrupt,
    DirectorProtected,
    FleetDeleted,
    InvalidRequest,
    Member,
    MemberDeregistered,
    MemberHasMessages,
    MemberKind,
    MemberNotInFleet,
    MemberStatus,
    Message,
    MessageState,
    NotRecipient,
    RecipientDeregistered,
    SenderDeregistered,
    UnknownFleet,
    UnknownMember,
    UnknownMessage,
    ack,
    inbox_for_members,
    iso_utc,
    open_broker,
)
from core.model.ports import FixedClock
from tests.broker.conftest import fleet_with_worker, placeholder


def counts(broker: Broker) -> dict[str, int]:
    return {t: broker.store.conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
            for t in ("fleets", "members", "member_placements", "messages", "asset_installs")}


# --------------------------------------------------------------------------- fleets


def test_bootstrap_creates_fleet_director_and_placement(broker: Broker) -> None:
    created = broker.create_fleet("crew", director_name="boss", director_description="leads",
                                  placement=placeholder("%1"))
    director = created.director.member
    assert created.fleet.director_member_id == director.member_id
    assert created.fleet.live
    assert director.kind is MemberKind.DIRECTOR and director.status is MemberStatus.ACTIVE
    assert created.director.placement is not None
    assert created.director.placement.mux_pane_id == "%1"
    assert created.director.placement.backend == "tmux"


def test_bootstrap_refusal_writes_nothing(broker: Broker) -> None:
    before = counts(broker)
    with pytest.raises(InvalidRequest, match="Director needs a concrete pane"):
        broker.create_fleet("crew", director_name="boss", director_description="",
                            placement=placeholder(None))
    with pytest.raises(InvalidRequest, match="director name must not be empty"):
        broker.create_fleet("crew", director_name=" ", director_description="",
                            placement=placeholder())
    assert counts(broker) == before


def test_fleet_soft_delete_deregisters_members_and_keeps_messages(broker: Broker,
                                                                  clock: FixedClock) -> None:
    fleet_id, director_id, worker_id = fleet_with_worker(broker, placeholder("%1"),
                                                         placeholder("%2"))
    broker.send(fleet_id, director_id, worker_id, "hello")
    clock.advance(1000)
    deletion = broker.delete_fleet(fleet_id)
    assert deletion.deregistered_members == 2
    assert deletion.fleet.deleted_at == iso_utc(clock.now_ms())
    assert broker.get_member(director_id).status is MemberStatus.DEREGISTERED
    assert broker.get_member(worker_id).deregistered_at == iso_utc(clock.now_ms())
    assert counts(broker)["messages"] == 1
    assert broker.roster() == []
    assert broker.list_fleets() == []
    assert [f.fleet_id for f in broker.list_fleets(include_deleted=True)] == [fleet_id]
    with pytest.raises(FleetDeleted):
        broker.delete_fleet(fleet_id)
    with pytest.raises(FleetDeleted):
        broker.send(fleet_id, director_id, worker_id, "again")
    with pytest.raises(FleetDeleted):
        broker.register_member(fleet_id, "late", description="", placement=placeholder())


def test_unknown_fleet(broker: Broker) -> None:
    with pytest.raises(UnknownFleet, match="no fleet 9"):
        broker.delete_fleet(9)
    with pytest.raises(UnknownFleet):
        broker.register_member(9, "x", description="", placement=placeholder())


# --------------------------------------------------------------------------- members


def test_register_with_pending_pane_then_place(broker: Broker) -> None:
    fleet_id, _, _ = fleet_with_worker(broker, placeholder("%1"), placeholder("%2"))
    pending = broker.register_member(fleet_id, "new", description="spawning",
                                     placement=placeholder(None))
    assert pending.placement is not None and pending.placement.mux_pane_id is None
    placed = broker.place_member(pending.member.member_id, placeholder("%7"))
    assert placed.placement is not None and placed.placement.mux_pane_id == "%7"
    assert placed.member.description == "spawning"


def test_director_is_protected(broker: Broker) -> None:
    _, director_id, _ = fleet_with_worker(broker, placeholder("%1"), placeholder("%2"))
    before = counts(broker)
    with pytest.raises(DirectorProtected, match="root Director"):
        broker.deregister_member(director_id)
    with pytest.raises(DirectorProtected, match="cannot be deleted"):
        broker.delete_member(director_id)
    with pytest.raises(InvalidRequest, match="concrete pane"):
        broker.place_member(director_id, placeholder(None))
    assert counts(broker) == before
    assert broker.get_member(director_id).status is MemberStatus.ACTIVE


def test_deregister_and_delete(broker: Broker) -> None:
    fleet_id, director_id, worker_id = fleet_with_worker(broker, placeholder("%1"),
                                                         placeholder("%2"))
    spare = broker.register_member(fleet_id, "spare", description="",
                                   placement=placeholder(None)).member.member_id
    deregistered = broker.deregister_member(worker_id)
    assert deregistered.status is MemberStatus.DEREGISTERED
    assert deregistered.deregistered_at is not None
    with pytest.raises(MemberDeregistered):
        broker.deregister_member(worker_id)
    broker.delete_member(spare)
    with pytest.raises(UnknownMember):
        broker.get_member(spare)
    assert broker.store.get_placement(spare) is None  # cascaded
    broker.send(fleet_id, director_id, director_id, "note to self")
    other = broker.register_member(fleet_id, "other", description="",
                                   placement=placeholder()).member.member_id
    broker.send(fleet_id, other, director_id, "hi")
    with pytest.raises(MemberHasMessages):
        broker.delete_member(other)


def test_roster_activity_and_idle(broker: Broker, clock: FixedClock) -> None:
    fleet_id, director_id, worker_id = fleet_with_worker(broker, placeholder("%1"),
                                                         placeholder("%2"))
    spare = broker.register_member(fleet_id, "spare", description="",
                                   placement=placeholder(None)).member.member_id
    roster = {e.member_id: e for e in broker.roster(fleet_id)}
    assert set(roster) == {director_id, worker_id, spare}
    assert roster[director_id].kind is MemberKind.DIRECTOR
    assert roster[worker_id].idle_seconds is None and roster[worker_id].last_activity_at is None

    sent_at = iso_utc(clock.now_ms())
    message = broker.send(fleet_id, director_id, worker_id, "do it").message
    clock.advance(5_000)
    roster = {e.member_id: e for e in broker.roster()}
    assert roster[director_id].last_activity_at == sent_at  # sent
    assert roster[worker_id].last_activity_at == sent_at  # received
    assert roster[worker_id].idle_seconds == 5.0
    assert roster[spare].idle_seconds is None

    broker.ack(worker_id, message.message_id)
    acked_at = iso_utc(clock.now_ms())
    clock.advance(2_000)
    roster = {e.member_id: e for e in broker.roster()}
    assert roster[worker_id].last_activity_at == acked_at  # ACK
    assert roster[worker_id].idle_seconds == 2.0
    assert roster[director_id].idle_seconds == 7.0

    broker.deregister_member(spare)
    assert spare not in {e.member_id for e in broker.roster()}
    detail = broker.member_detail(spare)  # detailed view keeps everything
    assert detail.member.status is MemberStatus.DEREGISTERED
    assert detail.placement is not None


# --------------------------------------------------------------------------- messages


def test_send_poll_ack(broker: Broker, clock: FixedClock) -> None:
    fleet_id, director_id, worker_id = fleet_with_worker(broker, placeholder("%1"),
                                                         placeholder("%2"))
    first = broker.send(fleet_id, director_id, worker_id, "one").message
    clock.advance(10)
    second = broker.send(fleet_id, director_id, worker_id, "two").message
    assert first.status is MessageState.INPUT_REQUIRED
    assert [m.text for m in broker.poll(worker_id)] == ["one", "two"]
    assert broker.poll(worker_id) == broker.poll(worker_id)  # reading changes nothing
    clock.advance(10)
    acked = broker.ack(worker_id, first.message_id)
    assert acked.status is MessageState.COMPLETED
    assert acked.status_timestamp == iso_utc(clock.now_ms())
    assert [m.message_id for m in broker.poll(worker_id)] == [second.message_id]


def test_public_message_record_omits_notified_at() -> None:
    assert "notified_at" not in {f.name for f in dataclasses.fields(Message)}


def test_send_errors_write_nothing(broker: Broker) -> None:
    fleet_id, director_id, worker_id = fleet_with_worker(broker, placeholder("%1"),
                                                         placeholder("%2"))
    other = broker.create_fleet("other", director_name="x", director_description="",
                                placement=placeholder("%3")).fleet
    gone = broker.register_member(fleet_id, "gone", description="",
                                  placement=placeholder()).member.member_id
    broker.deregister_member(gone)
    before = counts(broker)
    cases = [
        (UnknownFleet, (99, director_id, worker_id, "x")),
        (UnknownMember, (fleet_id, director_id, 99, "x")),
        (UnknownMember, (fleet_id, 99, worker_id, "x")),
        (RecipientDeregistered, (fleet_id, director_id, gone, "x")),
        (SenderDeregistered, (fleet_id, gone, worker_id, "x")),
        (MemberNotInFleet, (other.fleet_id, director_id, worker_id, "x")),
        (MemberNotInFleet, (fleet_id, director_id, other.director_member_id, "x")),
        (InvalidRequest, (fleet_id, director_id, worker_id, "  ")),
    ]
    for error, args in cases:
        with pytest.raises(error):
            broker.send(*args)
    assert counts(broker) == before


def test_ack_errors(broker: Broker) -> None:
    fleet_id, director_id, worker_id = fleet_with_worker(broker, placeholder("%1"),
                                                         placeholder("%2"))
    message = broker.send(fleet_id, director_id, worker_id, "x").message
    with pytest.raises(NotRecipient, match="only its recipient can ACK"):
        broker.ack(director_id, message.message_id)
    with pytest.raises(UnknownMessage):
        broker.ack(worker_id, 999)
    with pytest.raises(UnknownMember):
        broker.ack(999, message.message_id)
    broker.ack(worker_id, message.message_id)
    with pytest.raises(AlreadyAcked, match="already ACKed"):
        broker.ack(worker_id, message.message_id)


def test_self_send_is_stamped_on_insert_and_stays_pending(broker: Broker) -> None:
    fleet_id, _, worker_id = fleet_with_worker(broker, placeholder("%1"), placeholder("%2"))
    result = broker.send(fleet_id, worker_id, worker_id, "remember this")
    row = broker.store.get_message(result.message.message_id)
    assert row["notified_at"] == row["created_at"]
    assert result.delivery is None
    assert [m.message_id for m in broker.poll(worker_id)] == [result.message.message_id]
    broker.ack(worker_id, result.message.message_id)
    assert broker.poll(worker_id) == []


def test_statuses_decode_strictly(broker: Broker) -> None:
    fleet_id, director_id, worker_id = fleet_with_worker(broker, placeholder("%1"),
                                                         placeholder("%2"))
    message = broker.send(fleet_id, director_id, worker_id, "x").message
    broker.store.conn.execute("UPDATE members SET status = 'sleeping' WHERE member_id = ?",
                              (worker_id,))
    with pytest.raises(BrokerCorrupt, match="unknown member status 'sleeping'"):
        broker.get_member(worker_id)
    with pytest.raises(BrokerCorrupt):
        broker.roster()
    broker.store.conn.execute("UPDATE members SET status = 'active'")
    broker.store.conn.execute("UPDATE messages SET status_state = 'read' WHERE message_id = ?",
                              (message.message_id,))
    with pytest.raises(BrokerCorrupt, match="unknown message status_state 'read'"):
        broker.poll(worker_id)


def test_wait_returns_pending_times_out_and_wakes_on_send(broker_path: Path,
                                                          broker: Broker) -> None:
    fleet_id, director_id, worker_id = fleet_with_worker(broker, placeholder("%1"),
                                                         placeholder("%2"))
    started = time.monotonic()
    result = broker.wait(director_id, 0.2)
    assert result.timed_out and result.messages == ()
    assert 0.2 <= time.monotonic() - started < 1.0

    def later() -> None:
        time.sleep(0.3)
        with Broker(open_broker(broker_path)) as other:
            other.send(fleet_id, worker_id, director_id, "done")

    sender = threading.Thread(target=later)
    sender.start()
    started = time.monotonic()
    result = broker.wait(director_id, 5)
    waited = time.monotonic() - started
    sender.join()
    assert not result.timed_out
    assert [m.text for m in result.messages] == ["done"]
    assert waited < 0.3 + 0.2
    assert broker.wait(director_id, 5).messages == result.messages  # pending until ACKed


# --------------------------------------------------------------------------- assets and inbox


def test_asset_installs_upsert(broker: Broker, clock: FixedClock) -> None:
    first = broker.record_asset_install("claude", "/home/u/.claude/skills/cafleet", "1.0")
    clock.advance(60_000)
    second = broker.record_asset_install("claude", "/home/u/.claude/skills/cafleet", "1.1")
    broker.record_asset_install("codex", "/home/u/.codex/x", "1.1")
    installs = broker.list_asset_installs()
    assert [(i.coding_agent, i.cafleet_version) for i in installs] == [
        ("claude", "1.1"), ("codex", "1.1")]
    assert installs[0].installed_at == second.installed_at != first.installed_at
    assert counts(broker)["members"] == 0  # independent of member registration


def test_inbox_for_members_pending_first_oldest_first(broker_path: Path, broker: Broker,
                                                      clock: FixedClock) -> None:
    fleet_id, director_id, worker_id = fleet_with_worker(broker, placeholder("%1"),
                                                         placeholder("%2"))
    old = broker.send(fleet_id, director_id, worker_id, "old").message
    clock.advance(1_000)
    broker.send(fleet_id, worker_id, director_id, "question")
    clock.advance(1_000)
    newer = broker.send(fleet_id, director_id, worker_id, "newer").message
    broker.ack(worker_id, old.message_id)
    clock.advance(3_000)

    entries = inbox_for_members(broker, [director_id, worker_id], include_completed=True,
                                clock=clock)
    assert [(e.text, e.pending) for e in entries] == [
        ("question", True), ("newer", True), ("old", False)]
    assert [e.age_seconds for e in entries] == [4.0, 3.0, 5.0]
    assert entries[0].from_name == "worker" and entries[0].to_name == "boss"

    by_path = inbox_for_members(broker_path, [worker_id], clock=clock)
    assert [e.message_id for e in by_path] == [newer.message_id]
    acked = ack(broker_path, worker_id, newer.message_id, clock=clock)
    assert acked.status is MessageState.COMPLETED
    assert inbox_for_members(broker_path, [worker_id]) == []
    assert inbox_for_members(broker_path.with_name("absent.sqlite3"), [1]) == []


def test_member_record_is_frozen() -> None:
    member = Member(1, 1, "n", "", MemberStatus.ACTIVE, MemberKind.MEMBER, "t", None)
    with pytest.raises(dataclasses.FrozenInstanceError):
        member.name = "x"  # type: ignore[misc]
