"""Read-only looks at one pane for the broker CLI: capture and ping, one tmux process each.

Exact pane ids only (``%N``), on an explicit socket; nothing here types or moves.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from core.model.errors import SwitchboardError

MAX_LINES = 2000
_PANE = re.compile(r"^%[0-9]+$")


class ProbeFailed(SwitchboardError):
    code = "tmux_unavailable"


@dataclass(frozen=True)
class _Done:
    returncode: int
    stdout: str
    stderr: str


def _run(socket: str | None, *args: str) -> _Done:
    """One counted tmux process through the project's runner (never the default server)."""
    from core.tmux.errors import TmuxError
    from core.tmux.runner import TmuxRunner

    if socket is None:
        raise ProbeFailed("no tmux socket (pass --tmux-socket or set SWITCHBOARD_TMUX_SOCKET)")
    try:
        out = TmuxRunner(socket).run([tuple(args)], check=False)
    except TmuxError as exc:
        raise ProbeFailed(f"tmux did not answer on {socket}: {exc}") from None
    return _Done(out.returncode, "\n".join(out.stdout) + "\n", "\n".join(out.stderr))


def _exact(pane: str) -> str:
    if not _PANE.match(pane):
        raise ProbeFailed(f"{pane!r} is not an exact tmux pane id (like %7)", code="bad_request")
    return pane


def capture_lines(socket: str | None, pane: str, lines: int) -> list[str]:
    """The last ``lines`` non-trailing-blank lines of the pane (joined wrapped lines)."""
    if not 1 <= lines <= MAX_LINES:
        raise ProbeFailed(f"--lines must be between 1 and {MAX_LINES}", code="bad_request")
    done = _run(socket, "capture-pane", "-p", "-J", "-S", f"-{lines}", "-t", _exact(pane))
    if done.returncode != 0:
        raise ProbeFailed(f"cannot capture pane {pane}: {done.stderr.strip() or 'no such pane'}",
                          code="pane_not_found")
    text = done.stdout.rstrip("\n").splitlines()
    while text and not text[-1].strip():
        text.pop()
    return text[-lines:]


@dataclass(frozen=True)
class PaneProbe:
    alive: bool
    takes_input: bool
    command: str | None
    problem: str | None


def probe_pane(socket: str | None, pane: str) -> PaneProbe:
    done = _run(socket, "display-message", "-p", "-t", _exact(pane),
                "#{pane_id}\t#{pane_dead}\t#{pane_input_off}\t#{pane_current_command}")
    fields = done.stdout.strip().split("\t")
    if done.returncode != 0 or len(fields) != 4 or fields[0] != pane:
        return PaneProbe(False, False, None, "the pane no longer exists; restart the agent "
                                             "from the navigator")
    if fields[1] == "1":
        return PaneProbe(False, False, fields[3], "its program exited; restart the agent")
    return PaneProbe(True, fields[2] == "0", fields[3], None)
