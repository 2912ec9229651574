"""Canonical JSON for state envelopes, with the contract's safety ceilings.

HostState travels between hosts over SSH and NavigatorState feeds frontends
that render straight into a terminal, so an envelope is untrusted input even
when we wrote it. Every envelope passes one checker, on the way out
(``encode_canonical``) and on the way in (``decode_checked``):

- ceilings: 8 MiB encoded, depth 32 (each object/array is a level, the root
  is level 1), 64 KiB (UTF-8 bytes) per string or key, 100,000 array items,
  256 object keys;
- no non-finite numbers, no integers outside +/-(2**53 - 1) (they do not
  survive a JavaScript frontend), no duplicate keys;
- no terminal controls in any string or key: every C0 control including TAB,
  LF and CR, DEL, C1 controls, lone surrogates, bidi overrides/isolates and
  U+2028/U+2029 (``core.model.text.UNSAFE_CHARS``). Envelope strings are one-line
  summaries; multi-line bodies (briefs, handoffs) never belong in them;
- no key that names sensitive or raw material (token, prompt, transcript,
  argv, secret, password, credential, capability, raw, ...), unless the
  envelope type allowlists that exact JSON path (PresentationDirective's
  ``$.desktopToken``). State envelopes also refuse locator keys (socket,
  pane, pid, process, path, cwd, env, body).

Canonical form: UTF-8, keys sorted, no whitespace, optional fields omitted
when unset. Typed envelopes (``core.state.state_types``) then check types, enum
values and references, and drop unknown fields, so reserialising a decoded
envelope yields only the fields this version knows.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import MISSING, dataclass, field, fields
from enum import StrEnum
from functools import cache
from typing import Any, ClassVar, Protocol, TypeVar

from core.model.errors import EnvelopeError
from core.model.text import UNSAFE_CHARS, describe_char

MAX_ENCODED_BYTES = 8 * 1024 * 1024
MAX_DEPTH = 32
MAX_STRING_BYTES = 64 * 1024
MAX_ARRAY_ITEMS = 100_000
MAX_OBJECT_KEYS = 256
MAX_SAFE_INT = 2**53 - 1

# Any key containing one of these (case-insensitive, separators ignored) is sensitive.
SENSITIVE_STEMS: tuple[str, ...] = (
    "token", "prompt", "transcript", "argv", "secret", "password", "passwd", "credential",
    "capabilit", "apikey", "privatekey",
)
# Any key with one of these as a whole word (camelCase/snake_case/kebab-case) is sensitive.
SENSITIVE_WORDS: frozenset[str] = frozenset({"raw"})
# State envelopes also refuse keys naming tmux/process locators, paths and bodies.
LOCATOR_WORDS: frozenset[str] = frozenset({
    "socket", "pane", "panes", "pid", "process", "path", "paths", "cwd", "env", "environ",
    "environment", "body",
})

_WORD_RE = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
_IDENT_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def key_words(key: str) -> list[str]:
    """camelCase / snake_case / kebab-case words of a key, lowercased."""
    return [word.lower() for word in _WORD_RE.findall(key)]


@cache
def sensitive_reason(key: str, locators: bool) -> str | None:
    """Why a key is refused, or None; cached because envelopes repeat their keys."""
    squashed = re.sub(r"[^a-z0-9]", "", key.lower())
    for stem in SENSITIVE_STEMS:
        if stem in squashed:
            return "names sensitive or raw material"
    words = key_words(key)
    if any(word in SENSITIVE_WORDS for word in words):
        return "names sensitive or raw material"
    if locators and any(word in LOCATOR_WORDS for word in words):
        return "names a process/tmux locator, path or body, which state envelopes exclude"
    return None


# --------------------------------------------------------------------------- paths


def format_path(segments: list[str | int] | tuple[str | int, ...]) -> str:
    """``$.views[3].activeFrameId``; odd keys are quoted and cut, so paths stay printable."""
    out = ["$"]
    for segment in segments:
        if isinstance(segment, int):
            out.append(f"[{segment}]")
        elif _IDENT_RE.fullmatch(segment) and len(segment) <= 64:
            out.append(f".{segment}")
        else:
            out.append(f"[{json.dumps(segment[:64], ensure_ascii=True)}]")
    return "".join(out)


def _pattern_path(segments: list[str | int]) -> str:
    """The path with array indices as ``[*]``, the form allowlists are written in."""
    return "$" + "".join("[*]" if isinstance(s, int) else f".{s}" for s in segments)


# --------------------------------------------------------------------------- generic checks


class _DuplicateKeys(dict):
    """An object whose source text repeated a key; reported with its path by the walker."""

    duplicate: str = ""


@dataclass(frozen=True)
class _BadNumber:
    """A number the JSON parser saw but that no envelope may carry."""

    text: str


def _pairs_hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        seen: set[str] = set()
        marked = _DuplicateKeys(result)
        for key, _ in pairs:
            if key in seen:
                marked.duplicate = key
                break
            seen.add(key)
        return marked
    return result


def _parse_float(text: str) -> float | _BadNumber:
    value = float(text)
    return value if math.isfinite(value) else _BadNumber(text)


def _parse_int(text: str) -> int | _BadNumber:
    if len(text) > 17:  # beyond 2**53 anyway; avoids int() on huge digit strings
        return _BadNumber(text[:24])
    value = int(text)
    return value if -MAX_SAFE_INT <= value <= MAX_SAFE_INT else _BadNumber(text)


class _Checker:
    """Walks a JSON value once and raises EnvelopeError naming the first bad path."""

    def __init__(self, *, allow_paths: frozenset[str], locators: bool) -> None:
        self.allow_paths = allow_paths
        self.locators = locators
        self.segments: list[str | int] = []
        # Envelopes repeat a few dozen keys thousands of times; check each name once.
        self.good_keys: set[str] = set()

    def fail(self, message: str) -> EnvelopeError:
        return EnvelopeError(f"{format_path(self.segments)}: {message}")

    def string(self, value: str, what: str) -> None:
        if len(value) * 4 > MAX_STRING_BYTES:
            size = len(value.encode("utf-8", "surrogatepass"))
            if size > MAX_STRING_BYTES:
                raise self.fail(f"{what} is {size} bytes; the limit is {MAX_STRING_BYTES}")
        match = UNSAFE_CHARS.search(value)
        if match is not None:
            raise self.fail(f"{what} contains a terminal control character "
                            f"({describe_char(match.group())} at index {match.start()})")

    def walk(self, value: Any, depth: int) -> None:
        kind = type(value)
        if kind is str:
            self.string(value, "string")
        elif kind is bool or value is None:
            return
        elif kind is int:
            if not -MAX_SAFE_INT <= value <= MAX_SAFE_INT:
                raise self.fail(f"integer is outside +/-{MAX_SAFE_INT} (unsafe bound)")
        elif kind is float:
            if not math.isfinite(value):
                raise self.fail("non-finite numbers are not allowed")
        elif isinstance(value, dict):
            self.object(value, depth + 1)
        elif kind is list or kind is tuple:
            self.array(value, depth + 1)
        elif kind is _BadNumber:
            raise self.fail(f"number {value.text} is non-finite or outside "
                            f"+/-{MAX_SAFE_INT} (unsafe bound)")
        elif isinstance(value, str):  # StrEnum and other str subclasses encode as strings
            self.string(value, "string")
        elif isinstance(value, int):  # IntEnum and friends
            self.walk(int(value), depth)
        elif isinstance(value, float):
            self.walk(float(value), depth)
        else:
            raise self.fail(f"{type(value).__name__} is not a JSON value")

    def object(self, value: dict, depth: int) -> None:
        if depth > MAX_DEPTH:
            raise self.fail(f"nesting is deeper than {MAX_DEPTH} levels")
        if len(value) > MAX_OBJECT_KEYS:
            raise self.fail(f"object has {len(value)} keys; the limit is {MAX_OBJECT_KEYS}")
        if type(value) is _DuplicateKeys:
            raise self.fail(f"duplicate key {json.dumps(value.duplicate[:64])}")
        segments = self.segments
        good_keys = self.good_keys
        walk = self.walk
        for key, item in value.items():
            segments.append(key)
            if key not in good_keys:
                self.key(key)
            walk(item, depth)
            segments.pop()

    def key(self, key: Any) -> None:
        """Check one key name (its path is already on the stack)."""
        if not isinstance(key, str):
            raise self.fail(f"object key {key!r} is not a string")
        self.string(key, "key")
        reason = sensitive_reason(key, self.locators)
        if reason is None:
            self.good_keys.add(key)
        elif _pattern_path(self.segments) not in self.allow_paths:
            raise self.fail(f"key {reason}; this envelope never carries it")

    def array(self, value: list | tuple, depth: int) -> None:
        if depth > MAX_DEPTH:
            raise self.fail(f"nesting is deeper than {MAX_DEPTH} levels")
        if len(value) > MAX_ARRAY_ITEMS:
            raise self.fail(f"array has {len(value)} items; the limit is {MAX_ARRAY_ITEMS}")
        segments = self.segments
        segments.append(0)
        for index, item in enumerate(value):
            segments[-1] = index
            self.walk(item, depth)
        segments.pop()


def check_json(
    value: Any, *, allow_paths: frozenset[str] = frozenset(), locators: bool = False
) -> None:
    """Apply every generic ceiling and rejection rule to a JSON value (not the size)."""
    _Checker(allow_paths=allow_paths, locators=locators).walk(value, 0)


# --------------------------------------------------------------------------- encode / decode


class Envelope(Protocol):
    """A typed envelope: knows its JSON form, its allowlist and its reference rules."""

    SENSITIVE_KEY_ALLOW: ClassVar[frozenset[str]]
    STATE_ENVELOPE: ClassVar[bool]

    def to_json_obj(self) -> dict[str, Any]: ...

    def validate(self) -> None: ...


E = TypeVar("E")


def encode_canonical(
    obj: Any, *, allow_paths: frozenset[str] = frozenset(), locators: bool = False
) -> bytes:
    """Canonical UTF-8 JSON bytes for a typed envelope or a plain JSON value.

    A typed envelope is checked with its own allowlist and then read back
    through its schema, so the bytes are refused (EnvelopeError, with the path
    in the canonical output) whenever ``decode_checked`` would refuse them:
    a builder bug surfaces at the writer, not at every reader.
    """
    envelope = obj if hasattr(obj, "to_json_obj") else None
    if envelope is not None:
        allow_paths = getattr(envelope, "SENSITIVE_KEY_ALLOW", allow_paths)
        locators = getattr(envelope, "STATE_ENVELOPE", locators)
        obj = envelope.to_json_obj()
    check_json(obj, allow_paths=allow_paths, locators=locators)
    if envelope is not None and hasattr(type(envelope), "from_json_obj"):
        reread = type(envelope).from_json_obj(obj)
        if hasattr(reread, "validate"):
            reread.validate()
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False)
    data = text.encode("utf-8")
    if len(data) > MAX_ENCODED_BYTES:
        raise EnvelopeError(f"$: encoded envelope is {len(data)} bytes; "
                            f"the limit is {MAX_ENCODED_BYTES}")
    return data


def decode_json(
    data: bytes, *, allow_paths: frozenset[str] = frozenset(), locators: bool = False
) -> Any:
    """Parse bytes into a checked plain JSON value (every generic rule applied)."""
    if not isinstance(data, bytes | bytearray | memoryview):
        raise TypeError("decode_checked takes bytes")
    if len(data) > MAX_ENCODED_BYTES:
        raise EnvelopeError(f"$: encoded envelope is {len(data)} bytes; "
                            f"the limit is {MAX_ENCODED_BYTES}")
    try:
        text = bytes(data).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise EnvelopeError(f"$: not UTF-8 (byte {exc.start})") from None
    try:
        value = json.loads(text, object_pairs_hook=_pairs_hook, parse_float=_parse_float,
                           parse_int=_parse_int, parse_constant=_BadNumber)
    except RecursionError:
        raise EnvelopeError(f"$: nesting is deeper than {MAX_DEPTH} levels") from None
    except ValueError as exc:  # JSONDecodeError carries line and column
        raise EnvelopeError(f"$: invalid JSON: {exc}") from None
    check_json(value, allow_paths=allow_paths, locators=locators)
    return value


def decode_checked(data: bytes, *, schema: type[E] | None) -> E | Any:
    """Decode untrusted envelope bytes into ``schema`` (or a checked plain value if None).

    Raises EnvelopeError naming the JSON path of the first problem.
    """
    if schema is None:
        return decode_json(data)
    value = decode_json(
        data,
        allow_paths=getattr(schema, "SENSITIVE_KEY_ALLOW", frozenset()),
        locators=getattr(schema, "STATE_ENVELOPE", False),
    )
    envelope = schema.from_json_obj(value)  # type: ignore[attr-defined]
    if hasattr(envelope, "validate"):
        envelope.validate()
    return envelope


# --------------------------------------------------------------------------- typed fields


class Kind:
    """How one field is read from and written to JSON."""

    def load(self, value: Any, path: str) -> Any:
        raise NotImplementedError

    def dump(self, value: Any) -> Any:
        return value


_UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
NIL_UUID = "00000000-0000-0000-0000-000000000000"


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


class UuidKind(Kind):
    def load(self, value: Any, path: str) -> str:
        if not isinstance(value, str) or not _UUID_RE.fullmatch(value) or value == NIL_UUID:
            raise EnvelopeError(f"{path}: must be a non-nil lowercase UUID "
                                f"(got {_json_type(value)})")
        return value


class TextKind(Kind):
    """Bounded one-line text (terminal safety is already checked by the walker)."""

    def __init__(self, max_chars: int, *, allow_empty: bool = False) -> None:
        self.max_chars = max_chars
        self.allow_empty = allow_empty

    def load(self, value: Any, path: str) -> str:
        if not isinstance(value, str):
            raise EnvelopeError(f"{path}: must be a string (got {_json_type(value)})")
        if not value and not self.allow_empty:
            raise EnvelopeError(f"{path}: must not be empty")
        if len(value) > self.max_chars:
            raise EnvelopeError(f"{path}: must be at most {self.max_chars} characters "
                                f"(got {len(value)})")
        if UNSAFE_CHARS.search(value):
            raise EnvelopeError(f"{path}: contains a terminal control character")
        return value


class PatternKind(Kind):
    def __init__(self, pattern: str, description: str) -> None:
        self.regex = re.compile(pattern)
        self.description = description

    def load(self, value: Any, path: str) -> str:
        if not isinstance(value, str) or not self.regex.fullmatch(value):
            raise EnvelopeError(f"{path}: must be {self.description} (got {_json_type(value)})")
        return value


class EnumKind(Kind):
    def __init__(self, enum_type: type[StrEnum]) -> None:
        self.enum_type = enum_type
        self.allowed = ", ".join(member.value for member in enum_type)
        # A dict lookup: Enum.__call__ is the slowest step of decoding a big envelope.
        self.members: dict[str, StrEnum] = {member.value: member for member in enum_type}

    def load(self, value: Any, path: str) -> StrEnum:
        member = self.members.get(value) if type(value) is str else None
        if member is None:
            shown = value if isinstance(value, str) and len(value) <= 40 else _json_type(value)
            raise EnvelopeError(f"{path}: must be one of {self.allowed} (got {shown!r})")
        return member

    def dump(self, value: StrEnum | str) -> str:
        # Builders may pass the stored string; it must still be a member.
        if type(value) is self.enum_type:
            return value.value
        return self.enum_type(value).value


class IntKind(Kind):
    """A JSON integer in range: 5.0 is not an integer, and true is not 1."""

    def __init__(self, low: int = 0, high: int = MAX_SAFE_INT) -> None:
        self.low = low
        self.high = high

    def load(self, value: Any, path: str) -> int:
        if type(value) is not int or not self.low <= value <= self.high:
            shown = value if type(value) is int else _json_type(value)
            raise EnvelopeError(f"{path}: must be an integer from {self.low} to {self.high} "
                                f"(got {shown})")
        return value


class ConstKind(Kind):
    """A version number this reader understands; anything else is a newer or foreign writer."""

    def __init__(self, value: int) -> None:
        self.value = value

    def load(self, value: Any, path: str) -> int:
        if type(value) is not int or value != self.value:
            shown = value if type(value) is int else _json_type(value)
            raise EnvelopeError(f"{path}: must be {self.value} (got {shown}); a different "
                                "version needs a matching Switchboard")
        return value


class BoolKind(Kind):
    def load(self, value: Any, path: str) -> bool:
        if type(value) is not bool:
            raise EnvelopeError(f"{path}: must be true or false (got {_json_type(value)})")
        return value


class RecordKind(Kind):
    def __init__(self, record_type: type[Record]) -> None:
        self.record_type = record_type

    def load(self, value: Any, path: str) -> Record:
        return self.record_type.from_json_obj(value, path)

    def dump(self, value: Record) -> dict[str, Any]:
        return value.to_json_obj()


class ArrayKind(Kind):
    """An array of items; structural arrays are written sorted by the item's ``sort_key``."""

    def __init__(self, item: Kind, *, max_items: int = MAX_ARRAY_ITEMS,
                 ordered: bool = True) -> None:
        self.item = item
        self.max_items = max_items
        self.ordered = ordered

    def load(self, value: Any, path: str) -> tuple[Any, ...]:
        if not isinstance(value, list):
            raise EnvelopeError(f"{path}: must be an array (got {_json_type(value)})")
        if len(value) > self.max_items:
            raise EnvelopeError(f"{path}: must have at most {self.max_items} items "
                                f"(got {len(value)})")
        load = self.item.load
        return tuple(load(item, f"{path}[{index}]") for index, item in enumerate(value))

    def dump(self, value: tuple[Any, ...]) -> list[Any]:
        items: Sequence[Any] = value
        if self.ordered and items and getattr(items[0], "SORT_BY", ()):
            items = sorted(items, key=lambda item: item.sort_key())
        dump = self.item.dump
        return [dump(item) for item in items]


def jfield(kind: Kind, *, key: str | None = None, **kwargs: Any) -> Any:
    """A dataclass field with its JSON kind; its JSON key is the field's name in
    camelCase (``host_id`` -> ``hostId``) unless ``key`` names another."""
    return field(metadata={"json": (key, kind)}, **kwargs)


def camel_case(name: str) -> str:
    """``omitted_count`` -> ``omittedCount``: the JSON key a field is written under."""
    head, *rest = name.split("_")
    return head + "".join(word[:1].upper() + word[1:] for word in rest)


@dataclass(frozen=True)
class _Spec:
    name: str
    key: str
    kind: Kind
    required: bool
    default: Any
    dump: Any  # None when the JSON value is the attribute itself


@cache
def _specs(record_type: type) -> tuple[_Spec, ...]:
    specs = []
    for item in fields(record_type):
        if "json" not in item.metadata:
            continue
        key, kind = item.metadata["json"]
        key = key or camel_case(item.name)
        has_default = item.default is not MISSING or item.default_factory is not MISSING
        default = item.default_factory() if item.default_factory is not MISSING else item.default
        passthrough = type(kind).dump is Kind.dump
        specs.append(_Spec(item.name, key, kind,
                           required=not has_default or isinstance(kind, ConstKind),
                           default=default, dump=None if passthrough else kind.dump))
    return tuple(specs)


class Record:
    """Mixin for frozen dataclasses whose fields are declared with ``jfield``.

    A record that belongs to a structural array names the fields it sorts by in
    ``SORT_BY`` (a missing optional value sorts as ""); arrays of it are written
    in that order.

    Absent or null optional fields load as their default (a version field is
    always required); unset optional fields
    are omitted on dump; unknown keys are ignored (the walker has already
    proven them bounded and non-sensitive).
    """

    SORT_BY: ClassVar[tuple[str, ...]] = ()

    def sort_key(self) -> tuple[str, ...]:
        """The values of ``SORT_BY``, in order."""
        values = (getattr(self, name) for name in self.SORT_BY)
        return tuple("" if value is None else value for value in values)

    @classmethod
    def from_json_obj(cls, obj: Any, path: str = "$") -> Any:
        if not isinstance(obj, dict):
            raise EnvelopeError(f"{path}: must be an object (got {_json_type(obj)})")
        values: dict[str, Any] = {}
        # A class is hashable; mypy does not see it through @cache (python/mypy#11470).
        for spec in _specs(cls):  # type: ignore[arg-type]
            raw = obj.get(spec.key)
            if raw is None:
                if spec.required:
                    raise EnvelopeError(f"{path}.{spec.key}: is required")
                values[spec.name] = spec.default
                continue
            values[spec.name] = spec.kind.load(raw, f"{path}.{spec.key}")
        record = cls(**values)
        record.check(path)
        return record

    def check(self, path: str) -> None:
        """Cross-field rules of one record; override where the contract has them."""

    def to_json_obj(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        # A class is hashable; mypy does not see it through @cache (python/mypy#11470).
        for spec in _specs(type(self)):  # type: ignore[arg-type]
            value = getattr(self, spec.name)
            if value is not None:
                out[spec.key] = value if spec.dump is None else spec.dump(value)
        return out


def duplicates(values: Iterator[str] | list[str]) -> Iterator[tuple[int, str]]:
    """(index, value) for every value that repeats an earlier one."""
    seen: set[str] = set()
    for index, value in enumerate(values):
        if value in seen:
            yield index, value
        seen.add(value)
