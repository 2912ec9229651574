"""The agent-tool shim and its host server, end to end (issue 25).

The compiled shim (``core/providers/mcp_shim.c``) is what an agent's CLI starts; it
forwards to one host server per home (``core.memory.mcp_host``) over a 0600 unix
socket. Checked here as real processes: the same answers as ``switchboard mcp`` for
the same lines, each agent's own capability deciding what it may do (two agents on
one host), a host killed mid-session replaced without the client noticing, the host
gone once no shim is left, and the launch's MCP config naming the shim.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import stat
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.config.capabilities import ENV_CAPABILITY, ENV_GENERATION, ENV_HOME
from core.memory.mcp_host import ENV_IDLE_EXIT, lock_path
from core.model.tool_schemas import ENV_READY_FILE, TOOLS
from core.providers import agent_tools
from tests.core.test_hook_handler import LiveSurface, launch_live_surface
from tests.core.test_mcp_server import (
    REPO,
    McpProcess,
    base_env,
    error_text,
    ok_output,
    pane_env,
)
from tests.waiting import retry_until

FULL = agent_tools.FULL_SERVER_TAIL


def shim_argv(run_dir: Path) -> tuple[str, ...]:
    import sys

    argv = agent_tools.agent_tool_argv(run_dir, (sys.executable, *FULL))
    assert Path(argv[0]).name.startswith("sb-mcp-shim-"), argv  # a C compiler is set up
    return argv


class ShimProcess(McpProcess):
    """``McpProcess`` speaking to the shim instead of ``switchboard mcp``."""

    def __init__(self, env: dict[str, str], run_dir: Path) -> None:  # noqa: D107
        self.argv = shim_argv(run_dir)
        self.proc = subprocess.Popen(
            list(self.argv), cwd=REPO, env=env,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        import queue
        import threading
        from itertools import count

        self.replies = queue.Queue()
        self.ids = count(1)
        threading.Thread(target=self._pump, daemon=True).start()


def host_pids(socket: Path) -> list[int]:
    """The host servers listening on ``socket`` (their command line names it); a call's
    forked child, which has the same command line, is not one."""
    found: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"core.memory.mcp_host" in argv and os.fsencode(socket) in argv:
            with contextlib.suppress(OSError, ValueError):
                stat_line = (entry / "stat").read_text()
                found[int(entry.name)] = int(stat_line.rsplit(")", 1)[1].split()[1])
    return [pid for pid, parent in found.items() if parent not in found]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv(ENV_IDLE_EXIT, "1")
    run_dir = tmp_path / "run"
    run_dir.mkdir(mode=0o700)
    yield tmp_path
    socket = agent_tools.socket_path(run_dir)
    assert retry_until(lambda: not host_pids(socket), 20), "the host outlived its shims"


def test_same_answers_as_switchboard_mcp(home: Path) -> None:
    lines = [b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":'
             b'{"protocolVersion":"2024-11-05"}}',
             b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
             b'{"jsonrpc":"2.0","id":2,"method":"tools/list"}',
             b'not json', b'[1, 2]', b'{"jsonrpc":"2.0","id":3,"method":"nope"}',
             b'{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"transition_claim"}}',
             b'{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"zzz"}}',
             b'{"jsonrpc":"2.0","id":6,"method":"ping"}']
    env = base_env(**{ENV_HOME: str(home)})
    answers = []
    for server in (McpProcess(env), ShimProcess(env, home / "run")):
        try:
            got = []
            for line in lines:
                server.send_raw(line)
                if b"notifications/" not in line:
                    got.append(server.reply())
            answers.append(got)
        finally:
            server.close()
    assert answers[0] == answers[1]
    assert [tool["name"] for tool in answers[1][1]["result"]["tools"]] == \
        [tool["name"] for tool in TOOLS]
    assert error_text(answers[1][5]["result"]).startswith("unauthorized: no Switchboard "
                                                          "capability")


def test_oversized_line_is_refused_and_the_shim_keeps_serving(home: Path) -> None:
    server = ShimProcess(base_env(**{ENV_HOME: str(home)}), home / "run")
    try:
        server.send_raw(b'{"x":"' + b"a" * (4 * 1024 * 1024 + 10) + b'"}')
        answer = server.reply()
        assert answer["id"] is None and answer["error"]["code"] == -32600
        assert server.alive()
    finally:
        server.close()


def test_ready_file_and_a_killed_host_is_replaced(home: Path, tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    env = base_env(**{ENV_HOME: str(home), ENV_READY_FILE: str(ready)})
    server = ShimProcess(env, home / "run")
    socket = agent_tools.socket_path(home / "run")
    try:
        started = time.perf_counter()
        server.request("initialize", {"protocolVersion": "2025-06-18"})
        assert server.request("tools/list")["result"]["tools"]
        first_list = time.perf_counter() - started
        assert retry_until(ready.exists, 5)
        assert stat.S_IMODE(socket.stat().st_mode) == 0o600
        assert stat.S_IMODE(lock_path(socket).stat().st_mode) == 0o600
        [host] = host_pids(socket)
        os.kill(host, signal.SIGKILL)
        assert retry_until(lambda: host not in host_pids(socket), 10)
        assert server.alive()  # the shim started another host and asked again
        [again] = host_pids(socket)
        assert again != host
        assert first_list < 10  # the bench prints the real figure beside today's
    finally:
        server.close()


def test_two_agents_one_host_each_with_its_own_authority(
        tmp_path: Path, tmux_socket: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_HOME, str(tmp_path))
    # Long enough that a loaded machine's pause between two calls does not end the host
    # (a second one then starts while the first exits: two pids for a moment).
    monkeypatch.setenv(ENV_IDLE_EXIT, "8")
    for name in ("TMUX", "TMUX_PANE", ENV_CAPABILITY, ENV_GENERATION):
        monkeypatch.delenv(name, raising=False)
    live: LiveSurface = launch_live_surface(tmp_path, tmux_socket)
    run_dir = live.engine.home.run_dir
    socket = agent_tools.socket_path(run_dir)
    mine = ShimProcess(pane_env(live), run_dir)
    foreign = ShimProcess(pane_env(live, TMUX_PANE="%999"), run_dir)
    try:
        claim = ok_output(mine.call("transition_claim"))
        assert claim["ok"] is True and claim["kind"] == "none"
        assert error_text(foreign.call("transition_claim")).startswith(
            "unauthorized: capability is bound to another pane")
        pushed = ok_output(mine.call("task_push", {"title": "Fix", "brief": "Make it pass"}))
        assert pushed["child_frame_id"]
        assert error_text(foreign.call("task_push", {"title": "t", "brief": "b"})).startswith(
            "unauthorized:")
        assert len(host_pids(socket)) == 1  # one host served both
        # The launch itself wrote the shim into the agent's MCP config.
        config = next(run_dir.glob("*/claude-mcp.json"))
        server = json.loads(config.read_text())["mcpServers"]["switchboard"]
        assert Path(server["command"]).name.startswith("sb-mcp-shim-")
        assert server["args"][-2:] == ["navigator.cli", "mcp"]
    finally:
        mine.close()
        foreign.close()
        live.engine.conn.close()
        # the agent (and so its own shim) goes with its tmux server; then the host
        subprocess.run(["tmux", "-S", str(tmux_socket), "kill-server"], capture_output=True)
    assert retry_until(lambda: not host_pids(socket), 40)


def test_without_a_compiler_the_full_server_is_started(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    full = (sys.executable, *FULL)
    monkeypatch.setenv(agent_tools.ENV_SHIM, "off")
    assert agent_tools.agent_tool_argv(tmp_path, full) == full
    monkeypatch.delenv(agent_tools.ENV_SHIM)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # nothing built yet
    monkeypatch.setenv("PATH", str(tmp_path))  # no cc, no gcc
    monkeypatch.setenv("CC", "no-such-compiler")
    assert agent_tools.agent_tool_argv(tmp_path / "other", full) == full
    stand_in = ("/bin/sh", "-c", "exec python -m navigator.cli mcp")
    assert agent_tools.agent_tool_argv(tmp_path, stand_in) == stand_in
