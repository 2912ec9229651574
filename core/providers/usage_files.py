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
import time
from dataclasses import replace
from typing import Any

from core.model.limit_text import reset_from_text
from core.model.usage import LimitHit, LimitKind, Tokens, UsageBatch

MAX_READ_BYTES = 32 * 1024 * 1024
"""One read takes at most this much of a file; the rest is read next time."""
KEEP_IDS = 64
"""Claude message ids remembered across reads (an answer's lines are adjacent)."""
SYNTHETIC = "<synthetic>"


def whole_lines(data: bytes) -> tuple[list[bytes], int]:
    """The complete lines of ``data`` and how many bytes they take."""
    end = data.rfind(b"\n")
    if end < 0:
        return [], 0
    return data[:end].split(b"\n"), end + 1


def _objects(lines: list[bytes]) -> list[dict[str, Any]]:
    found = []
    for line in lines:
        try:
            value = json.loads(line)
        except ValueError:
            continue  # a line the CLI never finished, or not JSON at all
        if isinstance(value, dict):
            found.append(value)
    return found


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


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
    message = line.get("message") or {}
    texts = [b.get("text", "") for b in message.get("content") or []
             if isinstance(b, dict) and b.get("type") == "text"]
    text = " ".join(t for t in texts if isinstance(t, str)).strip() or "rate limit"
    return LimitHit(LimitKind.RATE_LIMIT, text[:500], reset_from_text(text, now_ms))


def read_claude(data: bytes, state: dict[str, Any], now_ms: int | None = None) -> UsageBatch:
    """Usage of the assistant messages in ``data`` (bytes after the stored offset)."""
    now_ms = now_ms if now_ms is not None else time.time_ns() // 1_000_000
    lines, used = whole_lines(data)
    counted: dict[str, list[int]] = dict(state.get("ids") or {})
    batch = UsageBatch(offset=used)
    for line in _objects(lines):
        if line.get("type") != "assistant" or not isinstance(line.get("message"), dict):
            continue
        message = line["message"]
        model = message.get("model") if isinstance(message.get("model"), str) else None
        if line.get("isApiErrorMessage") or model == SYNTHETIC:
            batch.limit = _claude_limit(line, now_ms) or batch.limit
            continue
        usage = message.get("usage")
        if not isinstance(usage, dict):
            continue
        batch.limit = None  # the model answered after the error: the turn went on
        tokens = _claude_tokens(usage)
        key = str(message.get("id") or line.get("requestId") or line.get("uuid") or "")
        before = counted.get(key)
        if before is None:
            batch.add(model, tokens, 1)
        else:
            delta = tokens - Tokens.from_list(before)
            if not delta.any_negative and delta.total:
                batch.add(model, delta, 0)
        counted.pop(key, None)
        counted[key] = tokens.as_list()
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
    message = str(payload.get("message") or "")
    info = json.dumps(payload.get("codex_error_info") or "").lower()
    lowered = message.lower()
    if "usage limit" in lowered or "usage_limit" in info:
        kind = LimitKind.USAGE_LIMIT
    elif "rate limit" in lowered or "429" in lowered or "too many requests" in lowered \
            or "rate_limit" in info:
        kind = LimitKind.RATE_LIMIT
    else:
        return None
    return LimitHit(kind, message[:500], reset_from_text(message, now_ms) or reset_ms)


def _codex_reset(rate_limits: object) -> int | None:
    """The soonest stated reset of a window that is used up, in ms."""
    if not isinstance(rate_limits, dict):
        return None
    resets = []
    for window in ("primary", "secondary"):
        entry = rate_limits.get(window)
        if isinstance(entry, dict) and (entry.get("used_percent") or 0) >= 100:
            at = entry.get("resets_at")
            if isinstance(at, int) and at > 0:
                resets.append(at * 1000)
    return min(resets) if resets else None


def read_codex(data: bytes, state: dict[str, Any], now_ms: int | None = None) -> UsageBatch:
    """Usage of the ``token_count`` events in ``data`` (bytes after the stored offset)."""
    now_ms = now_ms if now_ms is not None else time.time_ns() // 1_000_000
    lines, used = whole_lines(data)
    model = state.get("model") if isinstance(state.get("model"), str) else None
    total = Tokens.from_list(list(state.get("total") or [0, 0, 0, 0, 0]))
    reset_ms: int | None = None
    batch = UsageBatch(offset=used)
    for line in _objects(lines):
        payload = line.get("payload")
        if not isinstance(payload, dict):
            continue
        kind = line.get("type")
        if kind == "turn_context" and isinstance(payload.get("model"), str):
            model = payload["model"]
            continue
        if kind != "event_msg":
            continue
        event = payload.get("type")
        if event == "token_count":
            reset_ms = _codex_reset(payload.get("rate_limits")) or reset_ms
            info = payload.get("info")
            if not isinstance(info, dict) or not isinstance(info.get("total_token_usage"), dict):
                continue
            now_total = _codex_tokens(info["total_token_usage"])
            delta = now_total - total
            if delta.any_negative:  # a new total (a resumed thread counts afresh)
                last = info.get("last_token_usage")
                delta = _codex_tokens(last) if isinstance(last, dict) else now_total
            total = now_total
            if delta.total:
                batch.add(model, delta, 1)
                batch.limit = None
        elif event == "error" and (
                hit := _codex_limit(payload, now_ms, reset_ms)) is not None:
            batch.limit = hit
        elif event == "task_complete" and isinstance(payload.get("error"), dict) and (
                hit := _codex_limit(payload["error"], now_ms, reset_ms)) is not None:
            # 0.171: a turn the service refused ends with its error in task_complete
            done = payload.get("completed_at")
            # (whole seconds: the end of that second, so it sorts after the prompt)
            batch.limit = replace(hit, at_ms=done * 1000 + 999) if isinstance(done, int) \
                else hit
    batch.state = {"model": model, "total": total.as_list()}
    return batch
