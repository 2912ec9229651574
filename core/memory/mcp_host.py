"""One agent-tool server per home, behind every agent's tiny stdio shim.

Every agent's CLI starts ``core/providers/mcp_shim.c`` (about 1 MB) as its stdio MCP
server; the shim forwards each line here over a private unix socket (0600, in the
home's run folder) and copies the one-line answer back. A full Python agent-tool
server per agent cost ~20 MB each; this process is paid once.

Protocol, per connection (one per shim): the first line is ``{"env": {...}}``, the
shim's whole environment (the agent's pane environment, so its capability); then
one JSON-RPC line at a time, each answered by exactly one line (empty for a
notification). ``initialize``, ``tools/list`` and ``ping`` are answered here at
once. A ``tools/call`` runs in a forked child whose ``os.environ`` is exactly the
shim's environment: the capability is checked there, by the same code as
``switchboard mcp`` (``core.agent.mcp_server.handle``), so a shim can never act
with another agent's authority, and one call that hangs or crashes never takes
another agent's tools. The child writes its answer itself, so a call still
answers when this process is killed meanwhile; the shim then starts a new one.

Lifetime: started on demand by a shim (detached: its own session), one per socket
(an ``flock`` beside it), gone ``IDLE_EXIT_S`` after its last connection closed,
and at once when its socket file is removed or replaced. Nothing it starts
outlives a tool call.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import selectors
import signal
import socket
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.model.private_sockets import listen_private

IDLE_EXIT_S = 20.0
"""Seconds without any shim connected before the server exits (a new shim starts it)."""
ENV_IDLE_EXIT = "SWITCHBOARD_MCP_HOST_IDLE"
"""Overrides ``IDLE_EXIT_S`` (tests: a host that goes at once)."""
LOCK_WAIT_S = 5.0
"""How long a starting server waits for an exiting one's lock before it gives up."""
MAX_LINE_BYTES = 4 * 1024 * 1024 + 1
"""A line longer than the largest acceptable message (the shim never sends one)."""
HELLO_MAX_BYTES = 1024 * 1024
"""An environment larger than this is not a shim's."""


@dataclass
class _Conn:
    sock: socket.socket
    buffer: bytearray = field(default_factory=bytearray)
    env: dict[str, str] | None = None
    child: int | None = None
    message_id: Any = None
    listed: bool = False


def lock_path(socket_path: Path) -> Path:
    return socket_path.with_name(socket_path.name + ".lock")


def _acquire(lock_file: Path) -> int | None:
    """The server lock, waited for up to ``LOCK_WAIT_S`` (an idle server may be exiting)."""
    fd = os.open(lock_file, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    deadline = time.monotonic() + LOCK_WAIT_S
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if time.monotonic() > deadline:
                os.close(fd)
                return None
            time.sleep(0.05)


def _listen(path: Path) -> socket.socket:
    server = listen_private(path, 64)
    server.setblocking(False)
    return server


_UNREADABLE = object()
"""What ``_peek`` gives for a line that is not JSON (JSON's own null is None)."""


def _peek(line: bytes) -> Any:
    try:
        return json.loads(line)
    except (ValueError, RecursionError):
        return _UNREADABLE


LAZY_TOOL_MODULES = ("core.agent.tools_broker", "core.agent.tools_context")
"""What ``core.agent.mcp_server`` imports for its tool calls only. This process answers
``initialize``, ``tools/list`` and ``ping`` and forks each call: the modules (and the
engine behind them, ~8 MB) load in the call's child, never here, so the host stays
~12 MB. A call pays their import (~70 ms) in its child; a model turn dwarfs it."""


def _lazy_tool_modules() -> None:
    """Register the tool modules as lazy (``importlib.util.LazyLoader``): importing the
    protocol module then costs nothing; a call's first attribute access loads them."""
    import importlib.util

    for name in LAZY_TOOL_MODULES:
        if name in sys.modules:
            continue
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            continue
        loader = importlib.util.LazyLoader(spec.loader)
        spec.loader = loader
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        loader.exec_module(module)
        # Bound on its package too: ``from package import name`` then finds it without
        # the import system reading the module's ``__spec__`` (which would load it).
        package, _, attribute = name.rpartition(".")
        setattr(importlib.import_module(package), attribute, module)


def _reply(message: Any) -> dict[str, Any] | None:
    """The answer to one decoded line, exactly as ``mcp_server.serve`` gives it."""
    from core.agent.mcp_server import PARSE_ERROR, _error, handle

    if message is _UNREADABLE:
        return _error(None, PARSE_ERROR, "parse error")
    return handle(message)


def _is_call(message: Any) -> bool:
    return isinstance(message, dict) and message.get("method") == "tools/call" and \
        "id" in message


def _encode(reply: dict[str, Any] | None) -> bytes:
    if reply is None:
        return b"\n"
    return json.dumps(reply, separators=(",", ":")).encode("utf-8") + b"\n"


class Host:
    """The accept loop: single-threaded, so forking a call's child is safe."""

    def __init__(self, socket_path: Path, idle_exit: float = IDLE_EXIT_S) -> None:
        self.path = socket_path
        self.idle_exit = idle_exit
        self.selector = selectors.DefaultSelector()
        self.conns: dict[int, _Conn] = {}
        self.children: dict[int, _Conn] = {}
        self.idle_since = time.monotonic()
        self.server: socket.socket | None = None
        self.inode: int | None = None

    def run(self) -> int:
        lock = _acquire(lock_path(self.path))
        if lock is None:
            return 0  # another server holds the socket
        try:
            self.server = _listen(self.path)
            self.inode = os.stat(self.path).st_ino
            self.selector.register(self.server, selectors.EVENT_READ)
            signal.signal(signal.SIGCHLD, lambda *_: None)  # wakes select for reaping
            self._loop()
        finally:
            self._close()
            # No empty lock file left behind per home. A starter that opened this very
            # file and gets its lock after us binds a socket that a later one may
            # replace: the replaced server sees its socket file gone and exits.
            with contextlib.suppress(OSError):
                lock_path(self.path).unlink()
            os.close(lock)
        return 0

    def _still_ours(self) -> bool:
        try:
            return os.stat(self.path).st_ino == self.inode
        except OSError:
            return False

    def _loop(self) -> None:
        while True:
            for key, _ in self.selector.select(timeout=0.5):
                if key.fileobj is self.server:
                    self._accept()
                else:
                    self._read(self.conns[key.fd])
            self._reap()
            if self.conns or self.children:
                self.idle_since = time.monotonic()
            elif time.monotonic() - self.idle_since > self.idle_exit:
                return
            if not self._still_ours():
                return

    def _accept(self) -> None:
        assert self.server is not None
        while True:
            try:
                sock, _ = self.server.accept()
            except (BlockingIOError, InterruptedError):
                return
            sock.setblocking(True)
            sock.settimeout(30.0)
            conn = _Conn(sock)
            self.conns[sock.fileno()] = conn
            self.selector.register(sock, selectors.EVENT_READ)

    def _drop(self, conn: _Conn) -> None:
        fd = conn.sock.fileno()
        with contextlib.suppress(KeyError, ValueError):
            self.selector.unregister(conn.sock)
        self.conns.pop(fd, None)
        conn.sock.close()

    def _read(self, conn: _Conn) -> None:
        try:
            chunk = conn.sock.recv(1 << 16)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            chunk = b""
        if not chunk:
            if conn.child is None:
                self._drop(conn)
            else:  # the child still answers on its copy; forget this side once it ends
                with contextlib.suppress(KeyError, ValueError):
                    self.selector.unregister(conn.sock)
            return
        conn.buffer += chunk
        limit = HELLO_MAX_BYTES if conn.env is None else MAX_LINE_BYTES
        if len(conn.buffer) > limit and b"\n" not in conn.buffer:
            self._drop(conn)
            return
        self._serve(conn)

    def _serve(self, conn: _Conn) -> None:
        while conn.child is None and b"\n" in conn.buffer:
            line, _, rest = bytes(conn.buffer).partition(b"\n")
            conn.buffer = bytearray(rest)
            if conn.env is None:
                if not self._hello(conn, line):
                    self._drop(conn)
                    return
                continue
            message = _peek(line)
            if _is_call(message):
                self._fork_call(conn, message)
                return
            reply = _reply(message)
            try:
                conn.sock.sendall(_encode(reply))
            except OSError:
                self._drop(conn)
                return
            if not conn.listed and isinstance(message, dict) and \
                    message.get("method") == "tools/list" and reply and "result" in reply:
                conn.listed = True
                _mark_ready(conn.env)

    def _hello(self, conn: _Conn, line: bytes) -> bool:
        try:
            env = json.loads(line)["env"]
        except (ValueError, KeyError, TypeError):
            return False
        if not isinstance(env, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                for k, v in env.items()):
            return False
        conn.env = env
        return True

    def _fork_call(self, conn: _Conn, message: dict[str, Any]) -> None:
        conn.message_id = message.get("id")
        pid = os.fork()
        if pid == 0:  # the call's child: the agent's own environment, nothing of ours
            code = 0
            try:
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                if self.server is not None:
                    self.server.close()
                os.environ.clear()
                os.environ.update(conn.env or {})
                reply = _reply(message)
                conn.sock.settimeout(None)
                conn.sock.sendall(_encode(reply))
            except BaseException:  # noqa: BLE001 - the parent answers for a child that failed
                code = 1
            finally:
                os._exit(code)
        conn.child = pid
        self.children[pid] = conn

    def _reap(self) -> None:
        while self.children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                self.children.clear()
                return
            if pid == 0:
                return
            conn = self.children.pop(pid, None)
            if conn is None:
                continue
            conn.child = None
            if os.waitstatus_to_exitcode(status) != 0:
                self._answer_failed(conn)
            if conn.sock.fileno() in self.conns:
                try:
                    self.selector.get_key(conn.sock)
                except (KeyError, ValueError):
                    self._drop(conn)  # its shim went away while the call ran
                    continue
                self._serve(conn)

    def _answer_failed(self, conn: _Conn) -> None:
        from core.agent.mcp_server import _tool_error

        reply = {"jsonrpc": "2.0", "id": conn.message_id,
                 "result": _tool_error("internal_error: the agent-tool call ended without "
                                       "an answer; try again")}
        with contextlib.suppress(OSError):
            conn.sock.sendall(_encode(reply))

    def _close(self) -> None:
        for conn in list(self.conns.values()):
            self._drop(conn)
        if self.server is not None:
            if self._still_ours():
                with contextlib.suppress(OSError):
                    self.path.unlink()
            self.server.close()


def _mark_ready(env: dict[str, str] | None) -> None:
    """The launch's "tools listed" marker, named by the agent's own environment."""
    from core.model.tool_schemas import ENV_READY_FILE

    path = (env or {}).get(ENV_READY_FILE)
    if path:
        with contextlib.suppress(OSError):
            Path(path).touch()


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m core.memory.mcp_host SOCKET", file=sys.stderr)
        return 64
    os.umask(0o077)
    try:
        idle_exit = float(os.environ.get(ENV_IDLE_EXIT, IDLE_EXIT_S))
    except ValueError:
        idle_exit = IDLE_EXIT_S
    # The server is started by some agent's shim and inherits its environment: no
    # capability stays in it (each call's child gets its own agent's environment).
    for name in [name for name in os.environ if name.startswith("SWITCHBOARD_")]:
        del os.environ[name]
    _lazy_tool_modules()
    try:
        return Host(Path(args[0]), idle_exit).run()
    except OSError as exc:
        if exc.errno in (errno.EADDRINUSE, errno.ENAMETOOLONG):
            print(f"switchboard mcp host: cannot listen on {args[0]}: {exc}", file=sys.stderr)
            return 1
        raise


if __name__ == "__main__":
    sys.exit(main())
