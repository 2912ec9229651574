"""The agent tools over MCP streamable HTTP on 127.0.0.1 (issue 38.2).

``POST /mcp`` takes one JSON-RPC message and answers it as ``application/json``
(``initialize``, ``tools/list``, ``ping`` here at once; a notification gets 202 and no
body; ``tools/call`` in a child process with the launch's own environment). ``GET`` is
405 (a bodiless one leaves the connection open for the next POST): there is no
server-to-client stream.

Every request is checked before its body is read, each refusal one line of text:

- The connection must come from this user (Linux: the peer socket's owner in the
  kernel's TCP table, ``core.platform.tcp_peer``); another user's gets 403 and is closed unread.

- ``Host`` must be ``127.0.0.1:PORT`` or ``localhost:PORT`` and ``Origin``, when sent,
  that same origin (403): a web page the person opens cannot reach the tools through
  DNS rebinding or a cross-site POST.
- ``Authorization: Bearer TOKEN``: a token registered by a launch
  (``core.providers.agent_http``, stored as its sha256). Missing, unknown (forged) or
  stale is 401: a newer launch of its session replaced it, or its launch ended (the
  capability it stands for is revoked or expired in the registry, read-only). A token is never
  written to the log, nor echoed.
- A body over ``MAX_BODY_BYTES`` is 413 (not read), one without a length 411.

One client never delays another: each connection has its own thread (at most
``MAX_CONNECTIONS``), every read and write has a timeout (``READ_TIMEOUT_S``) and a whole
request a deadline, and calls are bounded (``MAX_CALLS`` at once, ``MAX_CALLS_PER_TOKEN``
of them per launch, each killed after ``CALL_TIMEOUT_S``). A new connection past
``MAX_CONNECTIONS`` takes the place of the one that has waited longest for a request
(one that never sends, a slowloris head, an idle keep-alive), so connections held open
without a request cannot lock the agents out; a launch's token holds at most
``MAX_BUSY_PER_TOKEN`` connections with a request in progress (more get 503), so one
launch's requests cannot take every place either.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

from core.model.files import append_log_line
from core.model.tool_schemas import ENV_READY_FILE
from core.platform import tcp_peer
from core.providers.agent_http import MCP_PATH, TOKEN_MAX_BYTES, TOKEN_RE, token_digest

MAX_BODY_BYTES = 4 * 1024 * 1024
READ_TIMEOUT_S = 10.0
"""A connection that sends nothing for this long is closed."""
REQUEST_DEADLINE_S = 30.0
"""A request's body must have arrived whole by then (a trickling client is cut off)."""
MAX_CONNECTIONS = 64
MAX_BUSY_PER_TOKEN = 16
"""Connections of one launch's token with a request in progress at once: past
``MAX_CALLS_PER_TOKEN`` calls a launch gains nothing (they are refused), so this only
leaves room for its lists and pings, and four launches at most could fill the server."""
MAX_CALLS = 16
MAX_CALLS_PER_TOKEN = 4
CALL_TIMEOUT_S = 110.0
"""A tool call's child is killed past this (Codex's own tool timeout is 60 s by default,
Claude Code's longer); the agent gets an error result and may try again."""
LOG_MAX_BYTES = 256 * 1024
PASSED_ENV = ("HOME", "PATH", "LANG", "LC_ALL", "USER", "LOGNAME", "TMPDIR", "TZ")
"""From the server's own environment into a call's, unless the launch set them: what an
MCP server the CLI starts would have had (Codex's own default list)."""


@dataclass
class TokenState:
    """What the server keeps per token in memory: how many of its calls run, and whether
    it has been listed (its launch's ready marker written)."""

    calls: int = 0
    listed: bool = False


@dataclass
class Registry:
    """The tokens folder, read on each request (a launch writes there at any time)."""

    tokens: Path
    state: dict[str, TokenState] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def lookup(self, header: str | None) -> tuple[str, dict[str, str]] | str:
        """(digest, environment) of a valid token, else the one-line reason it is refused."""
        if not header:
            return "missing bearer token: send the Authorization header from this launch's " \
                   "MCP config"
        scheme, _, token = header.partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            return "malformed Authorization header: expected 'Bearer <token>'"
        if not TOKEN_RE.fullmatch(token):
            return "unknown token: not issued by this Switchboard server"
        digest = token_digest(token)
        path = self.tokens / digest
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            return "unknown token: not issued by this Switchboard server"
        try:
            info = os.fstat(fd)
            if info.st_uid != os.getuid() or info.st_mode & 0o077:
                return "unknown token: its record is not private; relaunch the agent"
            data = os.read(fd, TOKEN_MAX_BYTES + 1)
        finally:
            os.close(fd)
        try:
            record = json.loads(data)
        except ValueError:
            return "unknown token: its record is unreadable; relaunch the agent"
        env = record.get("env") if isinstance(record, dict) else None
        if env is None and isinstance(record, dict) and "ended_at" in record:
            return "stale token: its launch ended; the agent's newer launch has its own"
        if not isinstance(env, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                for k, v in env.items()):
            return "unknown token: its record is unreadable; relaunch the agent"
        ended = launch_ended(env)
        if ended is not None:
            return f"stale token: its launch ended ({ended})"
        return digest, env


def launch_ended(env: dict[str, str]) -> str | None:
    """Why the launch a token was made for has ended, or None while it may act.

    The capability the token stands for is read (read-only) in the home's registry:
    revoked (its runtime stopped), expired, unknown, or of a generation that a reset
    replaced. A registry that cannot be read says nothing here: the call's own
    capability check answers then, in words the agent can read."""
    from core.config.capabilities import ENV_CAPABILITY, ENV_GENERATION, authenticate
    from core.config.home import Home
    from core.model.errors import SwitchboardError, Unauthorized
    from storage.connection import connect

    raw, generation = env.get(ENV_CAPABILITY), env.get(ENV_GENERATION)
    if not raw or not generation:
        return None  # no capability: the tools refuse it themselves
    try:
        home = Home.from_env(env)
        if home.read_current_generation() != generation:
            return "its Switchboard generation was replaced"
        conn = connect(home.registry_path(generation), readonly=True)
    except (SwitchboardError, OSError, sqlite3.Error):
        return None
    try:
        authenticate(conn, raw, int(time.time() * 1000))
    except Unauthorized as exc:
        return exc.message.removesuffix("; nothing was written")
    except sqlite3.Error:
        return None
    finally:
        conn.close()
    return None


@dataclass
class Link:
    """One open connection: whether it waits for a request (and since when), or which
    token's request it is serving."""

    sock: socket.socket
    waiting: bool = True
    since: float = field(default_factory=time.monotonic)
    token: str | None = None


class AgentToolServer(HTTPServer):
    """127.0.0.1 only, an ephemeral port, a thread per open connection (at most
    ``MAX_CONNECTIONS``, from a pool: the accepting thread only hands a connection over,
    so a flood of connects never makes it wait for a new thread to be scheduled)."""

    request_queue_size = 128
    """The listen backlog: with socketserver's 5, a burst of connections (agents starting
    together, or a flood) overflowed it and each further connect waited a 1 s SYN retry."""
    allow_reuse_address = True
    """A restarted server takes its predecessor's port even with connections of the old one
    still in TIME_WAIT (on Linux this never lets two listeners share a port)."""

    def __init__(self, tokens: Path, log: Path, port: int = 0) -> None:
        self.registry = Registry(tokens)
        self.log_file = log
        self.calls = threading.BoundedSemaphore(MAX_CALLS)
        self.links: dict[socket.socket, Link] = {}
        self.links_lock = threading.Lock()
        self.handed: queue.SimpleQueue[tuple[Any, Any]] = queue.SimpleQueue()
        self.workers = 0
        self.idle = 0
        self.settled = time.monotonic()
        """When the last request ended or connection closed (else: when it started)."""
        super().__init__(("127.0.0.1", port), Handler)

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    def process_request(self, request: Any, client_address: Any) -> None:
        with self.links_lock:
            if len(self.links) >= MAX_CONNECTIONS and not self._evict_longest_waiting():
                self.log(f"refused a connection: {MAX_CONNECTIONS} open, each with a "
                         "request in progress")
                self.shutdown_request(request)
                return
            self.links[request] = Link(request)
            grow = self.idle == 0 and self.workers < MAX_CONNECTIONS
            if grow:
                self.workers += 1
            else:
                self.idle -= 1
        self.handed.put((request, client_address))
        if grow:
            threading.Thread(target=self._work, daemon=True).start()

    def _work(self) -> None:
        """A pool thread: one connection at a time, for as long as it stays open."""
        while True:
            request, client_address = self.handed.get()
            try:
                self.finish_request(request, client_address)
            except Exception:  # noqa: BLE001 - one connection's failure is logged, not fatal
                self.handle_error(request, client_address)
            finally:
                with self.links_lock:
                    self.links.pop(request, None)
                    self.idle += 1
                    self.settled = time.monotonic()
                self.shutdown_request(request)

    def _evict_longest_waiting(self) -> bool:
        """Close the connection that has waited longest for a request (under the lock);
        False when every connection has a request in progress."""
        waiting = [link for link in self.links.values() if link.waiting]
        if not waiting:
            return False
        victim = min(waiting, key=lambda link: link.since)
        del self.links[victim.sock]
        with contextlib.suppress(OSError):
            victim.sock.shutdown(socket.SHUT_RDWR)  # its thread's read ends; it closes
        return True

    def link_waits(self, sock: socket.socket) -> None:
        """The connection is between requests (or before its first): evictable."""
        with self.links_lock:
            link = self.links.get(sock)
            if link is not None:
                link.waiting, link.since, link.token = True, time.monotonic(), None
                self.settled = link.since

    def quiet_for(self) -> float:
        """Seconds since the endpoint last served anything: 0 while a request is in
        progress, else since the last one ended (or a connection came or went)."""
        with self.links_lock:
            if any(not link.waiting for link in self.links.values()):
                return 0.0
            return time.monotonic() - self.settled

    def link_busy(self, sock: socket.socket, token: str | None = None) -> bool:
        """A request is in progress on the connection (of ``token`` once it is known);
        False when that token already has ``MAX_BUSY_PER_TOKEN`` of them."""
        with self.links_lock:
            link = self.links.get(sock)
            if link is None:
                return True
            if token is not None and sum(1 for other in self.links.values()
                                         if other.token == token) >= MAX_BUSY_PER_TOKEN:
                return False
            link.waiting, link.token = False, token
            return True

    def handle_error(self, request: Any, client_address: Any) -> None:
        self.log(f"a request failed: {sys.exc_info()[1]!r}")

    def log(self, line: str) -> None:
        """One line to ``server.log`` (0600, started over past ``LOG_MAX_BYTES``)."""
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime())
        append_log_line(self.log_file, f"{stamp} switchboard server: {line}", LOG_MAX_BYTES)

    def run_call(self, digest: str, env: dict[str, str], body: bytes) -> bytes:
        """One ``tools/call`` in its own process with the launch's environment, bounded."""
        registry = self.registry
        with registry.lock:
            state = registry.state.setdefault(digest, TokenState())
            if state.calls >= MAX_CALLS_PER_TOKEN:
                raise CallRefused("this launch already has "
                                  f"{MAX_CALLS_PER_TOKEN} tool calls running; wait for one")
            state.calls += 1
        try:
            if not self.calls.acquire(timeout=CALL_TIMEOUT_S):
                raise CallRefused("the server is busy with other calls; try again")
            try:
                return self._spawn(env, body)
            finally:
                self.calls.release()
        finally:
            with registry.lock:
                state.calls -= 1

    def _spawn(self, env: dict[str, str], body: bytes) -> bytes:
        child_env = {k: os.environ[k] for k in PASSED_ENV if k in os.environ}
        child_env.update(env)
        cwd = child_env.pop("SWITCHBOARD_MCP_CWD", "") or "/"
        if not os.path.isdir(cwd):
            cwd = "/"
        try:
            done = subprocess.run(  # noqa: S603 - our own interpreter and module
                [sys.executable, "-m", "core.server.call"], input=body, env=child_env,
                cwd=cwd, capture_output=True, timeout=CALL_TIMEOUT_S, check=False)
        except subprocess.TimeoutExpired:
            self.log(f"a tool call ran past {CALL_TIMEOUT_S:g} s and was ended")
            raise CallRefused(f"the tool call ran past {CALL_TIMEOUT_S:g} s and was "
                              "ended; try again") from None
        except OSError as exc:
            self.log(f"cannot start a tool call: {exc}")
            raise CallRefused("the tool call could not start; try again") from None
        if done.returncode != 0 or not done.stdout:
            tail = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:]
            self.log(f"a tool call failed (exit {done.returncode}): {' '.join(tail)[:300]}")
            raise CallRefused("the agent-tool call ended without an answer; try again")
        return done.stdout

    def mark_listed(self, digest: str, env: dict[str, str]) -> None:
        """The launch's "tools listed" marker, once per token (Claude's prompt wait)."""
        with self.registry.lock:
            state = self.registry.state.setdefault(digest, TokenState())
            if state.listed:
                return
            state.listed = True
        path = env.get(ENV_READY_FILE)
        if path:
            with contextlib.suppress(OSError):
                Path(path).touch()


class CallRefused(Exception):
    """A call that gets an ``isError`` result instead of running (its words say why)."""


class Handler(BaseHTTPRequestHandler):
    """One connection: requests in order, each checked before its body is read."""

    server: AgentToolServer
    protocol_version = "HTTP/1.1"
    server_version = "switchboard"
    sys_version = ""
    timeout = READ_TIMEOUT_S

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        """Nothing per request: refusals are logged by reason, never with headers."""

    def handle(self) -> None:
        """Another user's connection is refused before a byte of it is read: a token that
        leaked (a port squatted while the server was down) is worth nothing to them."""
        if tcp_peer.can_tell():
            uid = tcp_peer.loopback_peer_uid(self.connection)
            if uid != os.getuid():
                who = "an unknown user" if uid is None else f"uid {uid}"
                self.server.log(f"refused a connection from {who}: only this user's "
                                "agents may connect")
                line = b"forbidden: a connection from another user is refused\n"
                with contextlib.suppress(OSError):
                    self.wfile.write(b"HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain; "
                                     b"charset=utf-8\r\nContent-Length: %d\r\n"
                                     b"Connection: close\r\n\r\n%s" % (len(line), line))
                self.close_connection = True
                return
        super().handle()

    def handle_one_request(self) -> None:
        self.server.link_waits(self.connection)
        super().handle_one_request()

    def parse_request(self) -> bool:
        parsed = super().parse_request()
        if parsed:
            self.server.link_busy(self.connection)
        return parsed

    def _plain(self, status: HTTPStatus, line: str, *, close: bool = False,
               headers: tuple[tuple[str, str], ...] = ()) -> None:
        body = (line + "\n").encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers:
            self.send_header(name, value)
        if close:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        self.wfile.write(body)

    def _json(self, status: HTTPStatus, data: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _origin_refusal(self) -> str | None:
        port = self.server.port
        allowed = (f"127.0.0.1:{port}", f"localhost:{port}")
        host = self.headers.get("Host")
        if host not in allowed:
            return f"forbidden: Host must be 127.0.0.1:{port} or localhost:{port}"
        origin = self.headers.get("Origin")
        if origin is not None and origin not in (f"http://{host}",):
            return "forbidden: a request from another origin is refused"
        return None

    def _refuse(self, status: HTTPStatus, line: str, **kwargs: Any) -> None:
        self.server.log(f"refused {self.command} {self.path[:64]!r}: {line}")
        self._plain(status, line, **kwargs)

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self._other()

    def do_DELETE(self) -> None:  # noqa: N802
        self._other()

    def do_PUT(self) -> None:  # noqa: N802
        self._other()

    def _refused_before_auth(self) -> bool:
        """Host/Origin and path, checked before any token is read; True when answered."""
        refusal = self._origin_refusal()
        if refusal is not None:
            self._refuse(HTTPStatus.FORBIDDEN, refusal, close=True)
            return True
        if self.path.split("?")[0] != MCP_PATH:
            self._plain(HTTPStatus.NOT_FOUND, f"not found: the agent tools are at {MCP_PATH}",
                        close=True)
            return True
        return False

    def _other(self) -> None:
        """405, the connection kept open when the request carries no body (nothing unread
        is left on it). The MCP client sends its ``GET`` (the optional event stream) right
        as it sends ``tools/list``; OpenCode 1.18.33's runtime (Bun's fetch) could put that
        POST on the connection the 405 was closing and fail it with "The socket connection
        was closed unexpectedly", and OpenCode then showed "Failed to get tools" and
        offered none of them (measured: 7 of 600 against a close, 0 of 400 kept open)."""
        if self._refused_before_auth():
            return
        bodiless = self.headers.get("Transfer-Encoding") is None and \
            self.headers.get("Content-Length", "0").strip() == "0"
        self._plain(HTTPStatus.METHOD_NOT_ALLOWED,
                    "method not allowed: POST one JSON-RPC message (no event stream here)",
                    close=not bodiless, headers=(("Allow", "POST"),))

    def do_POST(self) -> None:  # noqa: N802
        if self._refused_before_auth():
            return
        found = self.server.registry.lookup(self.headers.get("Authorization"))
        if isinstance(found, str):
            self._refuse(HTTPStatus.UNAUTHORIZED, found, close=True,
                         headers=(("WWW-Authenticate", 'Bearer error="invalid_token"'),))
            return
        digest, env = found
        if not self.server.link_busy(self.connection, digest):
            self._refuse(HTTPStatus.SERVICE_UNAVAILABLE,
                         f"busy: this launch already has {MAX_BUSY_PER_TOKEN} requests in "
                         "progress; send one after another", close=True)
            return
        length_text = self.headers.get("Content-Length")
        if self.headers.get("Transfer-Encoding") or length_text is None or \
                not length_text.isdigit():
            self._refuse(HTTPStatus.LENGTH_REQUIRED,
                         "length required: send Content-Length (no chunked bodies)", close=True)
            return
        length = int(length_text)
        if length > MAX_BODY_BYTES:
            self._refuse(HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                         f"request too large: at most {MAX_BODY_BYTES} bytes", close=True)
            return
        body = self._read_body(length)
        if body is None:
            self._refuse(HTTPStatus.REQUEST_TIMEOUT,
                         f"request timeout: the body did not arrive within "
                         f"{REQUEST_DEADLINE_S:g} s", close=True)
            return
        self._answer(digest, env, body)

    def _read_body(self, length: int) -> bytes | None:
        """The body, or None when it does not arrive by the request's deadline."""
        deadline = time.monotonic() + REQUEST_DEADLINE_S
        chunks: list[bytes] = []
        left = length
        while left:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            self.connection.settimeout(min(READ_TIMEOUT_S, remaining))
            try:
                chunk = self.rfile.read1(min(left, 64 * 1024))
            except (TimeoutError, OSError):
                return None
            if not chunk:
                return None
            chunks.append(chunk)
            left -= len(chunk)
        self.connection.settimeout(READ_TIMEOUT_S)
        return b"".join(chunks)

    def _answer(self, digest: str, env: dict[str, str], body: bytes) -> None:
        from core.agent.mcp_server import PARSE_ERROR, _error, _tool_error, handle

        try:
            message = json.loads(body)
        except (ValueError, RecursionError):
            self._json(HTTPStatus.BAD_REQUEST,
                       _encode(_error(None, PARSE_ERROR, "parse error")))
            return
        is_request = isinstance(message, dict) and "id" in message and "method" in message
        if isinstance(message, dict) and "id" not in message:
            # A notification (or a client's response): accepted, nothing to answer.
            self.send_response(HTTPStatus.ACCEPTED)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if is_request and message.get("method") == "tools/call":
            try:
                data = self.server.run_call(digest, env, body)
            except CallRefused as exc:
                data = _encode({"jsonrpc": "2.0", "id": message.get("id"),
                                "result": _tool_error(f"internal_error: {exc}")})
            self._json(HTTPStatus.OK, data)
            return
        reply = handle(message)
        if is_request and message.get("method") == "tools/list" and reply and \
                "result" in reply:
            # Before the answer goes: whoever sees the answer also sees the marker.
            self.server.mark_listed(digest, env)
        self._json(HTTPStatus.OK, _encode(reply))


def _encode(reply: dict[str, Any] | None) -> bytes:
    return json.dumps(reply, separators=(",", ":")).encode("utf-8")


__all__ = ["MAX_BODY_BYTES", "AgentToolServer"]
