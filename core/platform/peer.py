"""Who is on the other end of a unix socket: the peer's uid, from the kernel.

Linux answers ``SO_PEERCRED`` (pid, uid, gid as three ints); macOS answers
``LOCAL_PEERCRED`` at level ``SOL_LOCAL`` with a ``struct xucred`` (version, uid,
group count, groups). Python names neither constant on macOS, so their values
are spelled here (``<sys/un.h>``: SOL_LOCAL 0, LOCAL_PEERCRED 1; ``<sys/ucred.h>``:
XUCRED_VERSION 0, 16 groups).
"""

from __future__ import annotations

import socket
import struct

from core.platform import LINUX, MACOS, system_name

_LINUX_CRED = struct.Struct("3i")
SOL_LOCAL = 0
LOCAL_PEERCRED = 1
_XUCRED = struct.Struct("IIh16I")  # cr_version, cr_uid, cr_ngroups, cr_groups[16]


def peer_uid(sock: socket.socket, system: str | None = None) -> int | None:
    """The uid of the process on the other end of ``sock``; None where the system
    cannot say (then the caller refuses the peer)."""
    name = system_name(system)
    try:
        if name == LINUX:
            option = getattr(socket, "SO_PEERCRED", 17)
            raw = sock.getsockopt(socket.SOL_SOCKET, option, _LINUX_CRED.size)
            return int(_LINUX_CRED.unpack(raw[:_LINUX_CRED.size])[1])
        if name == MACOS:
            raw = sock.getsockopt(SOL_LOCAL, LOCAL_PEERCRED, _XUCRED.size)
            version, uid = struct.unpack_from("II", raw)
            return int(uid) if version == 0 else None
    except (OSError, struct.error):
        return None
    return None
