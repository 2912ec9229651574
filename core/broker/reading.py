"""What reading the broker file takes: opening it, its timestamps, and Inbox rows.

Every navigator reads its view's Inbox whenever the broker file moves, and
most never send or deliver a message; ``core.broker.broker`` (the writes, the
errors they raise, pane delivery) builds on this module, so a reader loads
none of that. The values and errors here are the broker's own, re-exported by
``core.broker.broker``.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from core.model.errors import SwitchboardError
from storage.broker_schema import (
    MemberStatus,
    MessageState,
    StatusDecodeError,
    decode_member_status,
    decode_message_state,
)
from storage.broker_store import BrokerStore, FormatRefused, Verdict, open_store


class BrokerUnavailable(SwitchboardError):
    """The broker file cannot be used safely; it was left byte-identical."""

    code = "broker_unavailable"


class BrokerCorrupt(SwitchboardError):
    """A stored value is outside the format's closed value sets."""

    code = "broker_corrupt"


@dataclass(frozen=True)
class InboxEntry:
    """One row of the navigator's Inbox panel."""

    message_id: int
    fleet_id: int
    from_member_id: int
    from_name: str
    to_member_id: int
    to_name: str
    text: str
    status: MessageState
    created_at: str
    age_seconds: float

    @property
    def pending(self) -> bool:
        return self.status is MessageState.INPUT_REQUIRED


# --------------------------------------------------------------------------- time


def iso_utc(ms: int) -> str:
    """Fixed-width ISO-8601 UTC with milliseconds, so text order is time order."""
    moment = datetime.fromtimestamp(ms // 1000, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S") + f".{ms % 1000:03d}Z"


def parse_utc(text: str) -> datetime:
    """Read any ISO-8601 timestamp a format-family writer may have stored (naive = UTC)."""
    moment = datetime.fromisoformat(text)
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def seconds_since(text: str, now_ms: int) -> float:
    return round(max(0.0, now_ms / 1000 - parse_utc(text).timestamp()), 3)


# --------------------------------------------------------------------------- reading


def open_broker(path: str | os.PathLike[str], *, create: bool = True,
                readonly: bool = False) -> BrokerStore:
    """Diagnose then open; any refusal becomes BrokerUnavailable with the reason."""
    path = Path(path)
    try:
        return open_store(path, create=create, readonly=readonly)
    except FormatRefused as refused:
        diagnosis = refused.diagnosis
        if diagnosis.verdict is Verdict.MISSING:
            raise BrokerUnavailable(
                f"no broker file at {path}; create a fleet first "
                "(`switchboard fleet create`)") from None
        if diagnosis.verdict is Verdict.EMPTY:
            raise BrokerUnavailable(
                f"broker file {path} is not initialized yet; create a fleet first") from None
        raise BrokerUnavailable(
            f"broker file {path} {diagnosis.detail}; it was left unchanged",
            code=f"broker_{diagnosis.verdict.value}") from None
    except (OSError, sqlite3.Error) as exc:
        from core.model.files import os_failure
        from storage.environment import environment_failure

        failure = os_failure(exc, path) or environment_failure(exc, path)
        if failure is not None:  # a full or read-only disk, said as such
            raise failure from None
        raise BrokerUnavailable(f"cannot open broker file {path}: {exc}") from None


def member_status(value: object) -> MemberStatus:
    """A stored member status, or BrokerCorrupt naming the value."""
    try:
        return decode_member_status(value)
    except StatusDecodeError as exc:
        raise BrokerCorrupt(f"broker file holds {exc}; it was left unchanged") from None


def message_state(value: object) -> MessageState:
    """A stored message state, or BrokerCorrupt naming the value."""
    try:
        return decode_message_state(value)
    except StatusDecodeError as exc:
        raise BrokerCorrupt(f"broker file holds {exc}; it was left unchanged") from None


def inbox_entries(store: BrokerStore, member_ids: Iterable[int], now_ms: int, *,
                  include_completed: bool = False) -> list[InboxEntry]:
    """Messages to these members: pending first, then oldest first, with age."""
    entries = [
        InboxEntry(r["message_id"], r["fleet_id"], r["from_member_id"], r["from_name"],
                   r["to_member_id"], r["to_name"], r["text"],
                   message_state(r["status_state"]), r["created_at"],
                   seconds_since(r["created_at"], now_ms))
        for r in store.inbox_rows(member_ids, include_completed=include_completed)
    ]
    return sorted(entries, key=lambda e: (not e.pending, parse_utc(e.created_at),
                                          e.message_id))
