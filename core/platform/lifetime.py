"""A child process that must not outlive the Switchboard process that started it.

Linux can ask the kernel for a signal when the parent dies (``prctl``
``PR_SET_PDEATHSIG``), set in the child between fork and exec. macOS has no such
call: there the child ends through its own stdin (a pipe from the parent, which
reads end-of-file when the parent dies, however it dies) and ``die_with_parent``
reports False so the caller knows to rely on that.
"""

from __future__ import annotations

import signal

from core.platform import LINUX, system_name

PR_SET_PDEATHSIG = 1


def die_with_parent(sig: int = signal.SIGTERM, system: str | None = None) -> bool:
    """In a child before exec: be sent ``sig`` when the parent dies. True when set."""
    if system_name(system) != LINUX:
        return False
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False
