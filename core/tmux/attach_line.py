"""The attach command Switchboard prints for a person to paste.

A client started from inside another tmux carries ``TMUX``; tmux refuses it as
"nested" when its tty is one a pane of the target server was given, which the
freed ptys of dead kept panes make likely (decisions: "Dead panes kept on screen
and tmux's nested check"). Switchboard's own attaches drop ``TMUX`` and
``TMUX_PANE``; the printed line does the same, so pasting it behaves like them.
``env -u`` is POSIX-wide enough: GNU and BSD (macOS) ``env`` both take it.
"""

from __future__ import annotations

import shlex


def attach_line(socket_path: str, target: str) -> str:
    """``env -u TMUX -u TMUX_PANE tmux -S SOCKET attach -t TARGET``, quoted for a shell
    (a home path may hold spaces, quotes or ``$(...)``)."""
    return shlex.join(["env", "-u", "TMUX", "-u", "TMUX_PANE",
                       "tmux", "-S", socket_path, "attach", "-t", target])
