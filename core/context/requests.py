"""Request identity: a request UUID plus a normalized semantic fingerprint.

The fingerprint covers only what the request means (operation and its semantic
target); presentation capabilities such as "desktop focus is available" are
excluded, so a presentation retry may reuse the request id without repeating
its state mutation.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import Any

from core.model.digest import sha256_hex
from core.model.errors import SwitchboardError

PRESENTATION_FIELDS = frozenset({"desktop_focus_available", "presentation", "json"})


def new_request_id() -> str:
    return str(uuid.uuid4())


def check_uuid(value: str, what: str) -> str:
    try:
        parsed = uuid.UUID(value)
    except (ValueError, AttributeError, TypeError) as exc:
        raise SwitchboardError(f"{what} must be a UUID, got {value!r}",
                               code="bad_request") from exc
    if parsed.int == 0:
        raise SwitchboardError(f"{what} must not be the nil UUID", code="bad_request")
    return str(parsed)


def _normalize(value: Any) -> Any:
    if isinstance(value, str):
        return " ".join(value.split()) if "\n" not in value else value.strip()
    if isinstance(value, dict):
        return {k: _normalize(v) for k, v in sorted(value.items())
                if k not in PRESENTATION_FIELDS and v is not None}
    if isinstance(value, list | tuple):
        return [_normalize(v) for v in value]
    return value


def fingerprint(operation: str, semantic: dict[str, Any]) -> str:
    """sha256 over the canonical JSON of the operation and its semantic fields (the
    digest without ``hashlib``, whose import loads every hash module there is)."""
    body = json.dumps({"op": operation, "args": _normalize(semantic)}, sort_keys=True,
                      separators=(",", ":"), ensure_ascii=False)
    return sha256_hex(body.encode("utf-8"))


@dataclass(frozen=True)
class Request:
    """One mutation request as the engine receives it from the CLI or navigator."""

    operation: str
    semantic: dict[str, Any]
    request_id: str = field(default_factory=new_request_id)

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.operation, self.semantic)
