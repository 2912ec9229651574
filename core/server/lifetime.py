"""When the home's server ends on its own: its tmux server gone, or its lock file gone.

The server exists for what lives in the home's tmux server: the views it reconciles
and parks, the agents whose tools it serves. With that tmux server gone for
``TMUX_GONE_EXIT_S`` there is nothing to do, so it exits instead of lingering (a test
home pytest keeps, a person's `tmux kill-server`). Whatever next needs it (a
navigator, a launch, an agent's turn-start hook) starts it again.
"""

from __future__ import annotations

import contextlib
import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

TMUX_GONE_EXIT_S = 30.0
"""Seconds without a reachable tmux server after which the server exits. Long enough
for a tmux server restart (kill-server, then a navigator or `switchboard open` makes a
new one) and for a test that uses the server without tmux."""
CHECK_EVERY_S = 2.0
CONNECT_TIMEOUT_S = 1.0


def tmux_alive(socket_path: str) -> bool:
    """Whether a tmux server accepts connections on ``socket_path`` (a connect, closed
    at once: no tmux process is started, and a socket file a killed server left is
    refused by the kernel)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(CONNECT_TIMEOUT_S)
    try:
        sock.connect(socket_path)
    except OSError:
        return False
    finally:
        sock.close()
    return True


def lock_file_is(lock_file: Path, inode: int) -> bool:
    """Whether the home's lock file is still the one this server holds. A home that was
    deleted (a test's, a reset) takes its server with it instead of leaving it running,
    and a new server for a re-made home never shares its lock with an old one."""
    try:
        return os.stat(lock_file).st_ino == inode
    except OSError:
        return False


@dataclass
class ExitRule:
    """Asked every half second by the server's main loop: a reason to exit, or None."""

    lock_file: Path
    lock_inode: int
    tmux_socket: Callable[[], str | None]
    """The home's views socket (re-read: the config may change); None: none known."""
    gone_after: float = TMUX_GONE_EXIT_S
    clock: Callable[[], float] = time.monotonic
    alive: Callable[[str], bool] = tmux_alive
    _seen: float = field(default=-1.0)
    _checked: float = field(default=-1.0)

    def __post_init__(self) -> None:
        self._seen = self._checked = self.clock()

    def reason(self) -> str | None:
        if not lock_file_is(self.lock_file, self.lock_inode):
            return "its lock file was removed or replaced"
        now = self.clock()
        if now - self._checked < CHECK_EVERY_S:
            return None
        self._checked = now
        path = None
        with contextlib.suppress(Exception):  # a broken config is not "tmux is up"
            path = self.tmux_socket()
        if path is not None and self.alive(path):
            self._seen = now
            return None
        if now - self._seen >= self.gone_after:
            return f"the home's tmux server has been gone for {self.gone_after:g} s"
        return None


__all__ = ["ExitRule", "TMUX_GONE_EXIT_S", "lock_file_is", "tmux_alive"]
