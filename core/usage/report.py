"""Usage and limits as a person reads them: per turn, per agent, per project, fleet.

Reads only: every session's evidence file under ``<home>/sessions`` (read-only,
a V1 file has no usage), and the registry for frame titles and project names.
Costs come from ``core.usage.pricing`` and are estimates.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from core.config.config import PriceConfig
from core.model.errors import RegistryUnavailable
from core.model.usage import LimitKind, Tokens
from core.usage.pricing import Priced, cost
from storage import session_db
from storage.session_usage import UsageRow, skipped_lines, turn_usage


@dataclass(frozen=True)
class Turn:
    """One stored turn row with its cost estimate."""

    session_key: str
    provider: str
    project_id: str
    frame_id: str | None
    turn_id: str | None
    model: str | None
    tokens: Tokens
    requests: int
    ended_at: str
    usd: float | None
    price_taken_on: str | None
    limit_kind: LimitKind | None = None
    limit_message: str | None = None
    limit_reset_at: str | None = None


@dataclass
class Total:
    """Tokens and cost of some turns; ``usd`` leaves out turns of unpriced models,
    which ``unpriced`` counts (so a total never looks complete when it is not)."""

    tokens: Tokens = field(default_factory=Tokens)
    usd: float = 0.0
    turns: int = 0
    unpriced: int = 0

    def add(self, turn: Turn) -> None:
        self.tokens = self.tokens + turn.tokens
        self.turns += 1
        if turn.usd is None:
            self.unpriced += 1 if turn.tokens.total else 0
        else:
            self.usd += turn.usd


def total(turns: Iterable[Turn]) -> Total:
    result = Total()
    for turn in turns:
        result.add(turn)
    return result


def _turn(row: UsageRow, session_key: str, project_id: str, frame_id: str | None,
          prices: Sequence[PriceConfig]) -> Turn:
    tokens = Tokens(row.input_tokens, row.output_tokens, row.cache_read_tokens,
                    row.cache_write_tokens, row.reasoning_tokens)
    priced: Priced = cost(row.model_id, tokens, prices)
    kind = None
    if row.limit_kind:
        try:
            kind = LimitKind(row.limit_kind)
        except ValueError:
            kind = None
    return Turn(session_key, row.provider, project_id, frame_id, row.turn_id, row.model_id,
                tokens, row.requests, row.ended_at, priced.usd,
                priced.price.taken_on if priced.price else None, kind, row.limit_message,
                row.limit_reset_at)


def _session_facts(conn: sqlite3.Connection) -> tuple[str, str, str | None] | None:
    row = conn.execute("SELECT id, project_id, metadata_json FROM sessions LIMIT 1").fetchone()
    if row is None:
        return None
    try:
        metadata = json.loads(row[2] or "{}")
    except ValueError:
        metadata = {}
    frame = metadata.get("frame_id") if isinstance(metadata, dict) else None
    return str(row[0]), str(row[1]), frame if isinstance(frame, str) else None


def _facts_from_usage(conn: sqlite3.Connection) -> tuple[str, str, str | None] | None:
    if not session_db.has_usage_tables(conn):
        return None
    row = conn.execute("SELECT session_id FROM turn_usage LIMIT 1").fetchone()
    return None if row is None else (str(row[0]), "", None)


def session_turns(root: Path, session_key: str, prices: Sequence[PriceConfig]) -> list[Turn]:
    """The turns of one session, oldest first ([] when it has no evidence file yet)."""
    path = session_db.session_db_path(root, session_key)
    if not path.exists():
        return []
    conn = session_db.open_session_db_readonly(path)
    try:
        facts = _session_facts(conn)
        rows = turn_usage(conn, session_key)
    finally:
        conn.close()
    project, frame = (facts[1], facts[2]) if facts else ("", None)
    return [_turn(row, session_key, project, frame, prices) for row in rows]


@dataclass
class Fleet:
    """Every turn found, and the files that could not be read (named, never hidden)."""

    turns: list[Turn] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)
    skipped_lines: int = 0
    """Lines of the CLIs' files the usage reader could not read and skipped (counted in
    the cursors; the reader's log, ``run/usage-worker.log``, says which and why)."""


def fleet_turns(root: Path, prices: Sequence[PriceConfig], *, project_id: str | None = None,
                since: str | None = None) -> Fleet:
    """Turns of every session under ``root/sessions`` (of one project, ended at or after
    ``since``, an ISO date or time), oldest first."""
    found = Fleet()
    for path in sorted((Path(root) / "sessions").glob("*/" + session_db.FILE_NAME)):
        try:
            conn = session_db.open_session_db_readonly(path)
        except (RegistryUnavailable, sqlite3.Error) as exc:
            found.unreadable.append(f"{path}: {exc}")
            continue
        try:
            # usage read before the session's first evidence row: its key is the rows'
            facts = _session_facts(conn) or _facts_from_usage(conn)
            if facts is None or (project_id is not None and facts[1] != project_id):
                continue
            rows = turn_usage(conn, facts[0])
            found.skipped_lines += skipped_lines(conn, facts[0])
        finally:
            conn.close()
        found.turns += [_turn(row, facts[0], facts[1], facts[2], prices) for row in rows
                        if since is None or row.ended_at >= since]
    found.turns.sort(key=lambda t: t.ended_at)
    return found


@dataclass(frozen=True)
class Limited:
    """An agent whose newest turn ended on a limit."""

    session_key: str
    provider: str
    project_id: str
    frame_id: str | None
    kind: LimitKind
    message: str
    reset_at: str | None
    ended_at: str

    def reset_passed(self, now_ms: int | None = None) -> bool:
        if self.reset_at is None:
            return False
        now = now_ms if now_ms is not None else time.time_ns() // 1_000_000
        return session_db.iso(now) >= self.reset_at


def working_sessions(conn: sqlite3.Connection) -> set[str]:
    """Sessions the registry says are working again (a prompt reached them since)."""
    return {str(r[0]) for r in conn.execute(
        "SELECT session_key FROM provider_sessions WHERE activity = 'working'")}


def limited(turns: Sequence[Turn], moved_on: set[str] | frozenset[str] = frozenset()
            ) -> list[Limited]:
    """Per session, its newest turn when that one ended on a limit (unless the session
    is in ``moved_on``: working again, its next turn not ended yet)."""
    newest: dict[str, Turn] = {}
    for turn in turns:
        if turn.session_key not in moved_on:
            newest[turn.session_key] = turn
    return [Limited(t.session_key, t.provider, t.project_id, t.frame_id, t.limit_kind,
                    t.limit_message or "", t.limit_reset_at, t.ended_at)
            for t in newest.values() if t.limit_kind is not None]


def tokens_short(count: int) -> str:
    """12345 -> 12.3k, 1234567 -> 1.2M: the tree and footer have a few cells only."""
    if count < 1000:
        return str(count)
    if count < 1_000_000:
        return f"{count / 1000:.1f}k".replace(".0k", "k")
    return f"{count / 1_000_000:.1f}M".replace(".0M", "M")


def usd_short(usd: float | None, unpriced: int = 0) -> str:
    """``~$0.42`` (an estimate), ``~$0.42+?`` when some turns had no price, ``?`` for none."""
    if usd is None:
        return "?"
    text = f"~${usd:.2f}" if usd >= 0.01 or usd == 0 else "~$<0.01"
    return text + ("+?" if unpriced else "")


@dataclass(frozen=True)
class AgentUsage:
    """One provider session's turns summed: what ``switchboard usage`` lists per agent."""

    session_key: str
    provider: str
    project: str
    frame_id: str | None
    title: str | None
    models: tuple[str, ...]
    turns: int
    tokens: Tokens
    usd: float
    unpriced: int


@dataclass(frozen=True)
class Summary:
    """The fleet's usage: per agent, per project, in all; the turns it sums."""

    agents: list[AgentUsage]
    projects: dict[str, Total]
    total: Total
    turns: list[Turn]
    unreadable: list[str]
    skipped_lines: int = 0


def registry_names(conn: sqlite3.Connection) -> tuple[dict[str, str], dict[str, str]]:
    """frame id -> title and project id -> name, from the registry (read only)."""
    frames = {str(r[0]): str(r[1]) for r in conn.execute("SELECT frame_id, title FROM frames")}
    projects = {str(r[0]): str(r[1]) for r in conn.execute(
        "SELECT project_id, name FROM projects")}
    return frames, projects


def summarize(root: Path, conn: sqlite3.Connection, prices: Sequence[PriceConfig], *,
              project_id: str | None = None, since: str | None = None) -> Summary:
    fleet = fleet_turns(root, prices, project_id=project_id, since=since)
    frames, projects = registry_names(conn)
    per_session: dict[str, list[Turn]] = {}
    for turn in fleet.turns:
        per_session.setdefault(turn.session_key, []).append(turn)
    agents = []
    for key, turns in per_session.items():
        first, summed = turns[0], total(turns)
        models = tuple(dict.fromkeys(t.model for t in turns if t.model))
        agents.append(AgentUsage(key, first.provider, projects.get(first.project_id,
                                                                   first.project_id),
                                 first.frame_id, frames.get(first.frame_id or ""), models,
                                 summed.turns, summed.tokens, summed.usd, summed.unpriced))
    by_project: dict[str, Total] = {}
    for turn in fleet.turns:
        by_project.setdefault(projects.get(turn.project_id, turn.project_id), Total()).add(turn)
    return Summary(agents, by_project, total(fleet.turns), fleet.turns, fleet.unreadable,
                   fleet.skipped_lines)


@dataclass(frozen=True)
class FleetBrief:
    """What the navigator shows with ``u``: each frame's usage in a few cells and one
    line for the fleet (tokens and estimated cost)."""

    per_frame: dict[str, str]
    line: str


def fleet_brief(root: Path, prices: Sequence[PriceConfig]) -> FleetBrief:
    """Every frame's usage (all its sessions: a restarted or moved task keeps its
    history) and the fleet's, from the session files (read only, off the event loop)."""
    fleet = fleet_turns(root, prices)
    per_frame: dict[str, Total] = {}
    for turn in fleet.turns:
        if turn.frame_id:
            per_frame.setdefault(turn.frame_id, Total()).add(turn)
    summed = total(fleet.turns)
    line = (f"Σ {tokens_short(summed.tokens.total)} tokens · "
            f"{usd_short(summed.usd, summed.unpriced)}") if fleet.turns else "no usage yet"
    return FleetBrief({frame: f"{tokens_short(t.tokens.total)} "
                              f"{usd_short(t.usd, t.unpriced)}"
                       for frame, t in per_frame.items()}, line)
