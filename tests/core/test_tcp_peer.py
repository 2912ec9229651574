"""``core.platform.tcp_peer``: the owner of a loopback TCP connection's other end."""

from __future__ import annotations

import os
import socket
from pathlib import Path

from core.platform import tcp_peer


def _pair() -> tuple[socket.socket, socket.socket, socket.socket]:
    server = socket.create_server(("127.0.0.1", 0))
    client = socket.create_connection(server.getsockname()[:2])
    accepted, _ = server.accept()
    return server, client, accepted


def test_the_peer_of_a_loopback_connection_is_this_user() -> None:
    assert tcp_peer.can_tell()  # this tier runs on Linux
    server, client, accepted = _pair()
    try:
        assert tcp_peer.loopback_peer_uid(accepted) == os.getuid()
    finally:
        for sock in (server, client, accepted):
            sock.close()


def test_the_row_of_exactly_that_connection_is_read(tmp_path: Path) -> None:
    """Another socket's row (the reverse direction, a listener) never answers for it."""
    server, client, accepted = _pair()
    try:
        ours = tcp_peer._hex_address(accepted.getsockname())
        theirs = tcp_peer._hex_address(accepted.getpeername())
        table = tmp_path / "tcp"
        table.write_text(
            "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt"
            "   uid  timeout inode\n"
            f"   0: {ours} 00000000:0000 0A 0:0 00:0 0 111 0 1\n"
            f"   1: {ours} {theirs} 01 0:0 00:0 0 222 0 2\n"
            f"   2: {theirs} {ours} 01 0:0 00:0 0 4242 0 3\n")
        assert tcp_peer.loopback_peer_uid(accepted, table=str(table)) == 4242
        table.write_text(table.read_text().splitlines()[0] + "\n")
        assert tcp_peer.loopback_peer_uid(accepted, table=str(table)) is None  # gone
    finally:
        for sock in (server, client, accepted):
            sock.close()


def test_macos_cannot_tell() -> None:
    server, client, accepted = _pair()
    try:
        assert not tcp_peer.can_tell("darwin")
        assert tcp_peer.loopback_peer_uid(accepted, system="darwin") is None
    finally:
        for sock in (server, client, accepted):
            sock.close()
