"""Is an agent's pane waiting on one of its CLI's own dialogs? Read from the screen.

Hooks say when a CLI asks for a permission or a question; they say nothing about
the CLI's own screens: start-up notices ("Make auto mode your default permission
mode?", Claude Code 2.1.300+), folder trust, onboarding, login expiry, update and
"Enter to continue" notices. A pane showing one waits for the person, and a line
typed into it would answer it (2.1.300 turned a typed prompt plus Enter into
"Yes" and rewrote the person's settings). So when a launch or a control turn does
not progress, one bounded read of the pane's last lines is parsed here.

What counts as a dialog, in the CLIs' full-screen UIs:

* a selection list: an indented cursor line (``  ❯ Yes, ...`` in Claude Code,
  ``› 1. Yes`` in Codex, ``● 1. Trust folder`` in Gemini CLI's box) with at least
  one more option line under it. The prompt box where a person types is not
  indented (``❯ `` at column 0 between two rules in Claude Code 2.1.3xx, ``│ > ``
  in older releases; Gemini CLI's `` >`` has no option line under it), so it
  never matches;
* a key hint that only dialogs show: "Enter to continue", "Enter to confirm",
  "Press Enter", "Esc to cancel" (the last one also ends a permission prompt,
  which its hook already reports; Gemini CLI's working line "(esc to cancel, 2s)"
  is a turn, not a dialog).

The dialog's words are its title: the first line of text under the last rule (or a
box's top edge) above the cursor or hint, cleaned to printable characters and cut
to one line.
Nothing here types or decides; it only says what the screen shows.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

DIALOG_LINES = 40
"""How much of the pane's bottom one read takes (a dialog sits at the bottom)."""
MAX_TITLE_CHARS = 160

_CURSOR = re.compile(r"^[ │]*\s[❯›>●]\s+(?:\d+\.\s+)?\S")
_OPTION = re.compile(r"^[ │]*\s{2,}(?:\d+\.\s+)?\S")
_HINTS = ("enter to continue", "enter to confirm", "press enter", "esc to cancel",
          "esc to go back", "enter to select")
_RULE = re.compile(r"^\s*╭?[─━═╌-]{8,}╮?\s*$")
_INPUT = re.compile(r"^ >\s")
"""Gemini CLI's input line (" >   Type your message", " > text"): drawn below a dialog
only once it was answered. Its screen is not an alternate screen, so an answered dialog
stays in view above it (the trust question, then "restarting to apply the trust
changes", then the prompt)."""
_SPINNER = re.compile(r"\(esc to cancel, [0-9hms ]+\)", re.I)
"""Gemini CLI's working line ("Thinking... (esc to cancel, 2s)"): a turn, not a dialog."""
_BOX = re.compile(r"^[\s│╭╰─╮╯]*$")
_UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


@dataclass(frozen=True)
class PaneDialog:
    """A dialog on screen: its words, and the option the cursor is on (if a list)."""

    title: str
    selected: str | None = None

    @property
    def words(self) -> str:
        """One line for a badge or a recovery."""
        if self.selected:
            return f"{self.title} (cursor on: {self.selected})"
        return self.title


def find_dialog(lines: Sequence[str]) -> PaneDialog | None:
    """The dialog the bottom of the screen shows, or None when it shows none."""
    bottom = [line.rstrip() for line in lines]
    while bottom and not bottom[-1].strip():
        bottom.pop()  # a screen's blank bottom rows first, then its last lines
    bottom = bottom[-DIALOG_LINES:]
    anchor, selected = _anchor(bottom)
    if anchor is None or any(_INPUT.match(line) for line in bottom[anchor + 1:]):
        return None
    return PaneDialog(title=_title(bottom, anchor), selected=selected)


def _anchor(bottom: list[str]) -> tuple[int | None, str | None]:
    """Where the dialog's list or key hint is, and the selected option's text."""
    for index in range(len(bottom) - 1, -1, -1):
        line = bottom[index]
        if _CURSOR.match(line) and _has_option_below(bottom, index):
            return index, _clean(re.sub(r"^[ │]*\s[❯›>●]\s+", "", line))
    for index in range(len(bottom) - 1, -1, -1):
        lowered = bottom[index].lower()
        if any(hint in lowered for hint in _HINTS) and not _SPINNER.search(lowered):
            return index, None
    return None, None


def _has_option_below(bottom: list[str], index: int) -> bool:
    for line in bottom[index + 1:index + 4]:
        if _OPTION.match(line) and not _RULE.match(line):
            return True
    return False


def _title(bottom: list[str], anchor: int) -> str:
    start = 0
    for index in range(anchor - 1, -1, -1):
        if _RULE.match(bottom[index]):
            start = index + 1
            break
    for line in bottom[start:anchor + 1]:
        text = _clean(line)
        if text and not _BOX.match(line):
            return text
    return _clean(bottom[anchor]) or "a dialog of the CLI"


def _clean(line: str) -> str:
    text = _UNPRINTABLE.sub("", line).strip(" │").strip()
    return text[:MAX_TITLE_CHARS]
