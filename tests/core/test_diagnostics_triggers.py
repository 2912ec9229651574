"""The parser's word filter (``diagnostics._PARSERS``) skips only parsers that could not
have yielded: every known shape, and random mixes of their lines, give exactly what
running every parser gives."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from core.evidence import diagnostics
from core.evidence.diagnostics import Diagnostic, parse
from tests.core import test_diagnostics as shapes

SAMPLES = (shapes.PYTEST, shapes.TRACEBACK, shapes.GCC, shapes.TSC, shapes.ESLINT,
           shapes.RUFF_CONCISE, shapes.RUFF_FULL, shapes.MYPY, shapes.GO_BUILD,
           shapes.GO_TEST, shapes.CARGO)
LINES = sorted({line for sample in SAMPLES for line in sample.splitlines()})


def every_parser(output: str) -> list[Diagnostic]:
    """``parse`` without the filter: every parser over every line, same order and dedup."""
    lines = output.replace("\r\n", "\n").split("\n")
    seen: set[tuple[str, str | None, int | None, int | None]] = set()
    found: list[Diagnostic] = []
    for _words, parser in diagnostics._PARSERS:
        for d in parser(lines):
            key = (d.semantic_signature, d.file, d.line, d.column)
            if key not in seen and len(found) < diagnostics.MAX_DIAGNOSTICS:
                seen.add(key)
                found.append(d)
    return found


def test_each_known_shape_is_found_through_the_filter() -> None:
    for sample in SAMPLES:
        found = parse(sample)
        assert found, sample
        assert found == every_parser(sample)


def test_each_parser_yields_only_on_text_holding_one_of_its_words() -> None:
    for words, parser in diagnostics._PARSERS:
        for sample in SAMPLES:
            if list(parser(sample.splitlines())):
                assert any(word in sample for word in words), (words, sample)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(LINES) | st.text(max_size=40), max_size=30))
def test_random_mixes_of_shape_lines_parse_as_without_the_filter(lines: list[str]) -> None:
    output = "\n".join(lines)
    assert parse(output) == every_parser(output)
