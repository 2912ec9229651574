"""``python -m core.usage.worker SESSION_KEY PROVIDER SOURCE_PATH TURN_ID``: read a
turn's usage from the CLI's own file, beside the agent instead of inside its hook.

The Stop hook only starts this (``core.hooks.usage_handoff``: one ``posix_spawn``, no
import of the readers), so reading a transcript never lengthens the agent's turn end. The
read is incremental and idempotent (``storage.session_usage.advance_usage``):
a worker that never ran is made up by the next Stop's, which reads everything
appended since the cursor, and two workers never count a line twice.

The source path is the one the provider's own hook payload names (Claude's
``transcript_path``, Codex's ``transcript_path``); it is read only when it is
an absolute path to a regular ``.jsonl`` file, at most
``core.providers.usage_files.MAX_READ_BYTES`` a time.

One bad line never stops the reading: a line that is not JSON, nests too deep, states
a count out of bounds or a field of the wrong type is skipped by the provider's reader,
a line longer than a read is skipped here unread, and either way the cursor moves past
it, the cursor's state counts it (``switchboard usage`` shows the count) and the worker
logs it (``run/usage-worker.log``).
"""

from __future__ import annotations

import os
import stat
import sys
import time
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

if TYPE_CHECKING:
    from collections.abc import Callable

    from core.config.home import Home
    from core.model.usage import UsageBatch
    from storage.session_usage import UsageRow

MODULE = "core.usage.worker"
SETTLE = "settle"
"""The fifth argument of a turn end's reader: wait for the turn's lines (``read_settled``)."""
SETTLE_S = 15.0
"""How long a turn end's reader keeps looking for its turn's usage. A CLI may append the
turn's last lines just after its Stop hook has run (a loaded machine delays its writes
more than this reader's start), and a busy or locked evidence file is tried again: a
reader that gave up at once left the turn unread until the next turn's end."""
SETTLE_POLL_S = 0.25


def usable_source(path: str) -> bool:
    """The payload's path is one this reader may open: absolute, ``.jsonl``, a regular
    file (never a FIFO or device that would block or never end)."""
    if not path or not os.path.isabs(path) or not path.endswith(".jsonl") or "\x00" in path:
        return False
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


SKIPPING = "skipping_line"
"""Cursor state: the read stopped inside a line longer than a read (the rest of it is
skipped, unread, up to its newline)."""
BAD_LINES = "bad_lines"
"""Cursor state: how many unreadable lines of this file were skipped, in all
(``storage.session_usage.skipped_lines`` sums them; ``switchboard usage`` shows it)."""
MAX_STORED = 2**53
"""A stored row's count never exceeds this (a float and a JSON reader keep it exact);
a row sums at most a few reads of lines each bounded by ``MAX_TOKENS``."""
READS_PER_RUN = 8
"""Reads of ``MAX_READ_BYTES`` one run makes at most; a longer backlog is read next time."""
LINE_SCAN_BYTES = 1024 * 1024


def _rows(batch: UsageBatch, provider: str, turn_id: str | None) -> list[UsageRow]:
    from storage.session_db import iso
    from storage.session_usage import UsageRow

    def bound(count: int) -> int:
        return min(max(count, 0), MAX_STORED)

    rows = [UsageRow(turn_id, provider, entry.model, bound(entry.tokens.input),
                     bound(entry.tokens.output), bound(entry.tokens.cache_read),
                     bound(entry.tokens.cache_write), bound(entry.tokens.reasoning),
                     bound(entry.requests)) for entry in batch.per_model.values()]
    if batch.limit is not None:
        limit = batch.limit
        fields = (limit.kind.value, limit.message,
                  iso(limit.reset_at_ms) if limit.reset_at_ms is not None else None,
                  iso(limit.at_ms) if limit.at_ms is not None else "")
        if rows:
            rows[-1] = rows[-1]._replace(limit_kind=fields[0], limit_message=fields[1],
                                         limit_reset_at=fields[2], ended_at=fields[3])
        else:
            rows.append(UsageRow(turn_id, provider, None, 0, 0, 0, 0, 0, 0, *fields))
    return rows


def _line_end(handle: BinaryIO, start: int) -> int | None:
    """Where the line running at ``start`` ends (just past its newline), found in
    ``LINE_SCAN_BYTES`` steps so a huge line is never held whole; None when the file
    ends first (the line is still being written, or was never ended)."""
    handle.seek(start)
    position = start
    while chunk := handle.read(LINE_SCAN_BYTES):
        newline = chunk.find(b"\n")
        if newline >= 0:
            return position + newline + 1
        position += len(chunk)
    return None


def _merge(into: UsageBatch, batch: UsageBatch) -> None:
    """Add a later read's usage to ``into``; its limit (or its answers) decide the limit."""
    for entry in batch.per_model.values():
        into.add(entry.model, entry.tokens, entry.requests)
    if batch.per_model or batch.limit is not None:
        into.limit = batch.limit
    into.skip_all(batch)
    into.state = batch.state


def read_file(source: str, offset: int, state: dict[str, object], now: int,
              reader: Callable[[bytes, dict[str, Any], int], UsageBatch]
              ) -> tuple[UsageBatch, int]:
    """Read ``source`` from ``offset`` with the provider's reader; the batch (its state
    carries ``SKIPPING`` and ``BAD_LINES``) and the offset to store.

    Never held back by one line: an unreadable line is the reader's to skip and count,
    and a line longer than a read (``MAX_READ_BYTES``) is skipped here without being
    read into memory, also counted; a line still running at the end of the file is
    skipped up to its newline on a later run."""
    from core.model.usage import UsageBatch
    from core.providers.usage_files import MAX_READ_BYTES

    own = {key: state.get(key) for key in (SKIPPING, BAD_LINES)}
    state = {k: v for k, v in state.items() if k not in own}
    skipping = own[SKIPPING] is True
    counted = own[BAD_LINES]
    bad_before = counted if isinstance(counted, int) and counted >= 0 else 0
    found = UsageBatch()
    with open(source, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        if size < offset:  # the file was replaced: read it from the start
            offset, state, skipping = 0, {}, False
        found.state = state
        for _ in range(READS_PER_RUN):
            if skipping:
                end = _line_end(handle, offset)
                if end is None:
                    offset = size
                    break
                offset, skipping = end, False
            handle.seek(offset)
            data = handle.read(MAX_READ_BYTES)
            if len(data) == MAX_READ_BYTES and b"\n" not in data:
                found.skip(f"a line longer than {MAX_READ_BYTES} bytes at byte {offset}")
                offset, skipping = offset + len(data), True
                del data  # one read held at a time, never two
                continue
            batch = reader(data, dict(found.state), now)
            _merge(found, batch)
            offset += batch.offset
            if len(data) < MAX_READ_BYTES:
                break
    found.state = {**found.state, BAD_LINES: bad_before + found.bad_lines}
    if skipping:
        found.state[SKIPPING] = True
    return found, offset


def read_usage(root: Path, session_key: str, provider: str, source: str,
               turn_id: str | None, now_ms: int | None = None,
               mark: Callable[[str, UsageRow, int], object] | None = None,
               skipped: Callable[[int, str], object] | None = None) -> list[UsageRow]:
    """Read what ``source`` gained since the cursor into the session's evidence file;
    returns the rows stored (none when the file has no new whole line). ``mark``: what
    a Codex turn that ended on a limit does to the registry (the worker passes
    ``mark_limited``). ``skipped``: told how many unreadable lines this read skipped and
    why the first was (the worker logs it)."""
    from core.providers.adapters import get_adapter
    from core.providers.traits import traits
    from storage import session_db
    from storage.session_usage import Advance, advance_usage

    if not usable_source(source):
        return []
    now = now_ms if now_ms is not None else time.time_ns() // 1_000_000
    reader = get_adapter(provider).read_usage
    bad: list[tuple[int, str]] = []

    def parse(offset: int, state: dict[str, object]) -> Advance:
        batch, end = read_file(source, offset, state, now, reader)
        bad[:] = [(batch.bad_lines, batch.bad_reason or "")] if batch.bad_lines else []
        return Advance(_rows(batch, provider, turn_id), end, batch.state)

    path = session_db.session_db_path(root, session_key)
    conn = session_db.open_session_db(path, now_ms=now)
    try:
        rows = advance_usage(conn, session_key, source, parse, session_db.iso(now))
    finally:
        conn.close()
    if bad and skipped is not None:
        skipped(*bad[0])
    if traits(provider).limits_only_in_usage_file and rows and rows[-1].limit_kind \
            and mark is not None:
        mark(session_key, rows[-1], now)
    return rows


def turn_recorded(root: Path, session_key: str, turn_id: str) -> bool:
    """Whether the session's evidence file already holds a row of ``turn_id`` (another
    reader of the same turn end got its lines first)."""
    from storage import session_db
    from storage.session_usage import turn_usage

    path = session_db.session_db_path(root, session_key)
    if not path.exists():
        return False
    conn = session_db.open_session_db_readonly(path)
    try:
        return any(row.turn_id == turn_id for row in turn_usage(conn, session_key))
    finally:
        conn.close()


def read_settled(read: Callable[[], list[UsageRow]], recorded: Callable[[], bool], *,
                 settle_s: float = SETTLE_S, poll_s: float = SETTLE_POLL_S,
                 clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], object] = time.sleep) -> list[UsageRow]:
    """Read until the turn's usage is stored, by this read or another (``recorded``), or
    ``settle_s`` is over; an error is retried until then, and raised after."""
    deadline = clock() + settle_s
    while True:
        try:
            rows = read()
        except Exception:
            if clock() >= deadline:
                raise
        else:
            if rows or clock() >= deadline or recorded():
                return rows
        sleep(poll_s)


def mark_limited(home: Home, session_key: str, row: UsageRow, now: int) -> bool:
    """Codex has no StopFailure: the turn its rollout says ended on a limit makes the
    session needs-input / usage_limit with a recovery, as Claude Code's StopFailure
    does, unless the session moved on since (a prompt made it work again)."""
    from core.config.registry import open_current
    from core.hooks.usage_handoff import open_limit_recovery
    from core.model.enums import Activity, ActivityReason
    from core.model.text import shown
    from storage.connection import write_transaction
    from storage.operations import sessions as sessions_ops
    from storage.session_db import iso

    opened = open_current(home)
    try:
        with write_transaction(opened.conn) as conn:
            session = conn.execute("SELECT host_id, activity, last_observed_at FROM"
                                   " provider_sessions WHERE session_key = ?",
                                   (session_key,)).fetchone()
            frame = conn.execute("SELECT frame_id FROM frames WHERE current_session_key = ?",
                                 (session_key,)).fetchone()
            if session is None or frame is None:
                return False
            if session["activity"] == "working" and not (
                    row.ended_at and row.ended_at >= iso(session["last_observed_at"])):
                return False  # a prompt after the limit: the agent works again
            sessions_ops.record_activity(conn, session_key, activity=Activity.NEEDS_INPUT,
                                         reason=ActivityReason.USAGE_LIMIT,
                                         runtime_presence=None, turn_id=None,
                                         provider_version=None, now=now)
            words = shown(row.limit_message or "usage limit")[:300]
            if row.limit_reset_at:
                words += f" It resets at {row.limit_reset_at[11:16]} UTC."
            open_limit_recovery(conn, session["host_id"], frame["frame_id"], words, now)
        return True
    finally:
        opened.conn.close()


def main(argv: list[str]) -> int:
    from core.config.home import Home

    if len(argv) not in (4, 5) or argv[4:] not in ([], [SETTLE]):
        print(f"usage: python -m {MODULE} SESSION_KEY PROVIDER SOURCE_PATH TURN_ID [{SETTLE}]",
              file=sys.stderr)
        return 2
    session_key, provider, source, turn_id = argv[:4]
    home = Home.from_env()

    def log_skipped(count: int, reason: str) -> None:
        from core.model.text import shown

        stamp = time.strftime("%Y-%m-%dT%H:%M:%S")
        print(f"{stamp} session {session_key}: skipped {count} unreadable line(s) of"
              f" {shown(source)} (first: {reason}); the lines after them were read",
              file=sys.stderr)

    def read_all() -> list[UsageRow]:
        return read_usage(home.root, session_key, provider, source, turn_id or None,
                          mark=lambda key, row, now: mark_limited(home, key, row, now),
                          skipped=log_skipped)

    read_size = [-1]  # the file's size at the last read: a settling reader opens the
    # evidence file again only when the CLI's file grew

    def read_grown() -> list[UsageRow]:
        size = os.stat(source).st_size
        if size == read_size[0]:
            return []
        rows = read_all()
        read_size[0] = size
        return rows

    try:
        if argv[4:] and turn_id and usable_source(source):
            read_settled(read_grown, lambda: turn_recorded(home.root, session_key, turn_id))
        else:
            read_all()
    except Exception:  # the next Stop's read makes it up; say why in the log
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S")
        print(f"{stamp} session {session_key}: usage not read\n{traceback.format_exc()}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
