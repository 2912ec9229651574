"""``member capture`` on a real pane: colours survive, nothing else an agent printed does."""

from __future__ import annotations

import re
from pathlib import Path

from core.tmux.probe import capture_lines
from tests.integration.journey_env import tmux
from tests.waiting import retry_until

PRINTED = ("\\033[1;31mred\\033[0m plain \\033]52;c;ZXZpbA==\\007"
           "\\033]0;title\\007 \\302\\233 \\342\\200\\256 done")


def test_a_capture_keeps_sgr_and_spells_out_the_rest(tmux_socket: Path) -> None:
    tmux(tmux_socket, "-f", "/dev/null", "new-session", "-d", "-s", "cap", "-x", "120",
         "-y", "20", f"printf '{PRINTED}\\n'; exec sleep 600")
    pane = tmux(tmux_socket, "list-panes", "-a", "-F", "#{pane_id}").split()[0]
    assert retry_until(lambda: "done" in tmux(tmux_socket, "capture-pane", "-p", "-t", pane),
                       10)

    coloured = [line for line in capture_lines(str(tmux_socket), pane, 10, colours=True)
                if "done" in line]
    plain = [line for line in capture_lines(str(tmux_socket), pane, 10) if "done" in line]
    assert len(coloured) == 1 and len(plain) == 1
    # every ESC left starts an SGR sequence; the red survived
    assert re.fullmatch(r"(?:[^\x1b\x07\x80-\x9f\u202e]|\x1b\[[0-9;:]*m)*", coloured[0])
    assert "\x1b[1m\x1b[31mred" in coloured[0] or "\x1b[1;31mred" in coloured[0]
    assert "\\u202e done" in coloured[0]  # a bidi override tmux kept, spelled out
    assert "red plain" in plain[0] and "\x1b" not in plain[0]
