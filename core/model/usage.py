"""What one turn used and whether it ended on a limit: the vocabulary of core.usage."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


class LimitKind(StrEnum):
    """Why a turn ended on a limit, as the CLI names it."""

    RATE_LIMIT = "rate_limit"
    """Too many requests or tokens per minute, or the plan's allowance used up (Claude
    Code calls both ``rate_limit``)."""
    USAGE_LIMIT = "usage_limit"
    """Codex's plan allowance (``usage_limit_reached``)."""


@dataclass(frozen=True)
class Tokens:
    """Token counts as the provider states them. ``input`` never includes cached
    input: Claude states it so; Codex's input includes its cached part, which is
    moved to ``cache_read`` here so one price table fits both."""

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    reasoning: int = 0
    """Part of ``output`` (Codex states it; priced as output), shown for information."""

    def __add__(self, other: Tokens) -> Tokens:
        return Tokens(self.input + other.input, self.output + other.output,
                      self.cache_read + other.cache_read, self.cache_write + other.cache_write,
                      self.reasoning + other.reasoning)

    def __sub__(self, other: Tokens) -> Tokens:
        return Tokens(self.input - other.input, self.output - other.output,
                      self.cache_read - other.cache_read, self.cache_write - other.cache_write,
                      self.reasoning - other.reasoning)

    @property
    def total(self) -> int:
        return self.input + self.output + self.cache_read + self.cache_write

    @property
    def any_negative(self) -> bool:
        return min(self.input, self.output, self.cache_read, self.cache_write,
                   self.reasoning) < 0

    def as_list(self) -> list[int]:
        return [self.input, self.output, self.cache_read, self.cache_write, self.reasoning]

    @classmethod
    def from_list(cls, values: list[int]) -> Tokens:
        return cls(*[int(v) for v in values[:5]])


@dataclass(frozen=True)
class LimitHit:
    """A turn that ended on a usage or rate limit; ``reset_at_ms`` only when the CLI
    stated when it resets."""

    kind: LimitKind
    message: str
    reset_at_ms: int | None = None
    at_ms: int | None = None
    """When the turn ended on it, when the file says (Codex's ``completed_at``)."""


@dataclass
class TurnUsage:
    """The usage of one turn for one model (a turn that used two models has two)."""

    model: str | None
    tokens: Tokens = field(default_factory=Tokens)
    requests: int = 0


@dataclass
class UsageBatch:
    """What one incremental read found: usage per model, a limit, and where to resume."""

    per_model: dict[str | None, TurnUsage] = field(default_factory=dict)
    limit: LimitHit | None = None
    offset: int = 0
    state: dict[str, object] = field(default_factory=dict)
    bad_lines: int = 0
    """Whole lines skipped because they could not be read (not JSON, nested too deep,
    a count out of bounds, a field of the wrong type): counted, never fatal, so one
    line a CLI (or anybody) wrote wrong never stops the lines after it being read."""
    bad_reason: str | None = None
    """Why the first skipped line of this read was skipped, for the reader's log."""

    def skip(self, reason: str) -> None:
        """Count one unreadable line (the first reason is kept)."""
        self.bad_lines += 1
        if self.bad_reason is None:
            self.bad_reason = reason

    def skip_all(self, other: UsageBatch) -> None:
        """Count the lines another read of the same run skipped."""
        self.bad_lines += other.bad_lines
        if self.bad_reason is None:
            self.bad_reason = other.bad_reason

    def add(self, model: str | None, tokens: Tokens, requests: int = 1) -> None:
        entry = self.per_model.setdefault(model, TurnUsage(model))
        entry.tokens = entry.tokens + tokens
        entry.requests += requests

    @property
    def empty(self) -> bool:
        return not self.per_model and self.limit is None
