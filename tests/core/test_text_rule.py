"""The one rule for agents' text and the one way to show it (core.model.text)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.model.text import (
    UNSAFE_CHARS,
    TextShape,
    UnsafeText,
    describe_char,
    refuse_unsafe,
    sgr_only,
    shown,
    shown_block,
    strip_sgr,
    typed_name,
)

_RAW = set("\x1b\x07\x7f\r") | {chr(c) for c in range(0x80, 0xA0)} | set("\u202e\u2066")


def test_a_title_with_esc_is_refused_in_one_line_naming_the_character() -> None:
    with pytest.raises(UnsafeText) as refused:
        refuse_unsafe("title", "evil\x1b]52;c;ZXZpbA==\x07X", TextShape.LINE)
    assert refused.value.message == (
        "title holds a control character U+001B (ESC) at position 5; use printable text "
        "on one line (nothing was changed)")
    assert "\n" not in refused.value.message and refused.value.code == "unsafe_text"


@pytest.mark.parametrize(("value", "named"), [
    ("two\nlines", "U+000A (LF) at position 4"),
    ("tab\there", "U+0009 (HT) at position 4"),
    ("a\u009bb", "U+009B (CSI) at position 2"),
    ("\u202eabc", "U+202E (RLO) at position 1"),
    ("x\x7f", "U+007F (DEL) at position 2"),
    ("bad\udcff", "U+DCFF (an undecodable byte) at position 4"),
])
def test_a_line_refuses_every_control(value: str, named: str) -> None:
    with pytest.raises(UnsafeText, match=re.escape(named)):
        refuse_unsafe("member name", value, TextShape.LINE)


def test_a_block_keeps_newlines_and_tabs_only() -> None:
    refuse_unsafe("brief", "line one\n\tindented\nline three", TextShape.BLOCK)
    refuse_unsafe("brief", None, TextShape.BLOCK)
    for bad in ("\x1b[31m", "\r", "\x07", "\u2028", "\x00"):
        with pytest.raises(UnsafeText, match="use printable text \\(newlines and tabs"):
            refuse_unsafe("brief", f"ok {bad}", TextShape.BLOCK)


def test_describe_char_names_controls() -> None:
    assert describe_char("\x1b") == "U+001B (ESC)"
    assert describe_char("\x9d") == "U+009D (OSC)"
    assert describe_char("\u2069") == "U+2069 (PDI)"
    assert describe_char("é") == "U+00E9"


def test_shown_spells_out_and_keeps_printable_text() -> None:
    assert shown("plain — ünïcode") == "plain — ünïcode"
    assert shown("a\x1b[2Jb\nc\td\re") == "a\\x1b[2Jb\\nc\\td\\re"
    assert shown("\u202eabc\u009b") == "\\u202eabc\\x9b"
    assert shown_block("one\n\ttwo\x1b]0;t\x07") == "one\n\ttwo\\x1b]0;t\\x07"
    assert shown(7) == "7"


@given(st.text())
def test_shown_never_leaves_an_unsafe_character(value: str) -> None:
    assert UNSAFE_CHARS.search(shown(value)) is None
    assert not set(shown_block(value)) & _RAW


def test_sgr_only_keeps_colours_and_nothing_else() -> None:
    captured = ("\x1b[1;31mred\x1b[0m \x1b[38:5:208mx\x1b[m"
                "\x1b]52;c;ZXZpbA==\x07\x1b[2J\x1b[Hmoved\x1bP+q\x1b\\\u009b31m")
    kept = sgr_only(captured)
    assert kept.startswith("\x1b[1;31mred\x1b[0m \x1b[38:5:208mx\x1b[m")
    assert "\\x1b]52;c;ZXZpbA==\\x07\\x1b[2J\\x1b[Hmoved\\x1bP+q\\x1b\\\\x9b31m" in kept
    assert strip_sgr(kept).count("\x1b") == 0


@given(st.text(alphabet=st.sampled_from(list("\x1b[;:m0123456789]Pa\x07\x9b\n"))))
def test_sgr_only_leaves_only_sgr_escapes(value: str) -> None:
    kept = sgr_only(value)
    assert "\x1b" not in strip_sgr(kept)
    assert not set(strip_sgr(kept)) & _RAW


def test_a_typed_name_is_quote_free_printable_ascii() -> None:
    assert typed_name("Fix the bug") == "Fix the bug"
    assert typed_name("evil';\n\x1b[31mnäme") == "evil?;\\n\\x1b[31mn?me"
    assert len(typed_name("x" * 100)) == 40
