"""Who is on the other end of a loopback TCP connection: the peer socket's owner uid.

A unix socket would say its peer (``SO_PEERCRED``); a TCP socket does not, and every
local user can connect to 127.0.0.1. Linux lists each TCP socket with its owner's uid in
``/proc/net/tcp``: the peer of an accepted connection is the row whose local address
is the connection's remote one and whose remote address is its local one. macOS has no
such table for an unprivileged reader (``lsof`` would take ~100 ms a connection), so
there the answer is "cannot tell" (None) and ``CAN_TELL`` says so.
"""

from __future__ import annotations

import socket
import struct

from core.platform import LINUX, system_name

PROC_TCP = "/proc/net/tcp"
MAX_TABLE_BYTES = 64 * 1024 * 1024
"""A table bigger than this is not read (a machine with a million sockets)."""


def can_tell(system: str | None = None) -> bool:
    """Whether ``loopback_peer_uid`` can name a peer on this system."""
    return system_name(system) == LINUX


def _hex_address(address: tuple[str, int]) -> str:
    """``/proc/net/tcp``'s spelling: the IPv4 address as a host-order word, the port
    big-endian, both upper-case hex."""
    word = struct.unpack("=I", socket.inet_aton(address[0]))[0]
    return f"{word:08X}:{address[1]:04X}"


def loopback_peer_uid(sock: socket.socket, system: str | None = None,
                      table: str = PROC_TCP) -> int | None:
    """The uid owning the other end of an accepted IPv4 loopback connection; None when
    the system cannot say, the peer is gone, or the connection is not IPv4."""
    if not can_tell(system):
        return None
    try:
        ours = _hex_address(sock.getsockname())
        theirs = _hex_address(sock.getpeername())
        with open(table, "rb") as handle:
            data = handle.read(MAX_TABLE_BYTES)
    except (OSError, ValueError, struct.error):
        return None
    for line in data.decode("ascii", "replace").splitlines()[1:]:
        fields = line.split()
        if len(fields) > 7 and fields[1] == theirs and fields[2] == ours:
            return int(fields[7]) if fields[7].isdigit() else None
    return None
