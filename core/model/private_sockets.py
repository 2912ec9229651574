"""Owner-only unix sockets and the locks beside them, shared by Switchboard's servers.

The remote follower and the home's server are known to run by the ``flock`` their
process holds; a unix socket, where one is made, lives in the home's 0700 run folder.
One spelling of each, so a later fix (a mode, a race) lands once.

A socket is only made, and only connected to, in a folder that is this user's own
with mode 0700 (``core.model.files.check_own_dir``).
"""

from __future__ import annotations

import contextlib
import os
import socket
from pathlib import Path

from core.model.files import check_own_dir
from core.model.flocks import lock_is_held

__all__ = ["listen_private", "lock_is_held"]  # lock_is_held lives in core.model.flocks (lean)


def listen_private(path: Path, backlog: int) -> socket.socket:
    """A listening unix socket at ``path`` that only its owner can connect to.

    A stale socket file is replaced; the umask is tightened while binding (so the
    file is never open to others, not even for a moment) and the mode set again.
    The folder must be this user's private folder (``check_own_dir``): in a folder
    someone else owns or can write, they could swap the socket for their own and
    receive what the clients send (an agent's capability and environment)."""
    check_own_dir(path.parent)
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        server.bind(str(path))
    finally:
        os.umask(old)
    os.chmod(path, 0o600)
    server.listen(backlog)
    return server
