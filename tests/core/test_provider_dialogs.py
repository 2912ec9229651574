"""Dialogs read from real CLI screens: found with their words, and idle prompts are not.

The screens in ``tests/fixtures/screens`` were captured from the real CLIs in
tmux (``capture-pane -p``): Claude Code 2.1.332's start-up "Make auto mode your
default permission mode?" and its permission prompt, and the idle prompt boxes
of 2.1.197 and 2.1.332 (manual mode, and auto mode after a finished turn); Gemini CLI
0.61.0's folder-trust and permission questions, its prompt and a working turn.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from core.providers.dialogs import find_dialog
from core.runtime.dialogs import dialog_explanation

SCREENS = Path(__file__).resolve().parents[1] / "fixtures" / "screens"


def lines(name: str) -> list[str]:
    return (SCREENS / name).read_text(encoding="utf-8").splitlines()


@pytest.mark.parametrize(("name", "title", "selected"), [
    ("claude-2.1.332-auto-mode-nudge.txt", "Make auto mode your default permission mode?",
     "Yes, set auto mode as my default permission mode"),
    # a whole 50-row screen, blank rows at its bottom: the dialog's top is still read
    ("claude-2.1.300-auto-mode-nudge-118x50.txt", "Make auto mode your default permission mode?",
     "Yes, set auto mode as my default permission mode"),
    ("claude-2.1.332-permission.txt", "Do you want to proceed?", "1. Yes"),
    # Gemini CLI 0.61.0: the start-up folder trust question (no hook fires for it) and
    # its permission question, each in a box with a "●" cursor
    ("gemini-0.61.0-trust.txt", "Do you trust the files in this folder?",
     "1. Trust folder (demo)"),
    ("gemini-0.61.0-permission.txt", "? Shell  touch standin-tooltest.txt", "1. Allow once"),
])
def test_a_dialog_is_found_with_its_words(name: str, title: str, selected: str) -> None:
    dialog = find_dialog(lines(name))
    assert dialog is not None
    assert (dialog.title, dialog.selected) == (title, selected)
    explained = dialog_explanation(dialog.words)
    assert title in explained and "never types" in explained


@pytest.mark.parametrize("name", [
    "claude-2.1.197-idle.txt", "claude-2.1.332-idle-manual.txt",
    "claude-2.1.332-idle-auto-after-turn.txt",
    # Gemini CLI 0.61.0's prompt, and its working line "(esc to cancel, 2s)"
    "gemini-0.61.0-idle.txt", "gemini-0.61.0-working.txt",
    # its answered trust question stays in view above the restarted CLI's prompt (no
    # alternate screen): composed of the two captured screens, as the pane shows them
    "gemini-0.61.0-trust-answered.txt",
])
def test_an_idle_prompt_is_no_dialog(name: str) -> None:
    assert find_dialog(lines(name)) is None


def test_a_continue_notice_is_a_dialog_and_its_title_is_one_clean_line() -> None:
    screen = ["some output", "─" * 40, "  We're changing auto mode \x1b[31mfor gateways",
              "  More words.", "", "  Enter to continue · Esc to cancel"]
    dialog = find_dialog(screen)
    assert dialog is not None and dialog.selected is None
    assert dialog.title == "We're changing auto mode [31mfor gateways"
    assert "\x1b" not in dialog.words
