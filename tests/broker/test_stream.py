"""The read-only inbox stream: new pending records within 200 ms, no high-frequency queries."""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from core.broker.broker import Broker, BrokerUnavailable, UnknownMember, open_broker
from core.broker.stream import follow_inbox
from tests.broker.conftest import fleet_with_worker, placeholder

REPO = Path(__file__).resolve().parents[2]


def _setup(path: Path) -> tuple[int, int, int]:
    with Broker(open_broker(path)) as broker:
        return fleet_with_worker(broker, placeholder("%1"), placeholder("%2"))


def _state(path: Path) -> list[tuple[object, ...]]:
    with open_broker(path) as store:
        return [tuple(r) for r in store.conn.execute(
            "SELECT message_id, status_state, status_timestamp, notified_at FROM messages"
            " ORDER BY message_id")]


def test_stream_shows_a_new_message_within_200ms(broker_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    fleet_id, director_id, worker_id = _setup(broker_path)
    with Broker(open_broker(broker_path)) as sender:
        existing = sender.send(fleet_id, worker_id, director_id, "already here").message

    polls = []
    original_poll = Broker.poll

    def counting_poll(self: Broker, member_id: int):  # type: ignore[no-untyped-def]
        polls.append(time.monotonic())
        return original_poll(self, member_id)

    monkeypatch.setattr(Broker, "poll", counting_poll)
    seen: queue.Queue[tuple[float, int]] = queue.Queue()
    stop = threading.Event()

    def consume() -> None:
        for message in follow_inbox(broker_path, director_id, stop=stop):
            seen.put((time.monotonic(), message.message_id))

    reader = threading.Thread(target=consume, daemon=True)
    reader.start()
    assert seen.get(timeout=2)[1] == existing.message_id
    time.sleep(1.2)  # idle: the stream stats the file; it must not keep querying
    idle_queries = len(polls)
    assert idle_queries <= 2, f"{idle_queries} pending queries while idle"

    with Broker(open_broker(broker_path)) as sender:
        before = _state(broker_path)
        sent_at = time.monotonic()
        fresh = sender.send(fleet_id, worker_id, director_id, "news").message
    shown_at, shown_id = seen.get(timeout=2)
    stop.set()
    reader.join(timeout=2)
    assert shown_id == fresh.message_id
    assert shown_at - sent_at < 0.2, f"shown after {shown_at - sent_at:.3f}s"
    assert seen.empty()  # each record once
    # Read-only: notification and consumption state are exactly as the send left them.
    assert _state(broker_path)[: len(before)] == before
    assert _state(broker_path)[-1][1:] == ("input_required", fresh.status_timestamp, None)


def test_stream_ignores_notified_at_and_skips_acked(broker_path: Path) -> None:
    fleet_id, director_id, worker_id = _setup(broker_path)
    with Broker(open_broker(broker_path)) as broker:
        self_note = broker.send(fleet_id, worker_id, worker_id, "stamped on insert").message
        acked = broker.send(fleet_id, director_id, worker_id, "done already").message
        broker.ack(worker_id, acked.message_id)
    shown = [m.message_id for m in follow_inbox(broker_path, worker_id, max_seconds=0.2)]
    assert shown == [self_note.message_id]


def test_stream_refuses_unknown_member_and_missing_file(broker_path: Path) -> None:
    with pytest.raises(BrokerUnavailable):
        list(follow_inbox(broker_path, 1, max_seconds=0.1))
    assert not broker_path.exists()
    _setup(broker_path)
    with pytest.raises(UnknownMember):
        list(follow_inbox(broker_path, 99, max_seconds=0.1))


def test_cli_inbox_stream_prints_new_message_within_200ms(broker_path: Path) -> None:
    fleet_id, director_id, worker_id = _setup(broker_path)
    with Broker(open_broker(broker_path)) as broker:
        broker.send(fleet_id, worker_id, director_id, "before start")
    process = subprocess.Popen(
        [sys.executable, "-m", "navigator.cli", "inbox", "--stream", "--json", "--member",
         str(director_id), "--broker-db", str(broker_path), "--max-seconds", "8"],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: queue.Queue[tuple[float, str]] = queue.Queue()

    def pump() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.put((time.monotonic(), line))

    threading.Thread(target=pump, daemon=True).start()
    try:
        _, first = lines.get(timeout=8)  # the stream is up once the existing record shows
        assert json.loads(first)["text"] == "before start"
        with Broker(open_broker(broker_path)) as broker:
            sent_at = time.monotonic()
            fresh = broker.send(fleet_id, worker_id, director_id, "live").message
        shown_at, line = lines.get(timeout=2)
        record = json.loads(line)
        assert record["message_id"] == fresh.message_id
        assert "notified_at" not in record
        assert shown_at - sent_at < 0.2, f"shown after {shown_at - sent_at:.3f}s"
    finally:
        process.kill()
        process.wait()
