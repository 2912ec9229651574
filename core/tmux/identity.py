"""Which tmux server a locator belongs to.

A pane id such as `%0` only means something together with the server that
issued it. A restarted server on the same socket reissues `%0`, so a stored
locator is valid only while socket path, server pid and server start time
all still agree; all three are read from tmux itself in one invocation.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

from core.tmux.commands import REFUSED_PREFIX, equals
from core.tmux.errors import ServerIdentityMismatch, TmuxCommandFailed
from core.tmux.runner import BatchOutput, TmuxCommand, TmuxRunner, classify_failure

# socket_path goes last: it is the only field that may contain spaces.
IDENTITY_FORMAT = "#{pid} #{start_time} #{socket_path}"
_MISMATCH_PATH = "/dev/null/switchboard-server-identity-mismatch"
REBUILD_ADVICE = ("`switchboard open PROJECT` rebuilds that project's view on the running "
                  "server (agents resume with n).")


@dataclass(frozen=True)
class ServerIdentity:
    """The generation of one tmux server: what a TmuxServer row stores."""

    socket_path: str
    server_pid: int
    server_start_time: int

    @classmethod
    def parse(cls, line: str) -> ServerIdentity:
        parts = line.split(" ", 2)
        if len(parts) != 3 or not parts[0].isdigit() or not parts[1].isdigit() or not parts[2]:
            raise TmuxCommandFailed(f"unexpected tmux identity line: {line!r}")
        return cls(socket_path=parts[2], server_pid=int(parts[0]), server_start_time=int(parts[1]))

    def condition(self) -> str:
        """A tmux format that is true only inside this exact server process."""
        return f"#{{&&:{equals('#{pid}', str(self.server_pid))}," \
            f"{equals('#{start_time}', str(self.server_start_time))}}}"


def identity_command() -> TmuxCommand:
    return ("display-message", "-p", IDENTITY_FORMAT)


def read_identity(runner: TmuxRunner) -> ServerIdentity:
    """Read socket path, pid and start time of the live server (one process)."""
    output = runner.run([identity_command()])
    if not output.stdout:
        raise TmuxCommandFailed("tmux printed no identity")
    return ServerIdentity.parse(output.stdout[0])


def check_identity(expected: ServerIdentity, actual: ServerIdentity) -> None:
    """Raise ServerIdentityMismatch unless every field agrees."""
    if expected == actual:
        return
    differing = [
        name
        for name in ("socket_path", "server_pid", "server_start_time")
        if getattr(expected, name) != getattr(actual, name)
    ]
    raise ServerIdentityMismatch(
        f"tmux server on {actual.socket_path} is not the recorded one "
        f"({', '.join(differing)} differ): it restarted or was replaced, so every stored "
        f"pane locator is invalid and nothing was changed. {REBUILD_ADVICE}",
        expected=expected,
        actual=actual,
    )


def verify_identity(runner: TmuxRunner, expected: ServerIdentity) -> ServerIdentity:
    """Read the live identity and raise ServerIdentityMismatch if it is not `expected`."""
    actual = read_identity(runner)
    check_identity(expected, actual)
    return actual


def identity_guard(expected: ServerIdentity) -> TmuxCommand:
    """First command of every mutating batch: fails unless the server is `expected`.

    `source-file -n -F` expands a format to a path and only parses the file:
    `/dev/null` when pid and start time match, otherwise a path that cannot
    exist, whose error stops the rest of the `;` sequence inside tmux. The
    check and the mutation therefore run in the same server process; there is
    no window in which a restart between "verify" and "act" goes unnoticed.
    """
    return (
        "source-file", "-n", "-F",
        f"#{{?{expected.condition()},/dev/null,{_MISMATCH_PATH}}}",
    )


def is_identity_failure(stderr: Sequence[str]) -> bool:
    return any(_MISMATCH_PATH in line for line in stderr)


def run_guarded(
    runner: TmuxRunner, expected: ServerIdentity, commands: Sequence[TmuxCommand],
    *, refusal_stops: bool = False,
) -> BatchOutput:
    """Run a mutating batch behind `identity_guard` as one tmux process.

    Raises ServerIdentityMismatch when the guard stopped the batch, else the
    runner's specific error for any other tmux failure. With `refusal_stops`
    (a batch of `gated` commands) a batch stopped by a guard's refusal is
    returned, its label in stdout, rather than raised.
    """
    if not same_socket(runner.socket_path, expected.socket_path):
        raise ServerIdentityMismatch(
            f"runner socket {runner.socket_path} is not the recorded {expected.socket_path}; "
            "refusing to act on another server.",
            expected=expected,
        )
    output = runner.run([identity_guard(expected), *commands], check=False)
    if is_identity_failure(output.stderr):
        raise ServerIdentityMismatch(
            f"tmux server on {expected.socket_path} is no longer pid {expected.server_pid} "
            f"started at {expected.server_start_time}; nothing was changed. Every stored "
            f"pane locator is invalid. {REBUILD_ADVICE}",
            expected=expected,
        )
    if not output.ok and not (refusal_stops and any(
            line.startswith(REFUSED_PREFIX) for line in output.stdout)):
        raise classify_failure(output, socket_path=runner.socket_path)
    return output


def same_socket(left: str, right: str) -> bool:
    """Two spellings of one socket path (a symlinked runtime directory is the same file)."""
    return left == right or os.path.realpath(left) == os.path.realpath(right)
