"""Terminal-safe text: the one definition of a character Switchboard refuses to show.

Config values and envelope strings end up in tmux status lines, Textual
widgets and shell argv. A control character there can move the cursor, change
the title or hide text, so both the config parser and the envelope checker
reject the same set, and producers use ``clean_text`` to make free text safe
before it enters an envelope.
"""

from __future__ import annotations

import re

# C0 controls (including TAB, LF, CR), DEL, C1 controls, lone surrogates,
# bidi embeddings/overrides/isolates (Trojan-Source style reordering) and the
# Unicode line/paragraph separators that some terminals treat as newlines.
UNSAFE_CHARS = re.compile(
    "[\x00-\x1f\x7f-\x9f\ud800-\udfff\u202a-\u202e\u2066-\u2069\u2028\u2029]"
)


def first_unsafe_char(value: str) -> int | None:
    """Index of the first character Switchboard refuses to display, or None."""
    match = UNSAFE_CHARS.search(value)
    return None if match is None else match.start()


def describe_char(ch: str) -> str:
    """A printable name for an unsafe character, for error messages."""
    return f"U+{ord(ch):04X}"


def clean_text(value: str, *, max_chars: int) -> str:
    """Replace unsafe characters with a space and cut to ``max_chars`` (with an ellipsis).

    For producers of envelopes: user-authored titles may contain anything, the
    envelope may not.
    """
    cleaned = UNSAFE_CHARS.sub(" ", value)
    if len(cleaned) > max_chars:
        cleaned = cleaned[: max(0, max_chars - 1)] + "…"
    return cleaned
