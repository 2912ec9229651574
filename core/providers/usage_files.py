"""Incremental readers of the CLIs' own records: Claude Code's transcript and
Codex's rollout file, both JSON lines that only ever grow.

Each reader takes the bytes after the stored offset and the stored state, and
returns a :class:`UsageBatch`: the usage per model since then, a limit the turn
ended on, the new offset (only whole lines are consumed, so a line being
written is read next time) and the new state. Pure functions: the worker
(``core.usage.worker``) does the file and the transaction.

Claude Code writes one transcript line per content block of an answer, each
carrying the message's usage, so lines are counted once per message id (a
later line of an id already counted adds only its difference). Codex writes a
``token_count`` event after each model response with the thread's running total:
the turn's usage is the difference to the total seen before, which also makes
a repeated event count nothing.
"""

from __future__ import annotations

import json
import re
import time
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from core.model.limit_text import reset_from_text
from core.model.usage import LimitHit, LimitKind, Tokens, UsageBatch

MAX_READ_BYTES = 32 * 1024 * 1024
"""One read takes at most this much of a file; the rest is read next time. A line
longer than this is skipped unread (``core.usage.worker``)."""
KEEP_IDS = 64
"""Claude message ids remembered across reads (an answer's lines are adjacent)."""
SYNTHETIC = "<synthetic>"
MAX_TOKENS = 10**12
"""The largest token count a line may state. A CLI states a message's tokens (at most a
context window, a few million) or a thread's running total; a trillion is far beyond
both, and keeps every stored sum far inside SQLite's 64-bit integers and every cost
estimate believable. A count above it, negative, or not a whole number makes the line
unreadable: it is skipped and counted, never stored."""
MAX_NAME_CHARS = 200
"""A model name or message id is cut to this many characters (the tree has a few cells;
a 100,000-character name would fill every screen that shows it)."""
MAX_MESSAGE_CHARS = 500
"""A limit message is cut to this many characters."""
MAX_RESET_AHEAD_MS = 366 * 24 * 3600 * 1000
"""A stated reset or end time further than a year from now is not believed (no plan
resets later); the turn's limit is kept without it."""
_INVISIBLE = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff\u2028\u2029]")


class BadLine(ValueError):
    """A whole line that cannot be read as the CLI's record: skipped and counted."""


def whole_lines(data: bytes) -> tuple[list[bytes], int]:
    """The complete lines of ``data`` and how many bytes they take."""
    end = data.rfind(b"\n")
    if end < 0:
        return [], 0
    return data[:end].split(b"\n"), end + 1


def _object(line: bytes) -> dict[str, Any] | None:
    """One line as a JSON object; None for a blank line or a JSON value that is not an
    object (nothing of ours); ``BadLine`` for anything that is not JSON at all, or
    nests deeper than the parser goes."""
    if not line.strip():
        return None
    try:
        value = json.loads(line)
    except RecursionError as exc:
        raise BadLine("nested too deep") from exc
    except ValueError as exc:
        raise BadLine("not JSON") from exc
    return value if isinstance(value, dict) else None


def _each_line(lines: list[bytes], batch: UsageBatch,
               read: Callable[[dict[str, Any]], None]) -> None:
    """Call ``read`` with each line's object; a line it cannot read is skipped and
    counted in ``batch``, and the lines after it are still read. ``read`` must change
    nothing before it has checked the whole line (so a skipped line leaves no trace)."""
    for number, raw in enumerate(lines, start=1):
        try:
            line = _object(raw)
            if line is not None:
                read(line)
        except BadLine as exc:
            batch.skip(f"line {number}: {exc}")
        except Exception as exc:  # a shape no check foresaw: still only this line
            batch.skip(f"line {number}: {type(exc).__name__}")


def _int(value: object) -> int:
    """A token count: absent is 0; anything but a whole number in [0, MAX_TOKENS] makes
    the line unreadable."""
    if value is None:
        return 0
    if type(value) is not int or not 0 <= value <= MAX_TOKENS:
        shown = type(value).__name__ if type(value) is not int else "out of bounds"
        raise BadLine(f"a token count that is not a count ({shown})")
    return value


def clean_text(value: object, limit: int) -> str | None:
    """A string from a CLI's file made safe to keep: control, bidi and other invisible
    characters removed, at most ``limit`` characters; None for a non-string or one
    with nothing visible left."""
    if not isinstance(value, str):
        return None
    if len(value) <= limit and value.isascii() and value.isprintable():
        return value.strip() or None  # the usual model id: nothing to remove
    cut = value[:limit * 4]  # never scan a huge string whole
    kept = "".join(ch for ch in _INVISIBLE.sub("", cut.replace("\n", " ").replace("\t", " "))
                   if unicodedata.category(ch) != "Cf")
    return kept.strip()[:limit] or None


def _sane_ms(value: int | None, now_ms: int) -> int | None:
    """An epoch-ms time a line states, or None when it is before 1970 or more than a
    year ahead (stored as text, it must stay a date)."""
    if value is None or not 0 < value <= now_ms + MAX_RESET_AHEAD_MS:
        return None
    return value


# --------------------------------------------------------------------------- Claude


def _claude_tokens(usage: dict[str, Any]) -> Tokens:
    return Tokens(input=_int(usage.get("input_tokens")), output=_int(usage.get("output_tokens")),
                  cache_read=_int(usage.get("cache_read_input_tokens")),
                  cache_write=_int(usage.get("cache_creation_input_tokens")))


def _claude_limit(line: dict[str, Any], now_ms: int) -> LimitHit | None:
    """An API error line the CLI wrote for a rate or usage limit."""
    status = line.get("apiErrorStatus")
    if line.get("error") != "rate_limit" and status != 429:
        return None
    message = line.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if content is not None and not isinstance(content, list):
        raise BadLine("a limit message whose content is not a list")
    blocks = content or []
    texts = [b.get("text") for b in blocks if isinstance(b, dict) and b.get("type") == "text"]
    text = " ".join(t[:MAX_MESSAGE_CHARS * 4] for t in texts if isinstance(t, str))
    shown = clean_text(text, MAX_MESSAGE_CHARS) or "rate limit"
    return LimitHit(LimitKind.RATE_LIMIT, shown,
                    _sane_ms(reset_from_text(text[:MAX_MESSAGE_CHARS * 4], now_ms), now_ms))


def read_claude(data: bytes, state: dict[str, Any], now_ms: int | None = None) -> UsageBatch:
    """Usage of the assistant messages in ``data`` (bytes after the stored offset)."""
    now = now_ms if now_ms is not None else time.time_ns() // 1_000_000
    lines, used = whole_lines(data)
    ids = state.get("ids")
    counted: dict[str, list[int]] = dict(ids) if isinstance(ids, dict) else {}
    batch = UsageBatch(offset=used)

    def read(line: dict[str, Any]) -> None:
        if line.get("type") != "assistant":
            return
        message = line.get("message")
        if not isinstance(message, dict):
            raise BadLine("an assistant line whose message is not an object")
        model = clean_text(message.get("model"), MAX_NAME_CHARS)
        if line.get("isApiErrorMessage") or model == SYNTHETIC:
            batch.limit = _claude_limit(line, now) or batch.limit
            return
        usage = message.get("usage")
        if not isinstance(usage, dict):
            return
        tokens = _claude_tokens(usage)  # raises BadLine before anything is changed
        key = next((str(k) for k in (message.get("id"), line.get("requestId"),
                                     line.get("uuid")) if isinstance(k, str | int) and k),
                   "")[:MAX_NAME_CHARS]
        batch.limit = None  # the model answered after the error: the turn went on
        before = counted.get(key)
        if before is None:
            batch.add(model, tokens, 1)
        else:
            delta = tokens - Tokens.from_list(before)
            if not delta.any_negative and delta.total:
                batch.add(model, delta, 0)
        counted.pop(key, None)
        counted[key] = tokens.as_list()

    _each_line(lines, batch, read)
    batch.state = {"ids": dict(list(counted.items())[-KEEP_IDS:])}
    return batch


# --------------------------------------------------------------------------- Codex


def _codex_tokens(usage: dict[str, Any]) -> Tokens:
    cached = _int(usage.get("cached_input_tokens"))
    return Tokens(input=max(0, _int(usage.get("input_tokens")) - cached),
                  output=_int(usage.get("output_tokens")), cache_read=cached,
                  cache_write=_int(usage.get("cache_write_input_tokens")),
                  reasoning=_int(usage.get("reasoning_output_tokens")))


def _codex_limit(payload: dict[str, Any], now_ms: int, reset_ms: int | None) -> LimitHit | None:
    raw = payload.get("message")
    message = raw[:MAX_MESSAGE_CHARS * 4] if isinstance(raw, str) else ""
    error_info = payload.get("codex_error_info")
    info = (error_info if isinstance(error_info, str)
            else json.dumps(error_info or "")[:MAX_MESSAGE_CHARS * 4]).lower()
    lowered = message.lower()
    if "usage limit" in lowered or "usage_limit" in info:
        kind = LimitKind.USAGE_LIMIT
    elif "rate limit" in lowered or "429" in lowered or "too many requests" in lowered \
            or "rate_limit" in info:
        kind = LimitKind.RATE_LIMIT
    else:
        return None
    return LimitHit(kind, clean_text(message, MAX_MESSAGE_CHARS) or "",
                    _sane_ms(reset_from_text(message, now_ms), now_ms) or reset_ms)


def _codex_reset(rate_limits: object, now_ms: int) -> int | None:
    """The soonest stated reset of a window that is used up, in ms."""
    if not isinstance(rate_limits, dict):
        return None
    resets = []
    for window in ("primary", "secondary"):
        entry = rate_limits.get(window)
        if not isinstance(entry, dict):
            continue
        used = entry.get("used_percent")
        at = entry.get("resets_at")
        full = isinstance(used, int | float) and not isinstance(used, bool) and used >= 100
        if full and isinstance(at, int) and not isinstance(at, bool) \
                and (ms := _sane_ms(at * 1000, now_ms)) is not None:
            resets.append(ms)
    return min(resets) if resets else None


def _state_total(value: object) -> Tokens:
    """The running total a cursor stored (zeros when it holds anything else)."""
    if isinstance(value, list) and len(value) == 5 and all(
            type(v) is int and 0 <= v <= MAX_TOKENS for v in value):
        return Tokens.from_list(value)
    return Tokens()


@dataclass
class _CodexSoFar:
    """What a Codex read carries from line to line."""

    model: str | None
    total: Tokens
    reset_ms: int | None = None


def read_codex(data: bytes, state: dict[str, Any], now_ms: int | None = None) -> UsageBatch:
    """Usage of the ``token_count`` events in ``data`` (bytes after the stored offset)."""
    now = now_ms if now_ms is not None else time.time_ns() // 1_000_000
    lines, used = whole_lines(data)
    so_far = _CodexSoFar(clean_text(state.get("model"), MAX_NAME_CHARS),
                         _state_total(state.get("total")))
    batch = UsageBatch(offset=used)

    def read(line: dict[str, Any]) -> None:
        payload = line.get("payload")
        if not isinstance(payload, dict):
            return
        kind = line.get("type")
        if kind == "turn_context":
            so_far.model = clean_text(payload.get("model"), MAX_NAME_CHARS) or so_far.model
            return
        if kind != "event_msg":
            return
        event = payload.get("type")
        if event == "token_count":
            info = payload.get("info")
            reset_ms = _codex_reset(payload.get("rate_limits"), now)
            if not isinstance(info, dict) or not isinstance(info.get("total_token_usage"), dict):
                so_far.reset_ms = reset_ms or so_far.reset_ms
                return
            now_total = _codex_tokens(info["total_token_usage"])  # may raise BadLine
            delta = now_total - so_far.total
            if delta.any_negative:  # a new total (a resumed thread counts afresh)
                last = info.get("last_token_usage")
                delta = _codex_tokens(last) if isinstance(last, dict) else now_total
            so_far.reset_ms = reset_ms or so_far.reset_ms
            so_far.total = now_total
            if delta.total:
                batch.add(so_far.model, delta, 1)
                batch.limit = None
        elif event == "error" and (
                hit := _codex_limit(payload, now, so_far.reset_ms)) is not None:
            batch.limit = hit
        elif event == "task_complete" and isinstance(payload.get("error"), dict) and (
                hit := _codex_limit(payload["error"], now, so_far.reset_ms)) is not None:
            # 0.171: a turn the service refused ends with its error in task_complete
            done = payload.get("completed_at")
            # (whole seconds: the end of that second, so it sorts after the prompt)
            at = _sane_ms(done * 1000 + 999, now) \
                if isinstance(done, int) and not isinstance(done, bool) else None
            batch.limit = replace(hit, at_ms=at) if at is not None else hit

    _each_line(lines, batch, read)
    batch.state = {"model": so_far.model, "total": so_far.total.as_list()}
    return batch
