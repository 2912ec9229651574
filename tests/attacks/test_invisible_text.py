"""Invisible format characters are treated like the bidi controls (issue 37.10).

U+202E (RLO) was refused while U+200B (zero width space), U+200D (zero width joiner)
and U+FEFF (BOM) were accepted and printed raw: an agent could name a task so that
it looks exactly like another one, or hide text a person cannot see. Every Unicode
format character (category Cf) is now refused at the boundary in one line naming
it, and spelled out (``\\u200b``) wherever older rows are printed.
"""

from __future__ import annotations

import unicodedata

import pytest

from core.model.text import (
    TextShape,
    UnsafeText,
    first_unsafe_char,
    printable_only,
    refuse_unsafe,
    shown,
    shown_block,
)
from tests.core.test_cli import cli  # noqa: F401 - the fixture

INVISIBLE = {"\u200b": "U+200B (ZERO WIDTH SPACE)", "\u200d": "U+200D (ZERO WIDTH JOINER)",
             "\ufeff": "U+FEFF (ZERO WIDTH NO-BREAK SPACE)", "\u2060": "U+2060 (WORD JOINER)",
             "\U000e0041": "U+E0041 (TAG LATIN CAPITAL LETTER A)"}


def test_a_task_titled_with_an_invisible_character_is_refused_like_rlo(cli) -> None:  # noqa: F811
    """Through the real CLI and engine: the title that looks like "deploy" is refused in
    one line, as the RLO one is, and no frame is added."""
    route = cli("project", "enter", "alpha", "--json")
    before = cli("frame", "list", "--project", "alpha", "--json")
    for char, named in {**INVISIBLE, "\u202e": "U+202E (RLO)"}.items():
        said = cli("frame", "push", route["frame_id"], "--title", f"deploy{char}",
                   "--brief", "the brief", expect=2)
        kind = "a control character" if char == "\u202e" else "an invisible format character"
        assert said == (f"switchboard: unsafe_text: title holds {kind} {named} at position 7; "
                        "use printable text on one line (nothing was changed)\n")
        said = cli("frame", "push", route["frame_id"], "--title", "deploy",
                   "--brief", f"hidden{char}text", expect=2)
        assert said.count("\n") == 1 and named in said
    assert cli("frame", "list", "--project", "alpha", "--json") == before


@pytest.mark.parametrize("char", sorted(INVISIBLE))
def test_invisible_characters_are_refused_and_never_printed_raw(char: str) -> None:
    for shape in TextShape:
        with pytest.raises(UnsafeText, match="invisible format character"):
            refuse_unsafe("member name", f"ops{char}", shape)
    assert char not in shown(f"a{char}b") and char not in shown_block(f"a{char}\nb")
    assert shown(f"a{char}b") == "a" + char.encode("unicode_escape").decode() + "b"
    assert printable_only(f"a{char}b") == "ab"


def test_every_format_character_of_this_python_is_covered() -> None:
    """The list in ``core.model.text`` is spelled out for speed; it must cover every Cf
    character the running Python's Unicode database knows."""
    missed = [f"U+{code:04X}" for code in range(0x110000)
              if unicodedata.category(chr(code)) == "Cf" and first_unsafe_char(chr(code))
              is None]
    assert missed == []
    assert first_unsafe_char("café 日本 🙂\ufe0f — naïve", TextShape.LINE) is None
