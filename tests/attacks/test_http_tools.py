"""Attacks on the agent tools over HTTP (``switchboard server``, issue 38.2).

A real server process on 127.0.0.1 in a test's own home; every request is sent as raw
bytes, so each header is exactly what an attacker would send. Each test performs the
attack: a request with no, a forged or a stale token; a DNS-rebound or cross-site
request (wrong Host, foreign Origin); a 5 MiB body; clients that stall; and a token
that would borrow authority it was not registered with. Before this server existed
there was no HTTP endpoint at all: these tests fail on the old code at the import of
``core.server`` / ``core.providers.agent_http``.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import pytest

from core.config.home import Home
from core.model.tool_schemas import ENV_READY_FILE
from core.providers import agent_http
from core.server.http import MAX_BODY_BYTES
from core.server.main import stop_server


@dataclass(frozen=True)
class Served:
    info: agent_http.ServerInfo
    run_dir: Path
    session: Path
    token: str

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self.info.port}"

    def log(self) -> str:
        path = self.run_dir / "server" / "server.log"
        return path.read_text(encoding="utf-8") if path.exists() else ""


@dataclass(frozen=True)
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes

    @property
    def lines(self) -> list[str]:
        return self.body.decode("utf-8").splitlines()


@pytest.fixture
def served(sb_home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Served]:
    # A capability in the starter's environment must not reach the server (attack 6).
    monkeypatch.setenv("SWITCHBOARD_CAPABILITY", "sbcap1_starter-secret")
    home = Home.from_env()
    run_dir = home.run_dir
    info = agent_http.ensure_server(run_dir, home.child_env())
    session = run_dir / "session-a"
    session.mkdir(mode=0o700)
    token = agent_http.register_token(run_dir, session,
                                      {ENV_READY_FILE: str(session / "ready")})
    yield Served(info, run_dir, session, token)
    with contextlib.suppress(Exception):
        stop_server(run_dir)


def _request(port: int, head: str, body: bytes = b"", timeout: float = 15) -> Answer:
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(head.encode("latin-1") + b"\r\n" + body)
        return _read_answer(sock)


def _next_answer(answers: BinaryIO) -> Answer:
    """One answer from a connection's buffered stream; the bytes of an answer pipelined
    behind it stay in the buffer for the next call (``_read_answer`` drops them)."""
    status_line = answers.readline()
    if not status_line:
        raise AssertionError("connection closed before an answer")
    headers: dict[str, str] = {}
    while (line := answers.readline()) not in (b"\r\n", b""):
        name, _, value = line.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    body = answers.read(int(headers.get("content-length", "0")))
    return Answer(int(status_line.split()[1]), headers, body)


def _read_answer(sock: socket.socket) -> Answer:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise AssertionError(f"connection closed before an answer: {data!r}")
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in
               (line.partition(":") for line in header_lines)}
    length = int(headers.get("content-length", "0"))
    while len(rest) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        rest += chunk
    return Answer(int(status_line.split()[1]), headers, rest[:length])


def _post(served: Served, message: dict | bytes, *, token: str | None = "own",
          host: str | None = None, origin: str | None = None,
          extra: str = "") -> Answer:
    body = message if isinstance(message, bytes) else json.dumps(message).encode()
    lines = ["POST /mcp HTTP/1.1", f"Host: {host or served.host}",
             "Content-Type: application/json", "Accept: application/json, text/event-stream",
             f"Content-Length: {len(body)}", "Connection: close"]
    if token is not None:
        lines.append(f"Authorization: Bearer {served.token if token == 'own' else token}")
    if origin is not None:
        lines.append(f"Origin: {origin}")
    head = "\r\n".join(lines) + "\r\n" + extra
    return _request(served.info.port, head, body)


LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}


def test_missing_forged_and_stale_tokens_get_401_with_one_line(served: Served) -> None:
    assert _post(served, LIST).status == 200

    missing = _post(served, LIST, token=None)
    forged = _post(served, LIST, token=secrets.token_urlsafe(32))
    garbage = _post(served, LIST, token="../../tokens/x")
    basic = _request(served.info.port, "\r\n".join([
        "POST /mcp HTTP/1.1", f"Host: {served.host}", "Authorization: Basic dXNlcjpwYXNz",
        "Content-Length: 2", "Connection: close"]) + "\r\n", b"{}")
    for answer, start in ((missing, "missing bearer token"), (forged, "unknown token"),
                          (garbage, "unknown token"), (basic, "malformed Authorization")):
        assert answer.status == 401, answer
        assert len(answer.lines) == 1 and answer.lines[0].startswith(start), answer.lines
        assert answer.headers["www-authenticate"].startswith("Bearer")

    # Stale: the session's next launch gets its own token; the old one is refused.
    newer = agent_http.register_token(served.run_dir, served.session, {})
    stale = _post(served, LIST)
    assert stale.status == 401 and len(stale.lines) == 1
    assert stale.lines[0].startswith("stale token: its launch ended"), stale.lines
    assert _post(served, LIST, token=newer).status == 200

    # A record someone else could have written is not trusted.
    digest = agent_http.token_digest(newer)
    os.chmod(served.run_dir / "server" / "tokens" / digest, 0o644)
    loose = _post(served, LIST, token=newer)
    assert loose.status == 401 and "not private" in loose.lines[0]


def test_wrong_host_or_foreign_origin_gets_403(served: Served) -> None:
    port = served.info.port
    for host in (f"attacker.example:{port}", "127.0.0.1", f"127.0.0.1:{port + 1}",
                 f"localhost.attacker.example:{port}"):
        answer = _post(served, LIST, host=host)
        assert answer.status == 403, (host, answer)
        assert answer.lines == [f"forbidden: Host must be 127.0.0.1:{port} or "
                                f"localhost:{port}"]
    for origin in ("http://attacker.example", f"http://localhost:{port}", "null",
                   f"https://127.0.0.1:{port}"):
        answer = _post(served, LIST, origin=origin)
        assert answer.status == 403, (origin, answer)
        assert answer.lines == ["forbidden: a request from another origin is refused"]
    assert _post(served, LIST, origin=f"http://127.0.0.1:{port}").status == 200
    assert _post(served, LIST, host=f"localhost:{port}",
                 origin=f"http://localhost:{port}").status == 200
    # The refusal comes before the token is even looked at: a page learns nothing.
    assert _post(served, LIST, token=None, host=f"attacker.example:{port}").status == 403


def test_a_5_mib_body_gets_413_and_the_server_goes_on(served: Served) -> None:
    body = b"x" * (5 * 1024 * 1024)
    head = "\r\n".join(["POST /mcp HTTP/1.1", f"Host: {served.host}",
                        f"Authorization: Bearer {served.token}",
                        f"Content-Length: {len(body)}", "Connection: close"]) + "\r\n\r\n"
    with socket.create_connection(("127.0.0.1", served.info.port), timeout=15) as sock:
        sock.sendall(head.encode())
        with contextlib.suppress(OSError):  # the server closes without reading it
            sock.sendall(body)
        answer = _read_answer(sock)
    assert answer.status == 413
    assert answer.lines == [f"request too large: at most {MAX_BODY_BYTES} bytes"]
    assert _post(served, LIST).status == 200
    # A body of exactly the limit is read (and answered: not JSON).
    exact = _post(served, b" " * MAX_BODY_BYTES)
    assert exact.status == 400 and json.loads(exact.body)["error"]["code"] == -32700
    # Chunked (no length) is refused too: it could grow without bound.
    chunked = _request(served.info.port, "\r\n".join([
        "POST /mcp HTTP/1.1", f"Host: {served.host}", f"Authorization: Bearer {served.token}",
        "Transfer-Encoding: chunked", "Connection: close"]) + "\r\n", b"5\r\nhello\r\n0\r\n\r\n")
    assert chunked.status == 411


def test_slow_clients_do_not_delay_another(served: Served) -> None:
    port = served.info.port
    stalled: list[socket.socket] = []
    slow_session = served.run_dir / "session-slow"
    slow_session.mkdir(mode=0o700)
    slow = agent_http.register_token(served.run_dir, slow_session, {})
    try:
        for _ in range(8):
            # Half a request line, then nothing (slowloris)
            sock = socket.create_connection(("127.0.0.1", port), timeout=30)
            sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1")
            stalled.append(sock)
            # A whole head promising 1000 bytes of body, 10 sent
            sock = socket.create_connection(("127.0.0.1", port), timeout=30)
            sock.sendall("\r\n".join([
                "POST /mcp HTTP/1.1", f"Host: {served.host}",
                f"Authorization: Bearer {slow}", "Content-Length: 1000"]).encode()
                + b"\r\n\r\n" + b'{"jsonrpc"')
            stalled.append(sock)
            # Connected, never a byte
            stalled.append(socket.create_connection(("127.0.0.1", port), timeout=30))
        started = time.monotonic()
        answer = _post(served, LIST)
        took = time.monotonic() - started
        assert answer.status == 200 and "tools" in json.loads(answer.body)["result"]
        assert took < 2.0, took
        # ... and the stalled ones are cut off, not kept for ever.
        first = stalled[0]
        first.settimeout(30)
        deadline = time.monotonic() + 30
        closed = False
        while time.monotonic() < deadline and not closed:
            try:
                closed = first.recv(1024) == b""
            except OSError:
                closed = True
        assert closed
    finally:
        for sock in stalled:
            sock.close()


def test_many_clients_at_once_all_answered(served: Served) -> None:
    """Six launches' agents, four requests each, all at once: every one is answered (a
    launch may have up to ``MAX_BUSY_PER_TOKEN`` requests in progress)."""
    tokens = [served.token]
    for index in range(5):
        session = served.run_dir / f"session-many-{index}"
        session.mkdir(mode=0o700)
        tokens.append(agent_http.register_token(served.run_dir, session, {}))
    results: list[int] = []

    def one(token: str) -> None:
        results.append(_post(served, LIST, token=token).status)

    threads = [threading.Thread(target=one, args=(token,)) for token in tokens * 4]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert results == [200] * 24


def test_no_token_in_the_server_log_or_answers(served: Served) -> None:
    forged = secrets.token_urlsafe(32)
    answers = [_post(served, LIST, token=forged), _post(served, LIST),
               _post(served, LIST, token=None),
               _post(served, LIST, token=forged, host="attacker.example:1")]
    newer = agent_http.register_token(served.run_dir, served.session, {})
    answers.append(_post(served, LIST))  # now stale
    answers.append(_post(served, {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                                  "params": {"name": "transition_claim", "arguments": {}}},
                         token=newer))
    log = served.log()
    assert "refused" in log  # the refusals were logged, by reason
    stored = list((served.run_dir / "server" / "tokens").iterdir())
    assert len(stored) == 2
    for secret in (served.token, forged, newer):
        assert secret not in log
        assert all(secret.encode() not in answer.body for answer in answers)
        for path in stored:
            assert secret not in path.read_text(encoding="utf-8") and secret not in path.name
    assert os.stat(served.run_dir / "server" / "server.log").st_mode & 0o777 == 0o600


def test_a_call_runs_only_with_its_own_launchs_environment(served: Served) -> None:
    """The starter's capability was stripped from the server, and a token registered
    without one cannot borrow the server's or another launch's: the call's child has
    exactly the registered environment."""
    call = {"jsonrpc": "2.0", "id": 9, "method": "tools/call",
            "params": {"name": "transition_claim", "arguments": {}}}
    answer = _post(served, call)
    assert answer.status == 200
    result = json.loads(answer.body)["result"]
    assert result["isError"] is True
    assert "no Switchboard capability in this environment" in result["content"][0]["text"]


def test_a_405_keeps_the_connection_for_the_next_post_unless_it_had_a_body(
        served: Served) -> None:
    """The MCP client sends its GET (the optional event stream) as it sends ``tools/list``;
    OpenCode's fetch could put that POST on the connection a 405 closed and fail it, and
    showed "Failed to get tools". A bodiless 405 keeps the connection: the POST sent on
    it right behind the GET is answered. A GET with a body (never read) is still closed."""
    get = "\r\n".join(["GET /mcp HTTP/1.1", f"Host: {served.host}",
                        f"Authorization: Bearer {served.token}",
                        "Accept: text/event-stream"]) + "\r\n\r\n"
    body = json.dumps(LIST).encode()
    post = "\r\n".join(["POST /mcp HTTP/1.1", f"Host: {served.host}",
                         f"Authorization: Bearer {served.token}",
                         "Content-Type: application/json", f"Content-Length: {len(body)}",
                         "Connection: close"]) + "\r\n\r\n"
    with socket.create_connection(("127.0.0.1", served.info.port), timeout=15) as sock, \
            sock.makefile("rb") as answers:
        sock.sendall(get.encode("latin-1") + post.encode("latin-1") + body)
        # Read from one buffer: both answers may arrive in one segment.
        refused = _next_answer(answers)
        assert refused.status == 405 and "connection" not in refused.headers
        listed = _next_answer(answers)
    assert listed.status == 200
    assert {tool["name"] for tool in json.loads(listed.body)["result"]["tools"]}

    with socket.create_connection(("127.0.0.1", served.info.port), timeout=15) as sock:
        sock.sendall(get.replace("\r\n\r\n", "\r\nContent-Length: 5\r\n\r\n")
                     .encode("latin-1") + b"hello")
        refused = _read_answer(sock)
        assert refused.status == 405 and refused.headers["connection"] == "close"
        assert sock.recv(1024) == b""


def test_get_is_405_and_a_notification_is_202_without_a_body(served: Served) -> None:
    get = _request(served.info.port, "\r\n".join([
        "GET /mcp HTTP/1.1", f"Host: {served.host}", f"Authorization: Bearer {served.token}",
        "Accept: text/event-stream", "Connection: close"]) + "\r\n")
    assert get.status == 405 and get.headers["allow"] == "POST" and len(get.lines) == 1
    note = _post(served, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert note.status == 202 and note.body == b""
    ready = served.session / "ready"
    assert not ready.exists()
    assert _post(served, LIST).status == 200
    assert ready.exists()  # the launch's "tools listed" marker, on its first tools/list


NOBODY = 65534


def test_another_users_connection_is_refused_even_with_a_valid_token(served: Served) -> None:
    """The attack: another local user holds a leaked token (say, read from a port it
    squatted while the server was down) and calls the agent tools with it. Performed as
    uid 65534 (this tier runs as root, so it can become another user)."""
    assert os.getuid() == 0, "this attack needs root to connect as another user"
    body = json.dumps(LIST).encode()
    request = (f"POST /mcp HTTP/1.1\r\nHost: {served.host}\r\nAuthorization: Bearer "
               f"{served.token}\r\nContent-Length: {len(body)}\r\nConnection: close\r\n"
               "\r\n").encode() + body
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the other user: drop to uid/gid 65534, then connect and ask
        code = 1
        try:
            os.close(read_end)
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            # (No name lookup: the other user cannot read this interpreter's codecs.)
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
                sock.settimeout(15)
                sock.connect(("127.0.0.1", served.info.port))
                sock.sendall(request)
                while chunk := sock.recv(65536):
                    os.write(write_end, chunk)
            code = 0
        except BaseException as exc:  # noqa: BLE001 - said on the pipe, the test shows it
            os.write(write_end, f"child failed: {exc!r}".encode())
        finally:
            os._exit(code)
    os.close(write_end)
    received = b""
    with os.fdopen(read_end, "rb") as reader:
        received = reader.read()
    _, status = os.waitpid(pid, 0)
    text = received.decode()
    assert os.waitstatus_to_exitcode(status) == 0, text
    head, _, answer = text.partition("\r\n\r\n")
    assert head.startswith("HTTP/1.1 403"), text
    assert answer.splitlines() == ["forbidden: a connection from another user is refused"]
    assert "tools" not in text
    assert f"refused a connection from uid {NOBODY}" in served.log()
    # The same request as this user goes through.
    assert _post(served, LIST).status == 200
