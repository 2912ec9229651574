"""Launch gates: a staged provider pane waits on a `tmux wait-for` channel before exec.

A provider pane is created parked in the holding session, so it must not
start the agent (which would draw for a pane nobody sees, at the wrong size)
until it is swapped into a view's main. Its command line therefore blocks on
``tmux -S SOCKET wait-for GATE`` and only then execs the provider argv; the
swap (or a re-read of a pane already in main) signals the gate in the same
tmux process. The line is a shell command, so every word is shell-quoted here,
the one place it is built.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from core.tmux.runner import TmuxCommand

GATE_PREFIX = "sb-launch-"


def gate_name(launch_id: str) -> str:
    """The `tmux wait-for` channel a staged provider pane waits on before exec."""
    return f"{GATE_PREFIX}{launch_id}"


def gated_exec_line(socket_path: str, gate: str, argv: Sequence[str]) -> str:
    """`sh -c` line of a staged pane: wait for ``gate`` on this server, then exec ``argv``."""
    return (f"tmux -S {shlex.quote(socket_path)} wait-for {gate} && exec "
            + shlex.join(argv))


def open_gate_command(gate: str) -> TmuxCommand:
    """Signal ``gate`` (inside a batch): the waiting pane execs its provider."""
    return ("wait-for", "-S", gate)
