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

One client never stalls another (issue 37): the loop never blocks on a socket.
Each connection has a bounded inbound buffer (a line over ``MAX_LINE_BYTES`` is
refused at once, also while that connection's call runs) and a bounded outbound
queue written only when its socket takes bytes; a client that sends past the
line limit, leaves more than ``OUTBOUND_MAX_BYTES`` of answers unread, or reads
nothing for ``WRITE_STALL_S`` is dropped, with one line saying why in the log
beside the socket (``log_path``). At most ``MAX_CALLS`` calls run at once, and one
agent's calls hold at most ``MAX_CALLS_PER_AGENT`` of them.

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
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.model.files import append_log_line
from core.model.private_sockets import listen_private

IDLE_EXIT_S = 20.0
"""Seconds without any shim connected before the server exits (a new shim starts it)."""
ENV_IDLE_EXIT = "SWITCHBOARD_MCP_HOST_IDLE"
"""Overrides ``IDLE_EXIT_S`` (tests: a host that goes at once)."""
LOCK_WAIT_S = 5.0
"""How long a starting server waits for an exiting one's lock before it gives up."""
MAX_LINE_BYTES = 4 * 1024 * 1024 + 1
"""A line longer than the largest acceptable message (the shim never sends one): the
connection that sends it is dropped, even while its call runs."""
HELLO_MAX_BYTES = 1024 * 1024
"""An environment larger than this is not a shim's."""
READ_CHUNK = 64 * 1024
INBOUND_MAX_BYTES = MAX_LINE_BYTES + READ_CHUNK
"""Reading a connection pauses while this much waits unanswered (its call runs):
what a client sends ahead of its answers stays in its own socket buffer."""
OUTBOUND_MAX_BYTES = 1024 * 1024
"""Answers waiting for a client to read them; past this it is dropped (the largest
answer written here, ``tools/list``, is a few kB; a call's child writes its own)."""
WRITE_STALL_S = 10.0
"""A client with answers waiting that takes no byte for this long is dropped; a
call's child gives up writing its answer after as long."""
ENV_WRITE_STALL = "SWITCHBOARD_MCP_HOST_STALL"
"""Overrides ``WRITE_STALL_S`` (tests: a stall seen at once)."""
MAX_CALLS = 16
"""Tool calls running at once (each a forked child); more wait their turn."""
MAX_CALLS_PER_AGENT = 4
"""Of those, the most one agent (one capability) holds, so an agent that opens many
connections with slow calls cannot make the others wait."""
AGENT_KEY = "SWITCHBOARD_CAPABILITY"
"""The variable naming an agent (``core.config.capabilities.ENV_CAPABILITY``, not
imported: it would load sqlite3 into this process)."""
LOG_MAX_BYTES = 256 * 1024
"""The drop log starts over past this size, so a client dropped again and again
cannot fill the disk."""
CALL_FAILED = 1
"""A call's child exits with this when it failed before writing a byte: the host
answers for it. Any other failure (its answer not delivered, a signal) drops the
connection; the shim reconnects and sends the call again."""
CALL_UNDELIVERED = 2
"""A call's child exits with this when its answer could not be written whole."""


@dataclass(eq=False)
class _Conn:
    """One shim's connection and what is buffered for it, both ways, bounded."""

    sock: socket.socket
    inbound: bytearray = field(default_factory=bytearray)
    tail: int = 0
    """Bytes after the last newline received: the line still arriving."""
    outbound: bytearray = field(default_factory=bytearray)
    waiting_since: float | None = None
    """When the client last took a byte of ``outbound`` (None: nothing waits)."""
    env: dict[str, str] | None = None
    call: dict[str, Any] | None = None
    """A ``tools/call`` read and not started yet (its answers before it still queued,
    or no free call slot)."""
    queued: bool = False
    child: int | None = None
    message_id: Any = None
    listed: bool = False
    events: int = 0
    closed: bool = False

    @property
    def agent(self) -> str:
        return (self.env or {}).get(AGENT_KEY, "")

    @property
    def who(self) -> str:
        """The client, as the log names it: its pane when it said one."""
        pane = (self.env or {}).get("TMUX_PANE")
        return f"pane {pane}" if pane else "a client"


def log_path(socket_path: Path) -> Path:
    """Where the host says, one line each, why it dropped a connection."""
    return socket_path.with_name(socket_path.name + ".log")


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
    """The accept loop: single-threaded (so forking a call's child is safe) and never
    blocked by one client: every socket is non-blocking, every buffer bounded."""

    def __init__(self, socket_path: Path, idle_exit: float = IDLE_EXIT_S,
                 write_stall: float = WRITE_STALL_S) -> None:
        self.path = socket_path
        self.idle_exit = idle_exit
        self.write_stall = write_stall
        self.selector = selectors.DefaultSelector()
        self.conns: dict[int, _Conn] = {}
        self.children: dict[int, _Conn] = {}
        self.waiting_calls: deque[_Conn] = deque()
        self.idle_since = time.monotonic()
        self.server: socket.socket | None = None
        self.inode: int | None = None
        self.wake: tuple[int, int] | None = None
        self.accept_paused_until = 0.0

    def run(self) -> int:
        lock = _acquire(lock_path(self.path))
        if lock is None:
            return 0  # another server holds the socket
        try:
            self.server = _listen(self.path)
            self.inode = os.stat(self.path).st_ino
            self.selector.register(self.server, selectors.EVENT_READ)
            # A child's end wakes the select at once (Python retries a select that a
            # signal interrupts, so the handler alone would not).
            self.wake = os.pipe()
            for fd in self.wake:
                os.set_blocking(fd, False)
            self.selector.register(self.wake[0], selectors.EVENT_READ)
            signal.set_wakeup_fd(self.wake[1], warn_on_full_buffer=False)
            signal.signal(signal.SIGCHLD, lambda *_: None)
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
            for key, mask in self.selector.select(timeout=0.5):
                if key.fileobj is self.server:
                    self._accept()
                elif self.wake is not None and key.fileobj == self.wake[0]:
                    with contextlib.suppress(OSError):
                        while os.read(self.wake[0], 4096):
                            pass
                else:
                    conn = self.conns.get(key.fd)
                    if conn is None:
                        continue
                    if mask & selectors.EVENT_WRITE:
                        self._flush(conn)
                    if mask & selectors.EVENT_READ and not conn.closed:
                        self._read(conn)
            self._reap()
            self._start_calls()
            now = time.monotonic()
            self._drop_stalled(now)
            self._resume_accept(now)
            if self.conns or self.children:
                self.idle_since = now
            elif now - self.idle_since > self.idle_exit:
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
            except OSError as exc:  # out of descriptors: stop accepting for a moment
                self._log(f"cannot accept a connection: {exc}")
                self.selector.unregister(self.server)
                self.accept_paused_until = time.monotonic() + 0.5
                return
            sock.setblocking(False)
            conn = _Conn(sock)
            self.conns[sock.fileno()] = conn
            self._update(conn)

    def _resume_accept(self, now: float) -> None:
        if self.accept_paused_until and now >= self.accept_paused_until and \
                self.server is not None:
            self.accept_paused_until = 0.0
            self.selector.register(self.server, selectors.EVENT_READ)

    def _update(self, conn: _Conn) -> None:
        """Watch the connection for what it can do now: read while its unanswered input
        is under ``INBOUND_MAX_BYTES``, write while answers wait (never while its call's
        child owns the socket)."""
        events = 0
        if not conn.closed:
            if len(conn.inbound) < INBOUND_MAX_BYTES:
                events |= selectors.EVENT_READ
            if conn.outbound and conn.child is None:
                events |= selectors.EVENT_WRITE
        if events == conn.events:
            return
        if conn.events == 0:
            self.selector.register(conn.sock, events)
        elif events == 0:
            self.selector.unregister(conn.sock)
        else:
            self.selector.modify(conn.sock, events)
        conn.events = events

    def _drop(self, conn: _Conn, reason: str | None = None) -> None:
        """Forget a connection; ``reason`` (a misbehaving client) goes to the log.

        A call's child still running keeps its own copy of the socket and answers on it."""
        if conn.closed:
            return
        if reason is not None:
            self._log(f"dropped {conn.who}: {reason}")
        fd = conn.sock.fileno()
        if conn.events:
            with contextlib.suppress(KeyError, ValueError):
                self.selector.unregister(conn.sock)
        conn.events = 0
        conn.closed = True
        conn.inbound = bytearray()
        conn.outbound = bytearray()
        conn.call = None
        self.conns.pop(fd, None)
        conn.sock.close()

    def _log(self, line: str) -> None:
        """One line to the log beside the socket (opened per line: no file held open)."""
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime())
        append_log_line(log_path(self.path), f"{stamp} switchboard mcp host: {line}",
                        LOG_MAX_BYTES)

    def _read(self, conn: _Conn) -> None:
        try:
            chunk = conn.sock.recv(READ_CHUNK)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            chunk = b""
        if not chunk:
            # Its call's child (if any) still answers on its own copy of the socket.
            self._drop(conn)
            return
        conn.inbound += chunk
        newline = chunk.rfind(b"\n")
        conn.tail = conn.tail + len(chunk) if newline < 0 else len(chunk) - newline - 1
        self._serve(conn)
        if conn.closed:
            return
        limit = HELLO_MAX_BYTES if conn.env is None else MAX_LINE_BYTES
        if conn.tail > limit:
            what = "an environment line" if conn.env is None else "a line"
            self._drop(conn, f"{what} longer than {limit} bytes (no newline yet)")
            return
        self._update(conn)

    def _serve(self, conn: _Conn) -> None:
        """Answer the complete lines received, in order, until one is a call."""
        start = 0
        while conn.child is None and conn.call is None and not conn.closed:
            end = conn.inbound.find(b"\n", start)
            if end < 0:
                break
            line = bytes(conn.inbound[start:end])
            start = end + 1
            if conn.env is None:
                if not self._hello(conn, line):
                    self._drop(conn, "its first line is not an environment")
                    return
                continue
            if len(line) > MAX_LINE_BYTES:
                self._drop(conn, f"a line longer than {MAX_LINE_BYTES} bytes")
                return
            message = _peek(line)
            if _is_call(message):
                conn.call = message
                self._want_call(conn)
                break
            reply = _reply(message)
            self._send(conn, _encode(reply))
            if not conn.closed and not conn.listed and isinstance(message, dict) and \
                    message.get("method") == "tools/list" and reply and "result" in reply:
                conn.listed = True
                _mark_ready(conn.env)
        if start and not conn.closed:
            del conn.inbound[:start]
        if not conn.closed:
            self._update(conn)

    def _send(self, conn: _Conn, data: bytes) -> None:
        """Queue one answer and write what the socket takes now; never waits."""
        if not conn.outbound:
            conn.waiting_since = time.monotonic()
        conn.outbound += data
        if len(conn.outbound) > OUTBOUND_MAX_BYTES:
            self._drop(conn, f"it left more than {OUTBOUND_MAX_BYTES} bytes of answers "
                             "unread")
            return
        self._flush(conn)

    def _flush(self, conn: _Conn) -> None:
        if conn.closed or conn.child is not None or not conn.outbound:
            return
        try:
            sent = conn.sock.send(conn.outbound)
        except (BlockingIOError, InterruptedError):
            sent = 0
        except OSError:
            self._drop(conn)  # the client went away
            return
        if sent:
            del conn.outbound[:sent]
            conn.waiting_since = time.monotonic() if conn.outbound else None
        if not conn.outbound:
            self._want_call(conn)
        self._update(conn)

    def _drop_stalled(self, now: float) -> None:
        for conn in list(self.conns.values()):
            if conn.outbound and conn.waiting_since is not None and \
                    now - conn.waiting_since > self.write_stall:
                self._drop(conn, f"it read none of its answers for {self.write_stall:g} s")

    def _hello(self, conn: _Conn, line: bytes) -> bool:
        try:
            env = json.loads(line)["env"]
        except (ValueError, KeyError, TypeError, RecursionError):
            return False
        if not isinstance(env, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                for k, v in env.items()):
            return False
        conn.env = env
        return True

    def _want_call(self, conn: _Conn) -> None:
        """Queue the connection's call once every answer before it is written (the
        child writes on the same socket: answers must not interleave)."""
        if conn.call is not None and not conn.outbound and not conn.queued:
            conn.queued = True
            self.waiting_calls.append(conn)

    def _start_calls(self) -> None:
        """Start waiting calls, oldest first, while a slot is free and their agent is
        under its share."""
        if not self.waiting_calls or len(self.children) >= MAX_CALLS:
            return
        running: dict[str, int] = {}
        for running_conn in self.children.values():
            running[running_conn.agent] = running.get(running_conn.agent, 0) + 1
        held: deque[_Conn] = deque()
        while self.waiting_calls and len(self.children) < MAX_CALLS:
            conn = self.waiting_calls.popleft()
            if conn.closed or conn.call is None:
                conn.queued = False
                continue
            if running.get(conn.agent, 0) >= MAX_CALLS_PER_AGENT:
                held.append(conn)
                continue
            conn.queued = False
            running[conn.agent] = running.get(conn.agent, 0) + 1
            self._fork_call(conn)
        held.extend(self.waiting_calls)
        self.waiting_calls = held

    def _fork_call(self, conn: _Conn) -> None:
        message = conn.call
        assert message is not None
        conn.call = None
        conn.message_id = message.get("id")
        try:
            pid = os.fork()
        except OSError as exc:  # no process left for it: the agent is told to try again
            self._log(f"cannot start a call for {conn.who}: {exc}")
            self._answer_failed(conn)
            self._serve(conn)
            return
        if pid == 0:  # the call's child: the agent's own environment, nothing of ours
            self._run_call(conn, message)
        conn.child = pid
        self.children[pid] = conn
        self._update(conn)

    def _run_call(self, conn: _Conn, message: dict[str, Any]) -> None:
        """In the child: answer one call on the shim's socket, then exit. Nothing here
        touches the selector (its kernel object is the parent's too)."""
        code = CALL_FAILED
        try:
            signal.set_wakeup_fd(-1)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            for other in [self.server, *(c.sock for c in self.conns.values() if c is not conn)]:
                if other is not None:
                    other.close()
            os.environ.clear()
            os.environ.update(conn.env or {})
            answer = _encode(_reply(message))
            code = CALL_UNDELIVERED
            # The socket stays non-blocking (its mode is shared with the parent);
            # a client that does not read costs this child ``write_stall``, no more.
            conn.sock.settimeout(self.write_stall)
            conn.sock.sendall(answer)
            code = 0
        except BaseException:  # noqa: BLE001, S110 - the exit code says what failed
            pass
        finally:
            os._exit(code)

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
            if conn.closed:
                continue  # its shim went away while the call ran
            code = os.waitstatus_to_exitcode(status)
            if code == CALL_FAILED:
                self._answer_failed(conn)
            elif code != 0:
                why = f"signal {-code}" if code < 0 else "the client did not take it"
                self._drop(conn, f"its call's answer was not delivered ({why})")
                continue
            self._serve(conn)

    def _answer_failed(self, conn: _Conn) -> None:
        from core.agent.mcp_server import _tool_error

        reply = {"jsonrpc": "2.0", "id": conn.message_id,
                 "result": _tool_error("internal_error: the agent-tool call ended without "
                                       "an answer; try again")}
        self._send(conn, _encode(reply))

    def _close(self) -> None:
        for conn in list(self.conns.values()):
            self._drop(conn)
        if self.wake is not None:
            with contextlib.suppress(ValueError, OSError):
                signal.set_wakeup_fd(-1)
            for fd in self.wake:
                with contextlib.suppress(OSError):
                    os.close(fd)
            self.wake = None
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


def _seconds(name: str, default: float) -> float:
    """A positive number of seconds from the environment, else ``default``."""
    try:
        value = float(os.environ.get(name, default))
    except ValueError:
        return default
    return value if value > 0 else default


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m core.memory.mcp_host SOCKET", file=sys.stderr)
        return 64
    os.umask(0o077)
    idle_exit = _seconds(ENV_IDLE_EXIT, IDLE_EXIT_S)
    write_stall = _seconds(ENV_WRITE_STALL, WRITE_STALL_S)
    # The server is started by some agent's shim and inherits its environment: no
    # capability stays in it (each call's child gets its own agent's environment).
    for name in [name for name in os.environ if name.startswith("SWITCHBOARD_")]:
        del os.environ[name]
    _lazy_tool_modules()
    try:
        return Host(Path(args[0]), idle_exit, write_stall).run()
    except OSError as exc:
        if exc.errno in (errno.EADDRINUSE, errno.ENAMETOOLONG):
            print(f"switchboard mcp host: cannot listen on {args[0]}: {exc}", file=sys.stderr)
            return 1
        raise


if __name__ == "__main__":
    sys.exit(main())
