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


def emit(value: Any, *, as_json: bool, text: str | None = None) -> None:
    if as_json:
        json.dump(to_plain(value), sys.stdout, sort_keys=True, separators=(",", ":"))
        sys.stdout.write("\n")
    else:
        sys.stdout.write((text if text is not None else str(to_plain(value))) + "\n")


def request_id_from(args) -> str:
    """``--request-id`` when given (validated, for an idempotent retry), else a fresh one."""
    from core.requests import check_uuid, new_request_id

    given = getattr(args, "request_id", None)
    return check_uuid(given, "--request-id") if given else new_request_id()
