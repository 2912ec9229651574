"""Start a detached helper process from the hook path, cheaply.

The hook hands work it must not wait for (a broker kick, an attention
publisher, the evidence parser, a Stop's waiting push) to a process of its
own. ``os.posix_spawnp`` rather than ``subprocess``: importing ``subprocess``
(with ``selectors``, ``signal``, ``locale``) cost every hook more than the
spawn itself, and nothing here needs a pipe or a wait. The child gets its own
session and ``/dev/null`` (or a log) as its standard streams, so it shares no
pipe with the hook: a provider waits for the hook's stdout to close, never for
the child. Python opens every other descriptor close-on-exec (PEP 446).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence


def fast_cli_argv() -> list[str]:
    """``switchboard`` as the hook runs it: this interpreter with ``-S`` on
    ``navigator/hook_entry.py`` (see there: no ``site``, ``os._exit`` at the end).
    For the hook itself and for what it starts at every turn end."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return [sys.executable, "-S", os.path.join(root, "navigator", "hook_entry.py")]


def spawn_detached(argv: Sequence[str], env: Mapping[str, str] | None = None, *,
                   log_path: str | None = None) -> int:
    """Start ``argv`` (looked up on PATH) in a new session; returns its pid.

    With ``log_path`` its stdout and stderr append to that owner-only file.
    Raises OSError when it cannot start; callers on the hook path suppress it.
    """
    out = (os.POSIX_SPAWN_OPEN, 1, log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600) \
        if log_path else (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0)
    return os.posix_spawnp(
        argv[0], list(argv), dict(os.environ if env is None else env),
        file_actions=[(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0), out,
                      (os.POSIX_SPAWN_DUP2, 1, 2)],
        setsid=True)
