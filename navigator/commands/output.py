"""How CLI results are printed: JSON for machines, short lines for people.

Everything the CLI writes for a person goes through ``say`` / ``complain``
(``emit`` uses ``say``): text from data (titles, names, briefs, messages, pane
captures, error messages that echo input) is agents' text, so it is spelled
out by ``core.model.text`` and never reaches the terminal raw. ``--json`` is
written with ``ensure_ascii``, so every control character is a JSON escape and
the value stays exact.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from enum import Enum
from typing import Any, TextIO

from core.model.text import sgr_only, shown, shown_block


def to_plain(value: Any) -> Any:
    """Turn dataclasses, enums and tuples into JSON-ready values."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, dict):
        return {str(k): to_plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_plain(v) for v in value]
    return value


def _scalar(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    # Spelled out before the value is split into lines: splitlines() also breaks at
    # FS/GS/RS, NEL and U+2028, which must show as escapes, not as new rows.
    return shown_block(str(value))


def _is_scalar(value: Any) -> bool:
    return not isinstance(value, dict | list)


def _render(value: Any, indent: int, lines: list[str]) -> None:
    pad = " " * indent
    if isinstance(value, dict):
        if not value:
            lines.append(pad + "-")
        for key, item in value.items():
            if _is_scalar(item):
                text = _scalar(item).splitlines() or [""]
                lines.append(f"{pad}{key}: {text[0]}")
                lines.extend(f"{pad}  {more}" for more in text[1:])
            elif isinstance(item, list) and all(_is_scalar(v) for v in item):
                lines.append(f"{pad}{key}: {', '.join(_scalar(v) for v in item) or '-'}")
            else:
                lines.append(f"{pad}{key}:")
                _render(item, indent + 2, lines)
    elif isinstance(value, list):
        if not value:
            lines.append(pad + "(none)")
        for index, item in enumerate(value):
            if _is_scalar(item):
                lines.append(f"{pad}- {_scalar(item)}")
            else:
                if index:
                    lines.append("")
                _render(item, indent, lines)
    else:
        lines.extend(pad + line for line in (_scalar(value).splitlines() or [""]))


def readable(value: Any) -> str:
    """A result as ``key: value`` lines for a person (nested values indented).

    The default for any command that has no sentence of its own, so no
    command ever prints a Python repr; the keys are the ``--json`` keys.
    """
    lines: list[str] = []
    _render(to_plain(value), 0, lines)
    return "\n".join(lines)


def say(text: str, *, file: TextIO | None = None, colours: bool = False) -> None:
    """Write one text for a person: newlines and tabs kept, every other control
    character spelled out (``colours``: a pane capture keeps its SGR colours only)."""
    out = sys.stdout if file is None else file
    out.write((sgr_only(text) if colours else shown_block(text)) + "\n")


def complain(code: str, message: str, *, lines: bool = False) -> None:
    """``switchboard: CODE: message`` on stderr, as one line: a message that echoes an
    argument or agents' text holds it spelled out, newlines included, so a refusal is
    never split and never forges a second line. ``lines``: a message built of lines
    (a config's list of problems, each already safe) keeps its newlines."""
    text = f"switchboard: {code}: {message}"
    sys.stderr.write((shown_block(text) if lines else shown(text)) + "\n")


def emit(value: Any, *, as_json: bool, text: str | None = None,
         colours: bool = False) -> None:
    """``--json``: the exact value (JSON escapes); otherwise ``text`` (or ``readable``)
    through ``say``."""
    if as_json:
        json.dump(to_plain(value), sys.stdout, sort_keys=True, separators=(",", ":"))
        sys.stdout.write("\n")
    else:
        say(text if text is not None else readable(value), colours=colours)


def request_id_from(args) -> str:
    """``--request-id`` when given (validated, for an idempotent retry), else a fresh one."""
    from core.context.requests import check_uuid, new_request_id

    given = getattr(args, "request_id", None)
    return check_uuid(given, "--request-id") if given else new_request_id()
