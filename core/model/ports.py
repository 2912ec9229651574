"""Clock and id source as injectable ports, so tests can fix time and ids."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import Protocol


class Clock(Protocol):
    def now_ms(self) -> int: ...


class IdSource(Protocol):
    def new_id(self) -> str: ...


class SystemClock:
    """UTC Unix milliseconds from the system clock."""

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000


class Uuid4Ids:
    def new_id(self) -> str:
        return str(uuid.uuid4())


@dataclass
class FixedClock:
    """A clock that only moves when told to; for deterministic tests."""

    current_ms: int = 1_780_000_000_000

    def now_ms(self) -> int:
        return self.current_ms

    def advance(self, ms: int) -> None:
        self.current_ms += ms


@dataclass
class SequentialIds:
    """Deterministic UUID-shaped ids for snapshot tests."""

    counter: int = 0
    prefix: str = "00000000-0000-4000-8000-"
    issued: list[str] = field(default_factory=list)

    def new_id(self) -> str:
        self.counter += 1
        value = f"{self.prefix}{self.counter:012d}"
        self.issued.append(value)
        return value
