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
  read: start the server (when none runs), register the token, ``initialize``,
  ``tools/list``, one ``tools/call``; once with no server running (it was stopped) and
  once with it running (a later launch of the home);
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
Without that tree the old transport is not measured and the run says so.
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
    """What a launch does for its agent tools: the server (started when none runs) and a
    token registered with the launch's tool environment."""
    from core.model.tool_schemas import ENV_READY_FILE
    from core.providers import agent_http

    info = agent_http.ensure_server(home.run_dir, home.child_env())
    env = {**tool_env, ENV_READY_FILE: str(session / "ready")}
    return Client(info.port, agent_http.register_token(home.run_dir, session, env))


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


def run(calls: int, firsts: int) -> list[Series]:
    from core.server.main import stop_server

    installed_bytecode()
    folder, base_env, live, home = _surface("sbbench-tools-")
    socket = folder / "tmux.sock"
    tool_env = {**live.env(), **home.child_env()}
    session = home.run_dir / "bench-session"
    session.mkdir(mode=0o700, exist_ok=True)
    call_env = {**base_env, **tool_env, "PYTHONPATH": str(REPO)}
    try:
        first, again = Series("first tool call after launch (cold server)"), \
            Series("first tool call after launch (server running)")
        for _ in range(firsts):
            stop_server(home.run_dir)
            first.timed(lambda: _first_call(home, session, tool_env))
            again.timed(lambda: _first_call(home, session, tool_env))
        client = _launch(home, session, tool_env)
        client.post("tools/list")
        for _ in range(3):  # warm-up: page cache
            client.tool()
            _direct(call_env)
        floor_py, floor_http, direct, tools = (Series(n) for n in (
            "floor: python -c pass", "floor: HTTP round trip (ping in the server)",
            "python -m core.server.call (no HTTP)", f"tools/call {TOOL} over HTTP"))
        for _ in range(calls):  # interleaved: load drift hits every series alike
            floor_py.timed(lambda: subprocess.run([sys.executable, "-c", "pass"], check=True))
            floor_http.timed(lambda: client.post("ping"))
            direct.timed(lambda: _direct(call_env))
            tools.timed(client.tool)
        return [floor_py, floor_http, direct, tools, first, again]
    finally:
        live.engine.conn.close()
        stop_server(home.run_dir)
        subprocess.run(["tmux", "-S", str(socket), "kill-server"], capture_output=True)


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


def run_old(calls: int, firsts: int) -> list[Series]:
    """The same series on the shim + unix host (run in the old tree's imports)."""
    from core.providers import agent_tools  # the old tree's (deleted in c7da969)

    installed_bytecode()
    folder, base_env, live, home = _surface("sbbench-oldtools-")
    tool_env = {**base_env, **live.env(), **home.child_env(),
                "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
    shim = agent_tools.shim_binary(home.run_dir)
    if shim is None:
        raise SystemExit("old transport: the shim could not be compiled (no cc?)")
    host_socket = agent_tools.socket_path(home.run_dir)
    argv = [str(shim), str(host_socket), sys.executable, "-m", "navigator.cli", "mcp"]

    def start() -> ShimAgent:
        return ShimAgent(subprocess.Popen(argv, stdin=subprocess.PIPE,
                                          stdout=subprocess.PIPE, env=tool_env))

    def no_host() -> None:
        """Remove the socket (the host leaves at once) and wait until it has gone."""
        with contextlib.suppress(FileNotFoundError):
            host_socket.unlink()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and subprocess.run(
                ["pgrep", "-f", f"core.memory.mcp_host {host_socket}"],
                capture_output=True).returncode == 0:
            time.sleep(0.02)

    def first_call() -> None:
        agent = start()
        agent.post("initialize", INITIALIZE)
        agent.post("tools/list")
        agent.tool()
        agent.close()

    try:
        first, again = Series("first tool call after launch (no host)"), \
            Series("first tool call after launch (host running)")
        for _ in range(firsts):
            no_host()
            first.timed(first_call)
            keep = start()  # another agent's shim keeps the host up meanwhile
            keep.post("ping")
            again.timed(first_call)
            keep.close()
        agent = start()
        agent.post("tools/list")
        for _ in range(3):
            agent.tool()
        floor_py, floor_rt, tools = (Series(n) for n in (
            "floor: python -c pass", "floor: round trip (ping in the host)",
            f"tools/call {TOOL} through the shim"))
        for _ in range(calls):
            floor_py.timed(lambda: subprocess.run([sys.executable, "-c", "pass"], check=True))
            floor_rt.timed(lambda: agent.post("ping"))
            tools.timed(agent.tool)
        agent.close()
        return [floor_py, floor_rt, tools, first, again]
    finally:
        live.engine.conn.close()
        no_host()
        subprocess.run(["tmux", "-S", str(folder / "tmux.sock"), "kill-server"],
                       capture_output=True)


def _old_series(tree: Path, calls: int, firsts: int) -> list[Series] | str:
    """The old transport's series from a child whose imports are the old tree's; or why not."""
    if not (tree / "core" / "providers" / "mcp_shim.c").is_file():
        return (f"{tree} is not a tree of c7da969~1 (git worktree add --detach {tree} "
                "c7da969~1)")
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--as-old",
                           "--calls", str(calls), "--firsts", str(firsts)],
                          cwd=tree, env=env, capture_output=True, timeout=900)
    if done.returncode != 0:
        return f"the old-tree run failed: {done.stderr.decode()[-600:]}"
    return [Series(name, samples) for name, samples in json.loads(done.stdout)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=30)
    parser.add_argument("--firsts", type=int, default=5)
    parser.add_argument("--old-tree", type=Path, default=OLD_TREE)
    parser.add_argument("--as-old", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.as_old:  # the child of _old_series: figures as JSON on stdout
        print(json.dumps([(one.name, one.samples) for one in run_old(args.calls,
                                                                      args.firsts)]))
        return 0
    load = os.getloadavg()[0]
    series = run(args.calls, args.firsts)
    old = _old_series(args.old_tree, args.calls, args.firsts)
    print(f"agent tools over HTTP, this tree (load average {load:.1f}):")
    for one in series:
        print(one.line())
    print(f"today: shim + unix host, {args.old_tree} (load average {os.getloadavg()[0]:.1f}):")
    if isinstance(old, str):
        print(f"  not measured: {old}")
        print("  docs/decisions.md records the host's per-call fork at ~70 ms")
        return 0
    for one in old:
        print(one.line())
    return 0


if __name__ == "__main__":
    sys.exit(main())
