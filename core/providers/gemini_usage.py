"""Token usage from Gemini CLI's own chat record (``~/.gemini/tmp/<project>/chats/*.jsonl``).

Gemini CLI 0.61.0 appends one JSON object per line: a header (``sessionId``,
``startTime``), each message as it is added (``type`` ``user`` or ``gemini``), and
``{"$set": {...}}`` patches of the header. A model reply line carries its usage:
``{"type": "gemini", "id": ..., "model": ..., "tokens": {"input", "output", "cached",
"thoughts", "tool", "total"}}`` (the API's usageMetadata: ``input`` counts the cached part
too, ``thoughts`` are billed as output and not in ``output``, ``tool`` is the tool-use
prompt). So ``input`` here is input minus cached plus tool, ``cache_read`` the cached
part, ``output`` output plus thoughts, ``reasoning`` the thoughts.

A resumed session is written to a new file that starts with ``{"$set": {"messages":
[...]}}``: the whole earlier conversation, already counted in the first file. A
``$set`` is therefore never counted; only message lines are, once per message id (a
later line of an id already counted adds only its difference). A refused turn (429)
leaves no line at all in 0.61.0 (the CLI retries without end), so no limit is read
here: ``docs/cli-versions.md`` says so.
"""

from __future__ import annotations

from typing import Any

from core.model.usage import Tokens, UsageBatch
from core.providers.usage_files import (
    KEEP_IDS,
    MAX_NAME_CHARS,
    BadLine,
    _each_line,
    _int,
    clean_text,
    whole_lines,
)

REPLY = "gemini"
"""``type`` of a model reply line."""


def gemini_tokens(tokens: dict[str, Any]) -> Tokens:
    """One reply's ``tokens`` as :class:`Tokens` (see the module docstring)."""
    given = _int(tokens.get("input"))
    cached = _int(tokens.get("cached"))
    thoughts = _int(tokens.get("thoughts"))
    return Tokens(input=max(0, given - cached) + _int(tokens.get("tool")),
                  output=_int(tokens.get("output")) + thoughts,
                  cache_read=cached,
                  reasoning=thoughts)


def read_gemini(data: bytes, state: dict[str, Any], now_ms: int | None = None) -> UsageBatch:
    """Usage of the reply lines in ``data`` (bytes after the stored offset)."""
    del now_ms  # the readers share one signature; no limit line to date (module docstring)
    lines, used = whole_lines(data)
    ids = state.get("ids")
    counted: dict[str, list[int]] = dict(ids) if isinstance(ids, dict) else {}
    batch = UsageBatch(offset=used)

    def read(line: dict[str, Any]) -> None:
        if line.get("type") != REPLY:
            return  # the header, a person's message, a $set (history already counted)
        tokens = line.get("tokens")
        if tokens is None:
            return
        if not isinstance(tokens, dict):
            raise BadLine("a reply whose tokens are not an object")
        found = gemini_tokens(tokens)  # raises BadLine before anything is changed
        model = clean_text(line.get("model"), MAX_NAME_CHARS)
        key = str(line.get("id") or "")[:MAX_NAME_CHARS]
        before = counted.get(key) if key else None
        if before is None:
            batch.add(model, found, 1)
        else:
            delta = found - Tokens.from_list(before)
            if not delta.any_negative and delta.total:
                batch.add(model, delta, 0)
        if key:
            counted.pop(key, None)
            counted[key] = found.as_list()

    _each_line(lines, batch, read)
    batch.state = {"ids": dict(list(counted.items())[-KEEP_IDS:])}
    return batch
