"""The warm navigator server: a woken navigator starts without paying for its imports.

A parked navigator (``core.memory.parking``) wakes when a client shows its view. A
cold ``switchboard ui`` spends ~0.3 s importing Textual and the app before it can
draw (~0.5 s to its first paint on a quiet machine, ~0.9 s under a large fleet's
load). This process has imported all of that once, and forks a child per woken
pane: the child takes the pane's terminal (fds sent by ``core/memory/wake_client.py``,
the pane's own process), its environment and directory, and runs the navigator
(``navigator.cli`` as ``switchboard ui`` would) on it. See ``wake_client`` for the
protocol; the child reports its exit status to the pane's process and ends when
that process goes (tmux ended the pane).

Lifetime: started by the first wake that finds none (through ``tmux run-shell -b``,
so it and every navigator it forks descend from the tmux server, which ends it when
it exits; it also notices that its parent went within ``CHECK_S``), one per socket
(an ``flock`` beside it), gone ``IDLE`` seconds (its second argument) after its last
hand-off, and when its socket file is removed or replaced. Its ~32 MB are paid only
while someone moves between views (see docs/decisions.md, "Waking a parked
navigator fast"). It holds
no thread, no connection and no file of the registry (forking a process with threads
or an open SQLite handle is unsafe): only imported modules.
"""

from __future__ import annotations

import contextlib
import fcntl
import gc
import io
import os
import signal
import socket
import sys
import threading
import time
import traceback
from pathlib import Path

from core.model.private_sockets import listen_private

MAGIC = b"SBWAKE1\0"  # core/memory/wake_client.py's (tests check that they agree)
CHECK_S = 2.0
"""Seconds between checks that the socket file is still this server's and that the
tmux server that started it still runs."""
MAX_MESSAGE = 1024 * 1024
_held: list[int] = []
"""The server's lock fd: closed in each child, so the lock goes with the server."""
NAVIGATOR_TAIL = ("-OO", "-m", "navigator.cli", "ui")
"""The only command this server runs: ``python -OO -m navigator.cli ui ...``."""


def preload() -> None:
    """Import what a navigator's start imports, so a child starts at the app's
    construction (the modules shared copy-on-write with this process)."""
    from navigator.commands.ui import forgo_openssl

    forgo_openssl()
    import textual.drivers.linux_driver  # noqa: F401

    import core.apps.client  # noqa: F401
    import navigator.app
    import navigator.cli

    navigator.cli.build_parser("ui")


def _lock(path: Path) -> int | None:
    fd = os.open(path.with_name(path.name + ".lock"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC,
                 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def _listen(path: Path) -> socket.socket:
    server = listen_private(path, 16)
    server.settimeout(CHECK_S)
    return server


def _receive(conn: socket.socket) -> tuple[bytes, list[int]]:
    """The hand-off message (magic, length, body) and the fds sent with it."""
    data, fds, _flags, _addr = socket.recv_fds(conn, MAX_MESSAGE, 3)
    head = len(MAGIC) + 4
    while 0 < len(data) < head:
        more = conn.recv(head - len(data))
        if not more:
            break
        data += more
    if len(data) < head or not data.startswith(MAGIC):
        return b"", fds
    size = int.from_bytes(data[len(MAGIC):head], "big")
    if size > MAX_MESSAGE:
        return b"", fds
    while len(data) < head + size:
        more = conn.recv(head + size - len(data))
        if not more:
            return b"", fds
        data += more
    return MAGIC + data[head:head + size], fds


def parse(message: bytes) -> tuple[str, list[str], dict[str, str]] | None:
    """The directory, the navigator's arguments after ``python``, and the environment;
    None for anything that is not a navigator's hand-off."""
    if not message.startswith(MAGIC):
        return None
    fields = [os.fsdecode(f) for f in message[len(MAGIC):].split(b"\0")]
    try:
        cwd, count = fields[0], int(fields[1])
    except (IndexError, ValueError):
        return None
    argv = fields[2:2 + count]
    if len(argv) != count or argv[0] != sys.executable \
            or tuple(argv[1:1 + len(NAVIGATOR_TAIL)]) != NAVIGATOR_TAIL:
        return None
    env = dict(entry.split("=", 1) for entry in fields[2 + count:] if "=" in entry)
    return cwd, argv[len(NAVIGATOR_TAIL):], env


def _same_user(conn: socket.socket) -> bool:
    """The client is this user (the kernel's word, ``core.platform.peer``)."""
    from core.platform.peer import peer_uid

    return peer_uid(conn) == os.getuid()


def _run_child(conn: socket.socket, cwd: str, args: list[str], env: dict[str, str]) -> None:
    """In the forked child: become the pane's navigator; never returns."""
    code = 1
    try:
        for fd in _held:
            os.close(fd)
        for signum in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        os.setsid()
        os.environ.clear()
        os.environ.update(env)
        # Textual reads its settings (TEXTUAL_*, ESCDELAY) from the environment at
        # import: read them again from the pane's.
        import importlib

        import textual.constants

        importlib.reload(textual.constants)
        with contextlib.suppress(OSError):
            os.chdir(cwd)
        # The pane's terminal, as a Python started in it would have opened it.
        sys.stdin = sys.__stdin__ = io.TextIOWrapper(  # type: ignore[misc]
            io.BufferedReader(io.FileIO(0, "r", closefd=False)), encoding="utf-8",
            errors="surrogateescape")
        sys.stdout = sys.__stdout__ = io.TextIOWrapper(  # type: ignore[misc]
            io.BufferedWriter(io.FileIO(1, "w", closefd=False)), encoding="utf-8",
            line_buffering=True)
        sys.stderr = sys.__stderr__ = io.TextIOWrapper(  # type: ignore[misc]
            io.BufferedWriter(io.FileIO(2, "w", closefd=False)), encoding="utf-8",
            errors="backslashreplace", line_buffering=True)
        sys.argv = ["switchboard", *args]
        threading.Thread(target=_end_with_pane, args=(conn,), daemon=True).start()
        import navigator.cli

        try:
            code = navigator.cli.main(args)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:  # noqa: BLE001 - a crash is reported as the cold one would be
        traceback.print_exc()
        code = 1
    finally:
        with contextlib.suppress(BaseException):
            import atexit

            atexit._run_exitfuncs()
            sys.stdout.flush()
            sys.stderr.flush()
        with contextlib.suppress(OSError):
            conn.sendall(f"exit {code}\n".encode())
        os._exit(code & 0xFF)


def _end_with_pane(conn: socket.socket) -> None:
    """The pane's process went (tmux ended the pane, or it was killed): so does this
    navigator, as a cold one would with its pane."""
    with contextlib.suppress(OSError):
        while conn.recv(4096):
            pass
    os.kill(os.getpid(), signal.SIGHUP)


def _serve_one(server: socket.socket, conn: socket.socket) -> None:
    fds: list[int] = []
    try:
        conn.settimeout(2.0)
        if not _same_user(conn):
            return
        message, fds = _receive(conn)
        parsed = parse(message)
        if parsed is None or len(fds) != 3:
            return
        cwd, args, env = parsed
        pid = os.fork()
        if pid == 0:
            server.close()
            conn.settimeout(None)
            for target, fd in enumerate(fds):
                os.dup2(fd, target)
            for fd in fds:
                if fd > 2:
                    os.close(fd)
            _run_child(conn, cwd, args, env)
        conn.sendall(f"pid {pid}\n".encode())
    except OSError:
        pass
    finally:
        for fd in fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        conn.close()


def _ours(path: Path, inode: int) -> bool:
    try:
        return os.stat(path).st_ino == inode
    except OSError:
        return False


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m navigator.warm SOCKET IDLE_SECONDS", file=sys.stderr)
        return 2
    path = Path(args[0])
    try:
        idle = float(args[1])
    except ValueError:
        idle = 0.0
    lock = _lock(path)
    if lock is None:
        return 0  # another server runs for this socket
    _held.append(lock)
    parent = os.getppid()
    preload()
    # What the imports made is never freed: out of the collector's sight, a child's
    # collections neither walk it nor write to its pages (which stay shared).
    gc.collect()
    gc.freeze()
    # Children are reaped by the kernel; each reports its own status to its pane.
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    server = _listen(path)
    inode = os.stat(path).st_ino
    last = time.monotonic()
    while _ours(path, inode) and os.getppid() == parent and time.monotonic() - last < idle:
        try:
            conn, _ = server.accept()
        except TimeoutError:
            continue
        except OSError:
            time.sleep(0.1)
            continue
        _serve_one(server, conn)
        last = time.monotonic()
    server.close()
    with contextlib.suppress(OSError):
        if _ours(path, inode):
            path.unlink()  # a late client then wakes cold at once (no connect wait)
    os.close(lock)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
