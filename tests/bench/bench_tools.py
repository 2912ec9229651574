"""Agent-tool benchmark: the first tool call after a launch, and tool-call p50/p95.

Run: ``python -m tests.bench.bench_tools [--calls 30] [--firsts 5]``.

One real registry (private tmux server, one launched and bound fake-Claude frame and a
capability minted for the benchmark) is set up once, as ``bench_hook`` does. A token is
registered with the launch's tool environment exactly as a launch registers it
(``core.runtime.launcher._agent_endpoint``), and every request goes over loopback HTTP
to the home's ``switchboard server`` with that bearer token, as Claude and Codex send it.
The tool is ``switchboard_current``: read-only and cheap, but it authenticates the
capability and opens the registry like every tool.

Series (milliseconds):
- first tool call after launch: what a launch and its agent do, until the answer is
  read: start the server (when none runs) and register the token meanwhile, wait for
  its port, ``initialize``, ``tools/list``, one ``tools/call``; once with no server
  running (it was stopped) and once with it running (a later launch of the home);
- ``tools/call``: N calls one after another on a running server;
- floors measured in the same run: ``python -c pass`` started by this process, a bare
  HTTP round trip (``ping``, answered inside the server), and ``python -m
  core.server.call`` run directly with the same environment and message (the per-call
  process without HTTP).

"Today" in issue 38 is the transport before it (a C shim per agent and a unix-socket
host that forked per call), deleted in commit c7da969. With ``--old-tree DIR`` (default
``/tmp/oldtools``: ``git worktree add --detach /tmp/oldtools c7da969~1``) the same
series run there too, in a child process whose imports resolve to that tree
(``PYTHONPATH``): its own registry and launch, the shim compiled with ``cc``, the shim
started as the agent's CLI started it (stdio lines), first call with no host running.
The child is driven a step at a time, so the two transports' series interleave (a
round of first calls each, who goes first alternating; then five calls each in turn):
on a shared machine whose load moves, both see the same load. Without that tree the
old transport is not measured and the run says so.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from core.config.capabilities import ENV_CAPABILITY, ENV_GENERATION
from core.config.home import ENV_CONFIG, ENV_HOME, Home
from tests.bench.bench_hook import installed_bytecode
from tests.core.test_hook_handler import LiveSurface, launch_live_surface

REPO = Path(__file__).resolve().parents[2]
TOOL = "switchboard_current"
OLD_TREE = Path("/tmp/oldtools")
"""``git worktree add --detach /tmp/oldtools c7da969~1``: the shim and unix host."""
INITIALIZE = {"protocolVersion": "2025-06-18", "capabilities": {},
              "clientInfo": {"name": "bench", "version": "0"}}


@dataclass
class Series:
    name: str
    samples: list[float] = field(default_factory=list)

    def timed(self, action: Callable[[], object]) -> None:
        start = time.perf_counter()
        action()
        self.samples.append((time.perf_counter() - start) * 1000)

    def line(self) -> str:
        ordered = sorted(self.samples)
        p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
        return (f"  {self.name:<44} p50 {statistics.median(ordered):7.1f} ms  "
                f"p95 {p95:7.1f} ms  (n={len(ordered)})")


@dataclass
class Client:
    """One agent's HTTP MCP connection: its URL's port and its bearer token."""

    port: int
    token: str
    next_id: int = 1

    def post(self, method: str, params: dict | None = None) -> dict:
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": method,
                   "params": params or {}}
        self.next_id += 1
        body = json.dumps(message).encode()
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        try:
            conn.request("POST", "/mcp", body=body, headers={
                "Authorization": f"Bearer {self.token}", "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream"})
            answer = conn.getresponse()
            data = answer.read()
        finally:
            conn.close()
        if answer.status != 200:
            raise SystemExit(f"{method}: HTTP {answer.status}: {data[:300]!r}")
        reply = json.loads(data)
        if "result" not in reply or reply["result"].get("isError"):
            raise SystemExit(f"{method} failed: {data[:500]!r}")
        return reply["result"]

    def tool(self) -> dict:
        return self.post("tools/call", {"name": TOOL, "arguments": {}})


def _launch(home: Home, session: Path, tool_env: dict[str, str]) -> Client:
    """What a launch does for its agent tools (``core.runtime.launcher._agent_endpoint``):
    the server started when none runs, a token registered with the launch's tool
    environment meanwhile, then the server's port."""
    from core.model.tool_schemas import ENV_READY_FILE
    from core.providers import agent_http

    starting = agent_http.start_server(home.run_dir, home.child_env())
    env = {**tool_env, ENV_READY_FILE: str(session / "ready")}
    token = agent_http.register_token(home.run_dir, session, env)
    return Client(starting.wait().port, token)


def _first_call(home: Home, session: Path, tool_env: dict[str, str]) -> None:
    client = _launch(home, session, tool_env)
    client.post("initialize", INITIALIZE)
    client.post("tools/list")
    client.tool()


def _direct(env: dict[str, str]) -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                       "params": {"name": TOOL, "arguments": {}}}).encode()
    done = subprocess.run([sys.executable, "-m", "core.server.call"], input=body, env=env,
                          cwd=REPO, capture_output=True, check=True)
    if b'"isError":false' not in done.stdout:
        raise SystemExit(f"core.server.call failed: {done.stdout[:500]!r} "
                         f"{done.stderr[-500:]!r}")


def _surface(prefix: str) -> tuple[Path, dict[str, str], LiveSurface, Home]:
    """A fresh home with one launched, bound fake-Claude frame and its capability."""
    folder = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    root = folder / "home"
    root.mkdir()
    ours = ("TMUX", "TMUX_PANE", ENV_CAPABILITY, ENV_GENERATION, ENV_HOME, ENV_CONFIG)
    base_env = {k: v for k, v in os.environ.items() if k not in ours}
    for name in ours:
        os.environ.pop(name, None)
    os.environ[ENV_HOME] = str(root)
    live = launch_live_surface(root, folder / "tmux.sock")
    return folder, base_env, live, Home(root=root, config_path=root / "config.toml")


def _floor_python() -> None:
    subprocess.run([sys.executable, "-c", "pass"], check=True)


class HttpBench:
    """This tree's transport: the home's server over loopback HTTP."""

    def __init__(self) -> None:
        installed_bytecode()
        self.folder, base_env, self.live, self.home = _surface("sbbench-tools-")
        self.tool_env = {**self.live.env(), **self.home.child_env()}
        self.session = self.home.run_dir / "bench-session"
        self.session.mkdir(mode=0o700, exist_ok=True)
        self.call_env = {**base_env, **self.tool_env, "PYTHONPATH": str(REPO)}
        self.first, self.again = Series("first tool call after launch (cold server)"), \
            Series("first tool call after launch (server running)")
        self.floor_py, self.floor_http, self.direct, self.tools = (Series(n) for n in (
            "floor: python -c pass", "floor: HTTP round trip (ping in the server)",
            "python -m core.server.call (no HTTP)", f"tools/call {TOOL} over HTTP"))
        self.client: Client | None = None

    def firsts(self) -> None:
        """One first call with no server running (it is stopped), one with it running."""
        from core.server.main import stop_server

        stop_server(self.home.run_dir)
        self.first.timed(lambda: _first_call(self.home, self.session, self.tool_env))
        self.again.timed(lambda: _first_call(self.home, self.session, self.tool_env))

    def calls(self, count: int) -> None:
        if self.client is None:
            self.client = _launch(self.home, self.session, self.tool_env)
            self.client.post("tools/list")
            for _ in range(3):  # warm-up: page cache
                self.client.tool()
                _direct(self.call_env)
        client = self.client
        for _ in range(count):  # interleaved: load drift hits every series alike
            self.floor_py.timed(_floor_python)
            self.floor_http.timed(lambda: client.post("ping"))
            self.direct.timed(lambda: _direct(self.call_env))
            self.tools.timed(client.tool)

    def series(self) -> list[Series]:
        return [self.floor_py, self.floor_http, self.direct, self.tools, self.first,
                self.again]

    def close(self) -> None:
        from core.server.main import stop_server

        self.live.engine.conn.close()
        stop_server(self.home.run_dir)
        subprocess.run(["tmux", "-S", str(self.folder / "tmux.sock"), "kill-server"],
                       capture_output=True)


@dataclass
class ShimAgent:
    """One agent's stdio MCP server as its CLI started it before c7da969: the shim."""

    process: subprocess.Popen[bytes]
    next_id: int = 1

    def post(self, method: str, params: dict | None = None) -> dict:
        assert self.process.stdin is not None and self.process.stdout is not None
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": method,
                   "params": params or {}}
        self.next_id += 1
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        reply = json.loads(line) if line else {}
        if "result" not in reply or reply["result"].get("isError"):
            raise SystemExit(f"old transport: {method} failed: {line[:500]!r}")
        return reply["result"]

    def tool(self) -> dict:
        return self.post("tools/call", {"name": TOOL, "arguments": {}})

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(10)


class ShimBench:
    """The same series on the shim + unix host (run in the old tree's imports)."""

    def __init__(self) -> None:
        from core.providers import agent_tools  # the old tree's (deleted in c7da969)

        installed_bytecode()
        self.folder, base_env, self.live, home = _surface("sbbench-oldtools-")
        self.tool_env = {**base_env, **self.live.env(), **home.child_env(),
                         "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
        shim = agent_tools.shim_binary(home.run_dir)
        if shim is None:
            raise SystemExit("old transport: the shim could not be compiled (no cc?)")
        self.host_socket = agent_tools.socket_path(home.run_dir)
        self.argv = [str(shim), str(self.host_socket), sys.executable, "-m", "navigator.cli",
                     "mcp"]
        self.first, self.again = Series("first tool call after launch (no host)"), \
            Series("first tool call after launch (host running)")
        self.floor_py, self.floor_rt, self.tools = (Series(n) for n in (
            "floor: python -c pass", "floor: round trip (ping in the host)",
            f"tools/call {TOOL} through the shim"))
        self.agent: ShimAgent | None = None

    def _start(self) -> ShimAgent:
        return ShimAgent(subprocess.Popen(self.argv, stdin=subprocess.PIPE,
                                          stdout=subprocess.PIPE, env=self.tool_env))

    def _no_host(self) -> None:
        """Remove the socket (the host leaves at once) and wait until it has gone."""
        with contextlib.suppress(FileNotFoundError):
            self.host_socket.unlink()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and subprocess.run(
                ["pgrep", "-f", f"core.memory.mcp_host {self.host_socket}"],
                capture_output=True).returncode == 0:
            time.sleep(0.02)

    def _first_call(self) -> None:
        agent = self._start()
        agent.post("initialize", INITIALIZE)
        agent.post("tools/list")
        agent.tool()
        agent.close()

    def firsts(self) -> None:
        if self.agent is not None:
            self.agent.close()
            self.agent = None
        self._no_host()
        self.first.timed(self._first_call)
        keep = self._start()  # another agent's shim keeps the host up meanwhile
        keep.post("ping")
        self.again.timed(self._first_call)
        keep.close()

    def calls(self, count: int) -> None:
        if self.agent is None:
            self.agent = self._start()
            self.agent.post("tools/list")
            for _ in range(3):
                self.agent.tool()
        agent = self.agent
        for _ in range(count):
            self.floor_py.timed(_floor_python)
            self.floor_rt.timed(lambda: agent.post("ping"))
            self.tools.timed(agent.tool)

    def series(self) -> list[Series]:
        return [self.floor_py, self.floor_rt, self.tools, self.first, self.again]

    def close(self) -> None:
        if self.agent is not None:
            self.agent.close()
        self.live.engine.conn.close()
        self._no_host()
        subprocess.run(["tmux", "-S", str(self.folder / "tmux.sock"), "kill-server"],
                       capture_output=True)


def _serve_old() -> int:
    """The child of ``OldTree``: a ``ShimBench`` driven by lines on stdin (``firsts``,
    ``calls N``), each answered with one line; the series as JSON at end of input."""
    bench = ShimBench()
    print("ready", flush=True)
    try:
        for line in sys.stdin:
            what, _, count = line.strip().partition(" ")
            if what == "firsts":
                bench.firsts()
            else:
                bench.calls(int(count))
            print("done", flush=True)
        print(json.dumps([(one.name, one.samples) for one in bench.series()]), flush=True)
    finally:
        bench.close()
    return 0


class OldTree:
    """The old transport's bench in a child whose imports are the old tree's, driven a
    step at a time so its series interleave with this tree's (same load for both)."""

    def __init__(self, tree: Path) -> None:
        env = {**os.environ, "PYTHONPATH": str(tree)}
        self.process = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--as-old"], cwd=tree, env=env,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self._expect("ready")

    def _expect(self, word: str) -> None:
        assert self.process.stdout is not None
        line = self.process.stdout.readline().strip()
        if line != word:
            assert self.process.stderr is not None
            self.process.kill()
            raise SystemExit(f"the old-tree run failed: {self.process.stderr.read()[-600:]}")

    def _step(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()
        self._expect("done")

    def firsts(self) -> None:
        self._step("firsts")

    def calls(self, count: int) -> None:
        self._step(f"calls {count}")

    def series(self) -> list[Series]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.close()
        found = json.loads(self.process.stdout.readline())
        self.process.wait(60)
        return [Series(name, samples) for name, samples in found]


def _old_tree(tree: Path) -> OldTree | str:
    """The old transport's bench, or why it is not measured."""
    if not (tree / "core" / "providers" / "mcp_shim.c").is_file():
        return (f"{tree} is not a tree of c7da969~1 (git worktree add --detach {tree} "
                "c7da969~1)")
    return OldTree(tree)


CALLS_PER_STEP = 5
"""Calls of one transport before the other's: the two interleave through the run."""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=30)
    parser.add_argument("--firsts", type=int, default=5)
    parser.add_argument("--old-tree", type=Path, default=OLD_TREE)
    parser.add_argument("--as-old", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.as_old:
        return _serve_old()
    load = os.getloadavg()[0]
    old = _old_tree(args.old_tree)
    http = HttpBench()
    benches: list[HttpBench | OldTree] = [http]
    if not isinstance(old, str):
        benches.append(old)
    try:
        for round_ in range(args.firsts):  # who goes first alternates round by round
            for bench in benches[::-1] if round_ % 2 else benches:
                bench.firsts()
        for done in range(0, args.calls, CALLS_PER_STEP):
            for bench in benches:
                bench.calls(min(CALLS_PER_STEP, args.calls - done))
        results = [bench.series() for bench in benches]
    finally:
        http.close()
    print(f"load average {load:.1f} at the start, {os.getloadavg()[0]:.1f} at the end; "
          "the two transports interleaved")
    print("agent tools over HTTP, this tree:")
    for one in results[0]:
        print(one.line())
    print(f"today: shim + unix host, {args.old_tree}:")
    if isinstance(old, str):
        print(f"  not measured: {old}")
        print("  docs/decisions.md records the host's per-call fork at ~70 ms")
        return 0
    for one in results[1]:
        print(one.line())
    return 0


if __name__ == "__main__":
    sys.exit(main())
