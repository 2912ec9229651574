"""Text-size limits of the registry, checked before any SQL with a plain sentence.

The schema's CHECK constraints stay as the last line of defence; these are
the same numbers (tests/storage/test_hardening_limits.py reads them back out
of the DDL), so the person hears "brief is 102400 characters; the limit is
65536: shorten it" instead of SQLite's constraint text. Lengths are counted
in characters, as SQLite's ``length()`` counts them for TEXT.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from core.model.errors import SwitchboardError


@dataclass(frozen=True)
class TextLimit:
    """Smallest and largest length a column accepts, in characters."""

    low: int
    high: int


TEXT_LIMITS: dict[str, TextLimit] = {
    "title": TextLimit(1, 200),
    "brief": TextLimit(1, 65536),
    "summary": TextLimit(1, 65536),
    "next_action": TextLimit(0, 65536),
    "purpose": TextLimit(0, 500),
    "name": TextLimit(0, 200),
}


class TextTooLong(SwitchboardError):
    code = "text_too_long"


def check_text(field: str, value: str | None) -> None:
    """Refuse a value the schema would refuse, naming its size and the limit."""
    if value is None:
        return
    limit = TEXT_LIMITS[field]
    size = len(value)
    label = field.replace("_", " ")
    if size > limit.high:
        raise TextTooLong(f"{label} is {size} characters; the limit is {limit.high}: "
                          "shorten it (nothing was changed)")
    if size < limit.low:
        raise SwitchboardError(f"{label} must not be empty (nothing was changed)",
                               code="bad_request")


_LENGTH_RULE = re.compile(
    r"^(?:(?P<col>\w+) IS NULL OR )?length\((?P<col2>\w+)\) "
    r"(?:BETWEEN (?P<low>\d+) AND (?P<high>\d+)|<= (?P<max>\d+)|= (?P<exact>\d+))$")
_IN_RULE = re.compile(r"^(?:(?P<col>\w+) IS NULL OR )?(?P<col2>\w+) IN \((?P<values>[^)]*)\)$")


def describe_check(rule: str) -> str:
    """A sentence for the text SQLite puts after ``CHECK constraint failed:``.

    A named constraint reads as its sentence (``storage.refusals``); the common
    unnamed shapes (a length range, an enum list) say
    which column and what it accepts; anything else quotes the rule.
    """
    rule = " ".join(rule.split())
    match = _LENGTH_RULE.match(rule)
    if match:
        label = match.group("col2").replace("_", " ")
        if match.group("high"):
            return (f"{label} must be {match.group('low')} to {match.group('high')} "
                    "characters long")
        if match.group("max"):
            return f"{label} must be at most {match.group('max')} characters long"
        return f"{label} must be exactly {match.group('exact')} characters long"
    match = _IN_RULE.match(rule)
    if match:
        values = ", ".join(v.strip().strip("'") for v in match.group("values").split(","))
        return f"{match.group('col2').replace('_', ' ')} must be one of: {values}"
    if re.fullmatch(r"\w+", rule):
        from storage.refusals import REFUSAL_WORDS, refusal_words

        if rule in REFUSAL_WORDS:
            return refusal_words(rule)
        if rule.endswith("_closed"):  # session/project files: <table>_<column>_closed
            return "a value is outside its allowed set"
        return refusal_words(rule)
    return f"the value breaks the rule {rule}"
