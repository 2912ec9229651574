"""OpenCode's usage from its own message records (issue 41).

Where OpenCode 1.18.33 keeps them (measured): in its SQLite database,
``$XDG_DATA_HOME/opencode/opencode.db``, table ``message``, one row per message whose
``data`` column is the message as JSON. An assistant message states its ``tokens``
(``input``, ``output``, ``reasoning``, ``cache.read``, ``cache.write``), the ``cost``
OpenCode computed from its model catalogue, ``modelID``/``providerID`` and
``time.completed``. The same record is what its bus sends as ``message.updated``
(several times per message: while it streams, then once or twice when completed).

Switchboard's usage reader reads files that only grow, from a cursor, beside the agent
(``core.usage.worker``); another program's live database is not such a file. So the
launch's plugin (``core.providers.opencode.PLUGIN_JS``) appends each *completed*
assistant message record, exactly as OpenCode sent it, as one JSON line to a private
file in the session's run folder, and names that file as ``transcript_path`` in the
events it hands on; this module reads those lines.

OpenCode's counts are not split as Switchboard's are: its ``input`` leaves out the
cached input (as Switchboard's does) but its ``output`` leaves out the reasoning tokens,
which it states apart (1.18.33's bundle: ``output: outputTokens - reasoningTokens``).
Switchboard's ``output`` includes reasoning (``core.model.usage.Tokens``), so the two are
added back together here. A message record is counted once per id: a later line of an
id already counted adds only what it grew by.

Limits: a refused request (429) is retried by OpenCode itself (``session.status`` type
``retry``); no such turn has been recorded on 1.18.33, so no limit is read from these
records yet (``docs/cli-versions.md``).
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

USAGE_FILE = "opencode-usage.jsonl"
"""The per-session file the plugin appends completed assistant messages to."""


def _tokens(record: dict[str, Any]) -> Tokens:
    """A message's tokens as Switchboard counts them (reasoning is part of output)."""
    tokens = record.get("tokens")
    if not isinstance(tokens, dict):
        raise BadLine("an assistant message without tokens")
    cache = tokens.get("cache")
    if cache is not None and not isinstance(cache, dict):
        raise BadLine("a message whose cache tokens are not an object")
    cache = cache or {}
    reasoning = _int(tokens.get("reasoning"))
    return Tokens(input=_int(tokens.get("input")),
                  output=_int(tokens.get("output")) + reasoning,
                  cache_read=_int(cache.get("read")), cache_write=_int(cache.get("write")),
                  reasoning=reasoning)


def _model(record: dict[str, Any]) -> str | None:
    """The model id as OpenCode's catalogue names it (``claude-sonnet-4-5``): the price
    table knows models by that name, not by ``provider/model``."""
    return clean_text(record.get("modelID"), MAX_NAME_CHARS)


def read_opencode(data: bytes, state: dict[str, Any], now_ms: int | None = None) -> UsageBatch:
    """Usage of the completed assistant messages in ``data`` (bytes after the cursor)."""
    del now_ms  # no limit is read (module docstring); kept for the reader's signature
    lines, used = whole_lines(data)
    ids = state.get("ids")
    counted: dict[str, list[int]] = dict(ids) if isinstance(ids, dict) else {}
    batch = UsageBatch(offset=used)

    def read(record: dict[str, Any]) -> None:
        if record.get("role") != "assistant":
            return
        done = record.get("time")
        if not isinstance(done, dict) or done.get("completed") is None:
            return  # still streaming: its final record comes later
        tokens = _tokens(record)  # raises BadLine before anything is changed
        key = clean_text(record.get("id"), MAX_NAME_CHARS) or ""
        before = counted.get(key)
        if before is None:
            batch.add(_model(record), tokens, 1)
        else:
            delta = tokens - Tokens.from_list(before)
            if not delta.any_negative and delta.total:
                batch.add(_model(record), delta, 0)
        counted.pop(key, None)
        counted[key] = tokens.as_list()

    _each_line(lines, batch, read)
    batch.state = {"ids": dict(list(counted.items())[-KEEP_IDS:])}
    return batch
