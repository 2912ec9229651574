"""How CLI results are printed: JSON for machines, short lines for people."""

from __future__ import annotations

import dataclasses
import json
import sys
from enum import Enum
from typing import Any


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
    return str(value)


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


def emit(value: Any, *, as_json: bool, text: str | None = None) -> None:
    if as_json:
        json.dump(to_plain(value), sys.stdout, sort_keys=True, separators=(",", ":"))
        sys.stdout.write("\n")
    else:
        sys.stdout.write((text if text is not None else readable(value)) + "\n")


def request_id_from(args) -> str:
    """``--request-id`` when given (validated, for an idempotent retry), else a fresh one."""
    from core.engine.requests import check_uuid, new_request_id

    given = getattr(args, "request_id", None)
    return check_uuid(given, "--request-id") if given else new_request_id()
