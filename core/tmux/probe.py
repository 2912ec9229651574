"""Read-only looks at one pane for the broker CLI: capture and ping, one tmux process each.

Exact pane ids only (``%N``), on an explicit socket; nothing here types or moves.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from core.model.errors import SwitchboardError

if TYPE_CHECKING:
    from core.tmux.identity import ServerIdentity

MAX_LINES = 2000
_PANE = re.compile(r"^%[0-9]+$")


class ProbeFailed(SwitchboardError):
    code = "tmux_unavailable"


@dataclass(frozen=True)
class _Done:
    returncode: int
    stdout: str
    stderr: str


def _run(socket: str | None, *args: str, server: ServerIdentity | None = None) -> _Done:
    """One counted tmux process through the project's runner (never the default server).

    ``server``: the registry's record of the pane's server; the command then runs
    only inside that exact server process (a restarted server reissues pane ids)."""
    from core.tmux.errors import TmuxError
    from core.tmux.identity import identity_guard, is_identity_failure, same_socket
    from core.tmux.runner import TmuxCommand, TmuxRunner

    if socket is None:
        raise ProbeFailed("no tmux socket: run `switchboard init` (the config names the "
                          "views' server) or pass --tmux-socket")
    if server is not None and not same_socket(socket, server.socket_path):
        raise ProbeFailed(f"the pane is on the tmux server {server.socket_path} (as the "
                          f"registry recorded it), not on {socket}")
    batch: list[TmuxCommand] = [tuple(args)]
    if server is not None:
        batch.insert(0, identity_guard(server))
    try:
        out = TmuxRunner(socket).run(batch, check=False)
    except TmuxError as exc:
        raise ProbeFailed(f"tmux did not answer on {socket}: {exc}") from None
    if server is not None and is_identity_failure(out.stderr):
        raise ProbeFailed(f"the tmux server on {socket} restarted since the agent's pane was "
                          "recorded; its pane id now names nothing of ours",
                          code="pane_not_found")
    return _Done(out.returncode, "\n".join(out.stdout) + "\n", "\n".join(out.stderr))


def _exact(pane: str) -> str:
    if not _PANE.match(pane):
        raise ProbeFailed(f"{pane!r} is not an exact tmux pane id (like %7)", code="bad_request")
    return pane


def capture_lines(socket: str | None, pane: str, lines: int,
                  server: ServerIdentity | None = None, *, colours: bool = False) -> list[str]:
    """The last ``lines`` non-trailing-blank lines of the pane (joined wrapped lines).

    ``colours``: the pane's SGR colours are kept (``capture-pane -e``) and nothing
    else; every other control character is spelled out (``core.model.text.sgr_only``).
    """
    from core.model.text import sgr_only, strip_sgr

    if not 1 <= lines <= MAX_LINES:
        raise ProbeFailed(f"--lines must be between 1 and {MAX_LINES}", code="bad_request")
    done = _run(socket, "capture-pane", "-p", *(["-e"] if colours else []), "-J",
                "-S", f"-{lines}", "-t", _exact(pane), server=server)
    if done.returncode != 0:
        raise ProbeFailed(f"cannot capture pane {pane}: {done.stderr.strip() or 'no such pane'}",
                          code="pane_not_found")
    text = done.stdout.rstrip("\n").splitlines()
    if colours:
        text = [sgr_only(line) for line in text]
    while text and not strip_sgr(text[-1]).strip():
        text.pop()
    return text[-lines:]


@dataclass(frozen=True)
class PaneProbe:
    alive: bool
    takes_input: bool
    command: str | None
    problem: str | None


def probe_pane(socket: str | None, pane: str, server: ServerIdentity | None = None) -> PaneProbe:
    done = _run(socket, "display-message", "-p", "-t", _exact(pane),
                "#{pane_id}\t#{pane_dead}\t#{pane_input_off}\t#{pane_current_command}",
                server=server)
    fields = done.stdout.strip().split("\t")
    if done.returncode != 0 or len(fields) != 4 or fields[0] != pane:
        return PaneProbe(False, False, None, "the pane no longer exists; restart the agent "
                                             "from the navigator")
    if fields[1] == "1":
        return PaneProbe(False, False, fields[3], "its program exited; restart the agent")
    return PaneProbe(True, fields[2] == "0", fields[3], None)
