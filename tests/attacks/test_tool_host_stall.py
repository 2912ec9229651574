"""Attacks on the agent-tool host (``core.memory.mcp_host``): one client must cost only itself.

Issue 37 item 3: the host was single-threaded and blocked up to 30 s writing to a
client that never read (another agent's ping waited 27 s), and while a call ran it
buffered whatever the caller sent (300 MB: host RSS 14 -> 314 MB). Issue 37 item 10:
a shim that falls back to the full server lost the request it had in flight.

Every test runs the real host (``python -OO -m core.memory.mcp_host SOCKET``) or the
real compiled shim, and speaks to them over real unix sockets.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from core.config.capabilities import ENV_HOME
from core.memory.mcp_host import (
    AGENT_KEY,
    ENV_IDLE_EXIT,
    ENV_WRITE_STALL,
    MAX_CALLS_PER_AGENT,
    MAX_LINE_BYTES,
    OUTBOUND_MAX_BYTES,
    log_path,
)
from core.model.private_sockets import listen_private
from core.providers import agent_tools
from tests.core.test_mcp_server import REPO, base_env
from tests.core.test_mcp_shim import ShimProcess
from tests.waiting import retry_until

PING_LIMIT_S = 1.0
"""The brief's bound: another agent's ping answers within this while one misbehaves."""


def vm_rss_kib(pid: int) -> int:
    """The process's resident memory (``VmRSS`` of ``/proc/PID/status``), in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError(f"no VmRSS for {pid}")


class Client:
    """One raw connection to the host, speaking its protocol: the environment line first."""

    def __init__(self, path: Path, env: dict[str, str] | None = None) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(str(path))
        self.sock.sendall(json.dumps({"env": env or {}}).encode() + b"\n")
        self.pending = b""

    def send(self, message: dict[str, Any]) -> None:
        self.sock.sendall(json.dumps(message).encode() + b"\n")

    def answer(self, timeout: float) -> dict[str, Any]:
        self.sock.settimeout(timeout)
        while b"\n" not in self.pending:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise AssertionError("the host closed the connection")
            self.pending += chunk
        line, _, self.pending = self.pending.partition(b"\n")
        return json.loads(line)

    def ping_seconds(self, msg_id: int) -> float:
        """How long one ping took to be answered (fails past ``PING_LIMIT_S`` x 10)."""
        started = time.perf_counter()
        self.send({"jsonrpc": "2.0", "id": msg_id, "method": "ping"})
        answer = self.answer(PING_LIMIT_S * 10)
        assert answer == {"jsonrpc": "2.0", "id": msg_id, "result": {}}, answer
        return time.perf_counter() - started

    def closed_by_host(self, timeout: float) -> bool:
        """Whether the host has closed this connection (reading what it still had)."""
        self.sock.settimeout(0.2)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if not self.sock.recv(1 << 20):
                    return True
            except TimeoutError:
                continue
            except OSError:
                return True
        return False

    def close(self) -> None:
        self.sock.close()


class HostProcess:
    """The real host server on a socket of its own, its log beside it."""

    def __init__(self, run_dir: Path, write_stall: float) -> None:
        self.path = agent_tools.socket_path(run_dir)
        env = base_env(**{ENV_IDLE_EXIT: "1", ENV_WRITE_STALL: str(write_stall)})
        self.proc = subprocess.Popen(
            [sys.executable, "-OO", "-m", "core.memory.mcp_host", str(self.path)], cwd=REPO,
            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
        assert retry_until(self._listening, 20), "the host did not start listening"

    def _listening(self) -> bool:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
            try:
                probe.connect(str(self.path))
            except OSError:
                return False
        return True

    def log(self) -> str:
        path = log_path(self.path)
        return path.read_text() if path.exists() else ""

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "run"
    folder.mkdir(mode=0o700)
    return folder


@pytest.fixture
def host(run_dir: Path) -> Iterator[HostProcess]:
    """A host whose write stall is long: the tests below must pass without it."""
    server = HostProcess(run_dir, write_stall=120)
    yield server
    server.stop()


def _tools_list(msg_id: int) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": "tools/list"}).encode() + b"\n"


def _list_answer_bytes(host: HostProcess) -> int:
    probe = Client(host.path)
    try:
        probe.sock.sendall(_tools_list(1))
        return len(json.dumps(probe.answer(10), separators=(",", ":"))) + 1
    finally:
        probe.close()


def test_a_client_that_never_reads_does_not_delay_another(host: HostProcess) -> None:
    """The attack of the issue: a client asks for big answers and many pings and never
    reads them. Its answers fill its socket buffers (the old host then sat in
    ``sendall`` for up to 30 s); another agent's pings must still answer in < 1 s."""
    per_answer = _list_answer_bytes(host)
    hog = Client(host.path)
    # About 60 % of the outbound cap: far more than the socket buffers hold, so answers
    # wait in the host, and not enough to be dropped for it (this test is about delay).
    count = int(OUTBOUND_MAX_BYTES * 0.6 // per_answer)
    hog.sock.sendall(b"".join(_tools_list(i) for i in range(count)) + b"".join(
        json.dumps({"jsonrpc": "2.0", "id": f"p{i}", "method": "ping"}).encode() + b"\n"
        for i in range(2000)))
    other = Client(host.path)
    try:
        times = []
        for msg_id in range(10):
            times.append(other.ping_seconds(msg_id))
            time.sleep(0.2)
        assert max(times) < PING_LIMIT_S, times
        # The hog still holds its connection (nothing dropped it to make room)...
        assert not hog.closed_by_host(0.5)
        assert "dropped" not in host.log()
    finally:
        hog.close()
        other.close()


def test_unread_answers_past_the_cap_drop_only_that_client(host: HostProcess) -> None:
    hog = Client(host.path)
    per_answer = _list_answer_bytes(host)
    count = int(OUTBOUND_MAX_BYTES * 3 // per_answer)
    other = Client(host.path)
    try:
        sender = threading.Thread(target=lambda: _send_quietly(
            hog.sock, b"".join(_tools_list(i) for i in range(count))), daemon=True)
        sender.start()
        assert retry_until(lambda: "answers unread" in host.log(), 20), host.log()
        assert other.ping_seconds(1) < PING_LIMIT_S
        sender.join(20)
        assert f"it left more than {OUTBOUND_MAX_BYTES} bytes of answers unread" in host.log()
        assert stat.S_IMODE(log_path(host.path).stat().st_mode) == 0o600
        assert len(host.log().splitlines()) == 1  # one line, naming the reason
        assert hog.closed_by_host(10)
        assert host.proc.poll() is None
    finally:
        hog.close()
        other.close()


def test_a_client_that_stops_reading_is_dropped_after_the_stall(run_dir: Path) -> None:
    server = HostProcess(run_dir, write_stall=1)
    hog = Client(server.path)
    other = Client(server.path)
    try:
        per_answer = _list_answer_bytes(server)
        hog.sock.sendall(b"".join(_tools_list(i)
                                  for i in range(int(OUTBOUND_MAX_BYTES * 0.6 // per_answer))))
        assert retry_until(lambda: "read none of its answers for 1 s" in server.log(), 15), \
            server.log()
        assert hog.closed_by_host(10)
        assert other.ping_seconds(1) < PING_LIMIT_S  # the others were never touched
    finally:
        hog.close()
        other.close()
        server.stop()


def _stuck_call(client: Client, msg_id: int) -> None:
    """A call whose answer (an unknown-tool error quoting its 3 MB name) cannot be
    delivered while the client reads nothing: its child stays in flight."""
    client.send({"jsonrpc": "2.0", "id": msg_id, "method": "tools/call",
                 "params": {"name": "x" * (3 * 1024 * 1024)}})


def _children(pid: int) -> list[int]:
    return [int(child) for child in
            Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def test_one_agent_holds_only_its_share_of_the_call_slots(host: HostProcess) -> None:
    """An agent opening many connections, each with a call that never finishes, holds
    at most ``MAX_CALLS_PER_AGENT`` running calls; another agent's call still runs and
    answers at once (it never waits behind them)."""
    greedy = [Client(host.path, {AGENT_KEY: "greedy"})
              for _ in range(MAX_CALLS_PER_AGENT + 3)]
    other = Client(host.path, {AGENT_KEY: "other"})
    try:
        for msg_id, client in enumerate(greedy):
            _stuck_call(client, msg_id)
        assert retry_until(lambda: len(_children(host.proc.pid)) == MAX_CALLS_PER_AGENT, 20)
        time.sleep(0.5)
        assert len(_children(host.proc.pid)) == MAX_CALLS_PER_AGENT  # the rest wait
        started = time.perf_counter()
        other.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                    "params": {"name": "zzz"}})
        answer = other.answer(20)
        assert answer["error"]["message"] == "unknown tool: 'zzz'", answer
        assert time.perf_counter() - started < 10
        assert other.ping_seconds(2) < PING_LIMIT_S
        # A greedy connection that goes away frees its slot for a waiting one.
        before = set(_children(host.proc.pid))
        greedy[0].close()
        assert retry_until(lambda: len(_children(host.proc.pid)) == MAX_CALLS_PER_AGENT and
                           set(_children(host.proc.pid)) != before, 20)
    finally:
        for client in [*greedy, other]:
            client.close()
    assert retry_until(lambda: not _children(host.proc.pid), 20)


def _send_quietly(sock: socket.socket, data: bytes) -> None:
    with contextlib.suppress(OSError):
        sock.sendall(data)


def test_300_mb_without_a_newline_while_a_call_runs(host: HostProcess) -> None:
    """The second attack of the issue: while the attacker's own ``tools/call`` is in
    flight it sends a ping line and then 300 MB without a newline. The old host kept
    all of it (RSS +300 MB); now the line limit holds while the call runs: the
    attacker is dropped past 4 MiB, the host's memory stays bounded, others are served."""
    attacker = Client(host.path)
    other = Client(host.path)
    baseline = vm_rss_kib(host.proc.pid)
    _stuck_call(attacker, 1)
    attacker.send({"jsonrpc": "2.0", "id": 2, "method": "ping"})
    total = 300 * 1024 * 1024
    sent = [0]

    def flood() -> None:
        block = b"a" * (1024 * 1024)
        attacker.sock.settimeout(5)
        try:
            while sent[0] < total:
                sent[0] += attacker.sock.send(block)
        except OSError:
            return  # refused (dropped), or the host stopped reading: either way bounded

    flooder = threading.Thread(target=flood, daemon=True)
    flooder.start()
    peak = baseline
    times = []
    try:
        msg_id = 0
        while flooder.is_alive() and msg_id < 60:
            peak = max(peak, vm_rss_kib(host.proc.pid))
            msg_id += 1
            times.append(other.ping_seconds(msg_id))
            time.sleep(0.1)
        flooder.join(30)
        peak = max(peak, vm_rss_kib(host.proc.pid))
        assert not flooder.is_alive()
        assert peak - baseline < 48 * 1024, (baseline, peak, sent[0])
        assert sent[0] < 64 * 1024 * 1024, sent[0]  # the attacker could not push it all
        assert max(times) < PING_LIMIT_S, times
        assert f"a line longer than {MAX_LINE_BYTES} bytes" in host.log(), host.log()
        assert other.ping_seconds(1000) < PING_LIMIT_S
    finally:
        attacker.close()
        other.close()


def test_a_request_in_flight_survives_the_fall_back_to_the_full_server(
        tmp_path: Path, run_dir: Path) -> None:
    """A host that takes each request and closes without answering (as a crashing or
    refusing host does) makes the shim give up and exec the full server. The request
    it had in flight, and the one the client sent right behind it in the same write,
    must both be answered there; before, both were lost and the client waited."""
    path = agent_tools.socket_path(run_dir)
    listener = listen_private(path, 8)
    listener.settimeout(0.2)
    taken: list[bytes] = []
    stop = threading.Event()

    def swallow() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            with conn:
                conn.settimeout(5)
                received = b""
                with contextlib.suppress(OSError):
                    while received.count(b"\n") < 2:  # the environment, one request
                        chunk = conn.recv(65536)
                        if not chunk:
                            break
                        received += chunk
                taken.append(received.split(b"\n")[1])

    swallower = threading.Thread(target=swallow, daemon=True)
    swallower.start()
    shim = ShimProcess(base_env(**{ENV_HOME: str(tmp_path)}), run_dir)
    try:
        call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                "params": {"name": "transition_claim"}}
        ping = {"jsonrpc": "2.0", "id": 8, "method": "ping"}
        assert shim.proc.stdin is not None
        shim.proc.stdin.write(json.dumps(call).encode() + b"\n" + json.dumps(ping).encode() +
                              b"\n")
        shim.proc.stdin.flush()
        first, second = shim.reply(), shim.reply()
        assert first["id"] == 7 and first["result"]["isError"] is True, first
        assert "unauthorized" in first["result"]["content"][0]["text"], first
        assert second == {"jsonrpc": "2.0", "id": 8, "result": {}}
        assert len(taken) >= 2 and all(json.loads(line)["id"] == 7 for line in taken)
        assert shim.alive()  # the full server, in the shim's process, goes on serving
        fallback = Path(f"/proc/{shim.proc.pid}/cmdline").read_bytes()
        assert b"navigator.cli" in fallback and b"sb-mcp-shim" not in fallback
    finally:
        stop.set()
        shim.close()
        swallower.join(5)
        listener.close()


def test_the_full_server_reads_the_handed_over_lines_first_and_only_a_private_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``serve`` answers what the shim handed over before stdin, drops the variable (no
    tool's process inherits it), and ignores a variable naming anything but a regular
    file (a pipe here: it would otherwise read the agent's own input out of order)."""
    import io

    from core.agent.mcp_server import ENV_REPLAY_FD, serve

    handed = tmp_path / "handed"
    handed.write_bytes(b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n{"jsonrpc":"2.0",')
    fd = os.open(handed, os.O_RDONLY)
    monkeypatch.setenv(ENV_REPLAY_FD, str(fd))
    out = io.BytesIO()
    serve(io.BytesIO(b'"id":2,"method":"ping"}\n'), out, ready_file="")
    assert [json.loads(line)["id"] for line in out.getvalue().splitlines()] == [1, 2]
    assert ENV_REPLAY_FD not in os.environ
    with pytest.raises(OSError):
        os.fstat(fd)  # read and closed

    read_end, write_end = os.pipe()
    os.write(write_end, b'{"jsonrpc":"2.0","id":3,"method":"ping"}\n')
    monkeypatch.setenv(ENV_REPLAY_FD, str(read_end))
    out = io.BytesIO()
    serve(io.BytesIO(b'{"jsonrpc":"2.0","id":4,"method":"ping"}\n'), out, ready_file="")
    assert [json.loads(line)["id"] for line in out.getvalue().splitlines()] == [4]
    assert ENV_REPLAY_FD not in os.environ
    os.close(read_end)
    os.close(write_end)
