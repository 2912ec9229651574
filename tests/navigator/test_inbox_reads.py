"""The client's Inbox is read from the broker again only when the broker's files move
(or the view, or enough time): a navigator reloads on every hook, the Inbox rarely
changes, and each broker read walks the whole roster."""

from __future__ import annotations

import os
from typing import Any

import pytest

from core.apps import client as client_module
from core.broker import inbox_view
from tests.navigator.scenario import Scenario


def test_the_inbox_is_reread_only_when_the_broker_moves(
        demo: Scenario, monkeypatch: pytest.MonkeyPatch) -> None:
    reads: list[inbox_view.InboxScope] = []

    def counting(home: Any, scope: inbox_view.InboxScope) -> list[Any]:
        reads.append(scope)
        return [f"message {len(reads)}"]

    monkeypatch.setattr(inbox_view, "inbox_in_scope", counting)
    client = demo.client
    alpha, beta = demo.views["alpha"], demo.views["beta"]
    assert client.inbox(alpha) == []  # no broker file: no fleet, nothing read
    broker = client.home.broker_path
    broker.write_bytes(b"first")
    assert client.inbox(alpha) == ["message 1"]
    assert client.inbox(alpha) == ["message 1"]  # nothing moved: the same answer
    assert len(reads) == 1
    assert client.inbox(beta) == ["message 2"]  # another view's scope
    with open(f"{broker}-wal", "wb") as wal:  # a broker commit
        wal.write(b"frame")
    assert client.inbox(beta) == ["message 3"]
    stat = os.stat(broker)
    os.utime(broker, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    assert client.inbox(beta) == ["message 4"]
    monkeypatch.setattr(client_module, "INBOX_MAX_AGE_S", 0.0)  # the age bound
    assert client.inbox(beta) == ["message 5"]
    assert reads[0] != reads[1]  # alpha's and beta's scopes differ
