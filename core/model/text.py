"""Terminal-safe text: the one rule for text agents write, and the one way to show it.

Task titles, briefs, handoffs, message texts and member names are written by
agents, and an agent can be steered by whatever it reads. Such text ends up in
the person's terminal (CLI output, the navigator, tmux status lines, the inbox
stream pane), where a control character can move the cursor, set the
clipboard (OSC 52), clear the screen or reorder what is read (bidi overrides).

So the module holds both halves, used everywhere instead of local variants:

- **the rule at the boundary** (``refuse_unsafe``): where the engine, the
  broker, the config parser and the envelope checker accept text. A ``LINE``
  (titles, names) is one line of printable characters; a ``BLOCK`` (briefs,
  handoffs, messages) may also keep newlines and tabs. A refusal is one line
  naming the character and its position, and nothing is stored.
- **the escape at every output** (``shown`` / ``shown_block`` / ``sgr_only``):
  rows written before the rule existed stay readable and are printed with
  their control characters spelled out (``\\x1b``), never raw. Pane captures
  keep colours (SGR) and nothing else.
"""

from __future__ import annotations

import re
import unicodedata
from enum import StrEnum

from core.model.errors import SwitchboardError

# The other invisible format characters (Unicode category Cf, besides the bidi
# controls above): zero-width space/joiners, LRM/RLM, word joiner, the BOM, soft
# hyphen, invisible operators, interlinear annotation, tag characters (invisible
# ASCII, a known way to hide instructions from a reader). They print as nothing, so
# two names that look alike differ, or text a person reads hides text an agent
# reads; refused and spelled out like the bidi controls (issue 37.10). A test
# checks this covers every Cf character of the running Python. Emoji sequences
# joined by U+200D are refused too: a title or brief never needs one.
INVISIBLE_FORMAT = (
    "\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b-\u200f"
    "\u2060-\u2064\u206a-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd"
    "\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001"
    "\U000e0020-\U000e007f"
)
_INVISIBLE = re.compile(f"[{INVISIBLE_FORMAT}]")
# C0 controls (including TAB, LF, CR), DEL, C1 controls, lone surrogates (an
# undecodable byte kept by surrogateescape), bidi embeddings/overrides/isolates
# (Trojan-Source style reordering), the Unicode line/paragraph separators
# that some terminals treat as newlines, and the invisible format characters.
UNSAFE_CHARS = re.compile(
    "[\x00-\x1f\x7f-\x9f\ud800-\udfff\u202a-\u202e\u2066-\u2069\u2028\u2029"
    f"{INVISIBLE_FORMAT}]"
)
# The same set minus newline and tab: what a multi-line text may not hold.
UNSAFE_IN_BLOCK = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\u202a-\u202e\u2066-\u2069\u2028\u2029"
    f"{INVISIBLE_FORMAT}]"
)

_C0_NAMES = (
    "NUL", "SOH", "STX", "ETX", "EOT", "ENQ", "ACK", "BEL", "BS", "HT", "LF", "VT", "FF",
    "CR", "SO", "SI", "DLE", "DC1", "DC2", "DC3", "DC4", "NAK", "SYN", "ETB", "CAN", "EM",
    "SUB", "ESC", "FS", "GS", "RS", "US",
)
_C1_NAMES = (
    "PAD", "HOP", "BPH", "NBH", "IND", "NEL", "SSA", "ESA", "HTS", "HTJ", "VTS", "PLD",
    "PLU", "RI", "SS2", "SS3", "DCS", "PU1", "PU2", "STS", "CCH", "MW", "SPA", "EPA",
    "SOS", "SGCI", "SCI", "CSI", "ST", "OSC", "PM", "APC",
)
_OTHER_NAMES = {
    0x7F: "DEL", 0x202A: "LRE", 0x202B: "RLE", 0x202C: "PDF", 0x202D: "LRO",
    0x202E: "RLO", 0x2066: "LRI", 0x2067: "RLI", 0x2068: "FSI", 0x2069: "PDI",
    0x2028: "LINE SEPARATOR", 0x2029: "PARAGRAPH SEPARATOR",
}
_SHORT_ESCAPES = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}


class TextShape(StrEnum):
    """Which characters a text may hold besides printable ones."""

    LINE = "line"
    """Titles, names, ids shown in a row: one line, printable characters only."""
    BLOCK = "block"
    """Briefs, handoffs, messages, descriptions: newlines and tabs are kept."""


class UnsafeText(SwitchboardError):
    """Text that would reach a terminal as a control sequence; nothing was stored."""

    code = "unsafe_text"


def first_unsafe_char(value: str, shape: TextShape = TextShape.LINE) -> int | None:
    """Index of the first character the shape refuses, or None."""
    pattern = UNSAFE_CHARS if shape is TextShape.LINE else UNSAFE_IN_BLOCK
    match = pattern.search(value)
    return None if match is None else match.start()


def describe_char(ch: str) -> str:
    """``U+001B (ESC)``: the code point and, where it has one, its control name."""
    code = ord(ch)
    if code < 0x20:
        name: str | None = _C0_NAMES[code]
    elif 0x80 <= code <= 0x9F:
        name = _C1_NAMES[code - 0x80]
    elif 0xD800 <= code <= 0xDFFF:
        name = "an undecodable byte" if code >= 0xDC80 else "a lone surrogate"
    else:
        name = _OTHER_NAMES.get(code) or (unicodedata.name(ch, None)
                                          if _INVISIBLE.match(ch) else None)
    return f"U+{code:04X}" + (f" ({name})" if name else "")


def unsafe_reason(what: str, value: str, shape: TextShape) -> str | None:
    """The one-line refusal for ``value``, or None when the shape accepts it.

    ``title holds a control character U+001B (ESC) at position 5; use printable
    text on one line`` (positions count characters from 1, as a person does).
    """
    index = first_unsafe_char(value, shape)
    if index is None:
        return None
    advice = ("use printable text on one line" if shape is TextShape.LINE
              else "use printable text (newlines and tabs are kept)")
    kind = ("an invisible format character" if _INVISIBLE.match(value[index])
            else "a control character")
    return (f"{what} holds {kind} {describe_char(value[index])} "
            f"at position {index + 1}; {advice}")


def refuse_unsafe(what: str, value: str | None, shape: TextShape) -> None:
    """Raise ``UnsafeText`` (nothing stored) when ``value`` breaks the rule for ``shape``."""
    if value is None:
        return
    reason = unsafe_reason(what, value, shape)
    if reason is not None:
        raise UnsafeText(reason + " (nothing was changed)")


def _escape(ch: str) -> str:
    short = _SHORT_ESCAPES.get(ch)
    if short is not None:
        return short
    code = ord(ch)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    # Beyond the BMP (tag characters): eight digits, as Python spells it; four digits
    # and the rest (``\\ue0041``) would read as another character and a digit.
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def shown(value: object) -> str:
    """``value`` as one printable line: every unsafe character spelled out (``\\x1b``).

    For anything from data printed where one row is one record (listings,
    titles, names, error messages that echo input): a newline cannot forge a
    row and an escape sequence cannot reach the terminal.
    """
    text = value if isinstance(value, str) else str(value)
    if UNSAFE_CHARS.search(text) is None:
        return text
    return UNSAFE_CHARS.sub(lambda m: _escape(m.group()), text)


def shown_block(value: object) -> str:
    """``value`` with newlines and tabs kept and every other unsafe character spelled out.

    For multi-line text printed as such (a brief, a message body, a whole
    command output) and the last pass of every text the CLI writes.
    """
    text = value if isinstance(value, str) else str(value)
    if UNSAFE_IN_BLOCK.search(text) is None:
        return text
    return UNSAFE_IN_BLOCK.sub(lambda m: _escape(m.group()), text)


# ESC [ params m, where params are digits, ';' and ':' (ISO 8613-6 colour forms).
_SGR = re.compile(r"\x1b\[[0-9;:]*m")


def sgr_only(captured: str) -> str:
    """A pane capture (``capture-pane -e``) with its colours and nothing else.

    Select Graphic Rendition sequences (``ESC [ ... m``: colour, bold, reset)
    are kept as they are; every other control character, including the ESC
    of any other sequence (cursor moves, OSC titles and clipboard, DCS), is
    spelled out as ``shown`` does, so what a pane printed can recolour the
    person's view but never drive their terminal. Newlines and tabs are kept.
    """
    out: list[str] = []
    position = 0
    for match in _SGR.finditer(captured):
        out.append(shown_block(captured[position:match.start()]))
        out.append(match.group())
        position = match.end()
    out.append(shown_block(captured[position:]))
    return "".join(out)


def strip_sgr(text: str) -> str:
    """``text`` without its SGR sequences (what ``sgr_only`` kept), for plain output."""
    return _SGR.sub("", text)


def printable_only(value: str) -> str:
    """``value`` with every unsafe character dropped, for a payload inside an escape
    sequence of our own (the OSC 9/777 notification text), where a spelled-out
    escape would be noise and a raw one could end the sequence early."""
    return UNSAFE_CHARS.sub("", value)


_NOT_TYPABLE = re.compile(r"[^\x20-\x26\x28-\x7e]")  # printable ASCII except the quote


def typed_name(value: str, *, max_chars: int = 40) -> str:
    """A name inside a line Switchboard types into an agent's pane: spelled out as
    ``shown`` does, then printable ASCII only and no ``'`` (each other character is
    ``?``), so it fits one quoted token of a guarded tmux command and no control
    character can reach the agent's input."""
    return _NOT_TYPABLE.sub("?", shown(value))[:max_chars]
