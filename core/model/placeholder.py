"""What an empty main pane shows: a frame with no running agent, and no process.

Every view keeps one placeholder pane (shown, or parked for the next empty frame)
for as long as it lives. It prints its words and exits: the pane keeps
``remain-on-exit`` with an empty ``remain-on-exit-format``, so tmux goes on showing
the words with no process behind them (issue 38: a ``sleep`` per view was 1.8 MB
of every view's memory, 37 MB at 20 views). A dead placeholder is what every
placeholder is: the engine reuses it and nothing revives it. ``/bin/sh`` and its
``printf`` (octal escapes, POSIX) are on Linux and macOS alike.

``python -m core.model.placeholder`` prints the same words and exits too (a pane
made before this change still runs ``sleep``: it goes with its view).
"""

from __future__ import annotations

import sys

WORDS = "  No agent is running in this frame.\n\n  Press n in the navigator to start one.\n"
_CLEAR = "\x1b[2J\x1b[H"


def placeholder_argv() -> list[str]:
    """The placeholder pane's command: print the words, exit 0."""
    printed = (_CLEAR + WORDS).replace("\x1b", "\\033").replace("\n", "\\n")
    return ["/bin/sh", "-c", f"printf '{printed}'"]


def main() -> None:
    sys.stdout.write(_CLEAR + WORDS)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
