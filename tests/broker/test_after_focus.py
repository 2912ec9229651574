"""After a focus only the shown frame's lines can become deliverable: one read-only
query decides whether the full (read-write) presentation path runs at all."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from core.broker import membership
from core.broker.broker import Broker
from core.broker.kick import frame_description
from storage.broker_store import has_unnotified
from tests.broker.conftest import placeholder


def _fleet(broker: Broker) -> tuple[int, int, int]:
    created = broker.create_fleet("project:p", director_name="workspace",
                                  director_description=frame_description("F-parent"),
                                  placement=placeholder("%901"))
    child = broker.register_member(created.fleet.fleet_id, "task",
                                   description=frame_description("F-child"),
                                   placement=placeholder("%902")).member.member_id
    return created.fleet.fleet_id, created.director.member.member_id, child


def test_only_the_described_members_unnotified_lines_count(broker: Broker,
                                                           broker_path: Path) -> None:
    fleet_id, parent, child = _fleet(broker)
    assert has_unnotified(broker_path, frame_description("F-child")) is False
    sent = broker.send(fleet_id, parent, child, "please look")  # no notifier: stays pending
    assert has_unnotified(broker_path, frame_description("F-child")) is True
    assert has_unnotified(broker_path, frame_description("F-parent")) is False
    broker.store.stamp_notified(sent.message.message_id, "2026-12-04T00:00:00Z")
    assert has_unnotified(broker_path, frame_description("F-child")) is False


def test_a_file_that_is_not_plainly_a_broker_gives_no_answer(tmp_path: Path) -> None:
    assert has_unnotified(tmp_path / "missing.sqlite3", "x") is None
    foreign = tmp_path / "foreign.sqlite3"
    foreign.write_bytes(b"not a database at all" * 100)
    assert has_unnotified(foreign, "x") is None


@pytest.mark.parametrize("pending", [False, True])
def test_after_focus_takes_the_full_path_only_for_waiting_lines(
        broker: Broker, broker_path: Path, monkeypatch: pytest.MonkeyPatch,
        pending: bool) -> None:
    fleet_id, parent, child = _fleet(broker)
    if pending:
        broker.send(fleet_id, parent, child, "please look")
    calls: list[str] = []
    monkeypatch.setattr(membership, "after_presentation",
                        lambda engine, view_id: calls.append(view_id))
    engine = SimpleNamespace(home=SimpleNamespace(broker_path=broker_path))
    membership.after_focus(engine, "V1", "F-child")  # type: ignore[arg-type]
    assert calls == (["V1"] if pending else [])


def test_a_replaced_broker_file_is_read_afresh(broker_path: Path) -> None:
    from core.broker.broker import open_broker

    with Broker(open_broker(broker_path)) as first:
        fleet_id, parent, child = _fleet(first)
        first.send(fleet_id, parent, child, "please look")
    assert has_unnotified(broker_path, frame_description("F-child")) is True
    for leftover in broker_path.parent.glob(broker_path.name + "*"):
        if leftover.is_file():
            leftover.unlink()
    with Broker(open_broker(broker_path)) as second:
        _fleet(second)  # the same members, no message yet
        assert has_unnotified(broker_path, frame_description("F-child")) is False
