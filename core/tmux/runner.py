"""One tmux process per batch, counted.

Every tmux call of the adapter goes through `TmuxRunner.run`, which joins a
list of commands with `;` separators into a single `tmux -S SOCKET ...`
process. The counter is how tests and the benchmark prove "at most 3 tmux
processes per transition" and "one process per refresh, not one per pane".

A batch that changes something goes through libtmux (`Server.cmd`, the
same guarded argv): the process that acts on tmux drives it with the library
the design names. A batch that only reads (`READ_ONLY_COMMANDS`: snapshots,
captures, probes) is spawned here with `subprocess` the way `Server.cmd`
does it (same argv, same output split), so a navigator that only reads tmux
(holding the host's reconcile turn, say) never imports libtmux: that import
costs ~65 modules, ~70 ms and ~3.5 MB of resident memory (docs/decisions.md).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from core.model.files import person_umask
from core.tmux.errors import (
    PaneNotFound,
    TargetNotFound,
    TmuxCommandFailed,
    TmuxNotInstalled,
    TmuxUnavailable,
)

if TYPE_CHECKING:
    from libtmux.server import Server

TmuxCommand = Sequence[str]
"""One tmux command as argv, e.g. ("select-pane", "-d", "-t", "%3")."""

READ_ONLY_COMMANDS = frozenset({
    "capture-pane", "display-message", "has-session", "list-buffers", "list-clients",
    "list-keys", "list-panes", "list-sessions", "list-windows", "show-buffer",
    "show-environment", "show-hooks", "show-options", "show-window-options"})
"""tmux commands that change nothing: a batch of only these is a read."""

_UNAVAILABLE = ("no server running", "error connecting to", "server exited unexpectedly")
_MISSING_PANE = re.compile(r"can't find pane:? ?(%\d+)?")
_MISSING_TARGET = ("can't find session", "can't find window", "no such window", "no such session")


def escape_arg(arg: str) -> str:
    """Keep an argument literal inside a tmux argv command list.

    tmux treats any argv element that ends in `;` as a command separator (the
    text before it stays an argument). A trailing `\\;` is the escape for a
    literal `;`, and it is applied to every argument so user data (window
    names, env values, commands) can never split a batch.
    """
    if arg.endswith(";"):
        return arg[:-1] + "\\;"
    return arg


@dataclass(frozen=True)
class BatchOutput:
    """What one tmux process printed; stdout lines keep command order."""

    stdout: tuple[str, ...]
    stderr: tuple[str, ...]
    returncode: int

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.stderr


class TmuxRunner:
    """Runs command lists against one exact tmux server and counts processes.

    Thread-safe: navigator thread workers and the engine may share a runner.
    """

    acts_through_libtmux: ClassVar[bool] = True
    """False in the home's server (``core.server.main``): its acting batches are spawned
    like the reads (same argv, same output split), since importing libtmux would keep
    ~3 MB in the one process that runs for the home's whole life (issue 38)."""

    def __init__(self, socket_path: str | os.PathLike[str], *, config_file: str | None = None):
        self.socket_path = os.fspath(socket_path)
        if not self.socket_path:
            raise ValueError("a tmux socket path is required; the default server is never used")
        self.config_file = config_file
        self.tmux_bin = shutil.which("tmux")
        """Found on PATH once, not per command; None: not installed (`run` says so)."""
        self._lock = threading.Lock()
        self._invocations = 0
        self._server: Server | None = None
        """libtmux's handle on the same server, made at the first batch that acts."""

    @property
    def invocations(self) -> int:
        """tmux processes spawned by this runner so far."""
        with self._lock:
            return self._invocations

    def run(self, commands: Sequence[TmuxCommand], *, check: bool = True) -> BatchOutput:
        """Run `commands` as ONE tmux process; raise a specific TmuxError on failure.

        tmux stops a `;` sequence at the first failing command, so a failed
        guard (see `identity_guard`) prevents every later mutation.
        """
        if not commands:
            raise ValueError("empty tmux batch")
        argv: list[str] = []
        for index, command in enumerate(commands):
            if not command:
                raise ValueError("empty tmux command in batch")
            if index:
                argv.append(";")
            argv.extend(escape_arg(str(part)) for part in command)
        reads = all(str(command[0]) in READ_ONLY_COMMANDS for command in commands)
        # This tmux client may start the server the agents run in: it gets the
        # person's umask, so their files are not made private by Switchboard's.
        with person_umask():
            acts = not reads and self.acts_through_libtmux
            output = self._act(argv) if acts else self._spawn(argv)
        if check and not output.ok:
            raise classify_failure(output, socket_path=self.socket_path)
        return output

    def _found_tmux(self) -> str:
        """The tmux binary, counted as one more process about to be spawned."""
        if self.tmux_bin is None:
            self.tmux_bin = shutil.which("tmux")  # installed since this runner started?
        if self.tmux_bin is None:
            raise TmuxNotInstalled("tmux is not installed (no `tmux` on PATH); install tmux "
                                   "3.2 or later and try again; nothing was changed.")
        with self._lock:
            self._invocations += 1
        return self.tmux_bin

    def _act(self, argv: list[str]) -> BatchOutput:
        """A batch that changes something, as one process spawned by libtmux's
        ``Server.cmd`` (bound to this exact socket and config file)."""
        tmux_bin = self._found_tmux()
        _import_libtmux()
        from libtmux.exc import TmuxCommandNotFound
        from libtmux.server import Server

        if self._server is None:
            self._server = Server(socket_path=self.socket_path, config_file=self.config_file,
                                  tmux_bin=tmux_bin)
        try:
            done = self._server.cmd(*argv)
        except TmuxCommandNotFound:  # removed since it was found
            self.tmux_bin, self._server = None, None
            raise TmuxNotInstalled("tmux is no longer at its path; install tmux 3.2 or later "
                                   "and try again; nothing was changed.") from None
        return BatchOutput(stdout=tuple(done.stdout), stderr=tuple(done.stderr),
                           returncode=done.returncode)

    def _spawn(self, argv: list[str]) -> BatchOutput:
        """One `tmux [-f CONFIG] -S SOCKET argv...` process, its output split into lines."""
        self._found_tmux()
        assert self.tmux_bin is not None
        head = [self.tmux_bin] + ([f"-f{self.config_file}"] if self.config_file else [])
        try:
            done = subprocess.run([*head, f"-S{self.socket_path}", *argv],
                                  capture_output=True, text=True, encoding="utf-8",
                                  errors="backslashreplace", check=False)
        except FileNotFoundError:  # removed since it was found
            self.tmux_bin = None
            raise TmuxNotInstalled("tmux is no longer at its path; install tmux 3.2 or later "
                                   "and try again; nothing was changed.") from None
        stdout = done.stdout.split("\n")
        while stdout and stdout[-1] == "":  # the trailing newline, not blank lines within
            stdout.pop()
        return BatchOutput(stdout=tuple(stdout),
                           stderr=tuple(line for line in done.stderr.split("\n") if line),
                           returncode=done.returncode)


def classify_failure(output: BatchOutput, *, socket_path: str) -> Exception:
    """Map tmux's stderr to the most specific adapter error."""
    text = "\n".join(output.stderr) or f"tmux exited with status {output.returncode}"
    lowered = text.lower()
    if any(marker in lowered for marker in _UNAVAILABLE):
        return TmuxUnavailable(
            f"No tmux server answers on {socket_path} ({text}); pane locators of the old "
            "server are invalid. `switchboard open PROJECT` starts a server and rebuilds "
            "that project's view (agents resume with n).",
            detail=text,
        )
    found = _MISSING_PANE.search(text)
    if found:
        pane_id = found.group(1)
        return PaneNotFound(
            f"tmux pane {pane_id or '?'} no longer exists ({text}); reconcile the view.",
            pane_id=pane_id,
        )
    if any(marker in lowered for marker in _MISSING_TARGET):
        return TargetNotFound(f"tmux target does not exist ({text}); reconcile the view.")
    return TmuxCommandFailed(f"tmux command failed: {text}", stderr=output.stderr)


def _import_libtmux() -> None:
    """Import libtmux with the process's own stdout in place: its import reads
    ``sys.stdout.encoding``, which a Textual app's print capture (a navigator's stdout
    while it runs) lacks, so the navigator's first request that changed tmux failed
    with an AttributeError after its registry rows were written."""
    import sys

    if "libtmux.server" in sys.modules or hasattr(sys.stdout, "encoding"):
        return
    import io

    saved = sys.stdout
    sys.stdout = sys.__stdout__ or io.StringIO()
    try:
        import libtmux.server  # noqa: F401
    finally:
        sys.stdout = saved
