"""Memory benchmark (issue 25): parked navigators and the shared agent-tool server.

Run: ``python -m tests.bench.bench_memory [--views 20] [--agents 10] [--small 8x2]``
(``SB_BENCH_MEMORY=5x2`` for a quick run of the large fleet).

Two fleets on private tmux servers with real registries, real ``switchboard ui``
navigators, live fake Claude agents (each starts its agent-tool server from the
launch's MCP config, as Claude Code does) and one real ``tmux attach`` at 80x24
looking at one view. Each fleet is measured twice in the same run: *before*
(``SWITCHBOARD_PARK_AFTER=off``, ``SWITCHBOARD_MCP_SHIM=off``: every navigator runs
and every agent has its own ``switchboard mcp``, as before issue 25) and *after*
(parking after 2 s, through the navigators' own reconcile turns; the shim).

Counted: every process Switchboard starts, found by walking ``/proc`` from the tmux
server (its panes and everything under them) plus the agent-tool host server
(detached on purpose); the fake agents themselves and tmux are "the agents and
tmux" and are left out. RSS is summed per process (shared library pages count in
each, as the issue's figures did); PSS is printed beside it.

Figures, each beside its target:
- large fleet (``--views`` x ``--agents``): all navigators' RSS with one view looked at;
- small fleet (``--small``): everything Switchboard runs beside the agents and tmux;
  largest agent-tool process RSS;
- wake: a client shows a parked view: time until its pane shows a screen again, and
  until the navigator app has painted (its alternate screen with the Views panel),
  over ``--wakes`` wakes (each a cold ``switchboard ui``); the navigators' RSS after
  the wakes;
- first ``tools/list``: ``switchboard mcp`` today against the shim with no host
  running (it starts one) and with one running; median of 5 each.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

from core.config.config import ProviderConfig, TmuxConfig
from core.config.home import ENV_HOME, Home
from core.config.registry import init_registry
from core.context.requests import new_request_id
from core.engine.open import open_engine
from core.memory import parking
from core.model.enums import Provider
from core.providers import agent_tools
from core.runtime.claims import claim_for_frame
from tests.bench.bench_hook import hook_commands, installed_bytecode, recorded
from tests.factories import project_config
from tests.integration.test_terminal_sizes import Terminal
from tests.integration.transitions_env import pane_env, pane_of, quiet_provider_command, session_of
from tests.waiting import retry_until

REPO = Path(__file__).resolve().parents[2]
AGENT_MARK = b"core.providers.fake.agent"
HOST_MARK = b"core.memory.mcp_host"
NAVIGATOR_MARKS = (b"navigator.cli",)
MCP_MARKS = (b"navigator.cli\0mcp", b"sb-mcp-shim")


def _verdict(value: float, target: float) -> str:
    return f"target <= {target:g}: {'OK' if value <= target else 'OVER'}"


@dataclass
class Proc:
    pid: int
    ppid: int
    argv: bytes
    rss_mb: float
    pss_mb: float


def _processes() -> dict[int, Proc]:
    found: dict[int, Proc] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            base = Path("/proc", entry)
            ppid = int((base / "stat").read_text().rsplit(")", 1)[1].split()[1])
            argv = (base / "cmdline").read_bytes()
            rss = pss = 0.0
            for line in (base / "smaps_rollup").read_text().splitlines():
                if line.startswith("Rss:"):
                    rss = int(line.split()[1]) / 1024
                elif line.startswith("Pss:"):
                    pss = int(line.split()[1]) / 1024
        except (OSError, ValueError, IndexError):
            continue
        found[int(entry)] = Proc(int(entry), ppid, argv, rss, pss)
    return found


@dataclass
class Census:
    """Switchboard's processes of one fleet, by kind."""

    navigators: list[Proc] = field(default_factory=list)
    agent_tools: list[Proc] = field(default_factory=list)
    other: list[Proc] = field(default_factory=list)

    def rss(self, kind: list[Proc]) -> float:
        return sum(p.rss_mb for p in kind)

    @property
    def everything(self) -> list[Proc]:
        return self.navigators + self.agent_tools + self.other


def census(server_pid: int, socket: Path) -> Census:
    """Every process under the tmux server, and the host server of this fleet's home."""
    procs = _processes()
    children: dict[int, list[int]] = {}
    for proc in procs.values():
        children.setdefault(proc.ppid, []).append(proc.pid)
    result = Census()
    seen: set[int] = set()

    def walk(pid: int) -> Iterator[int]:
        for child in children.get(pid, []):
            if child not in seen:
                seen.add(child)
                yield child
                yield from walk(child)

    mine = list(walk(server_pid))
    host_socket = os.fsencode(agent_tools.socket_path(socket.parent / "home" / "run"))
    for proc in procs.values():
        if HOST_MARK in proc.argv and host_socket in proc.argv:
            mine.append(proc.pid)
            mine.extend(walk(proc.pid))
    for pid in mine:
        proc = procs.get(pid)
        if proc is None or proc.argv.startswith(b"tmux") or AGENT_MARK in proc.argv:
            continue
        if any(mark in proc.argv for mark in MCP_MARKS) or HOST_MARK in proc.argv:
            result.agent_tools.append(proc)
        elif any(mark in proc.argv for mark in NAVIGATOR_MARKS):
            result.navigators.append(proc)
        else:
            result.other.append(proc)
    return result


def _tmux(socket: Path, *args: str) -> str:
    return subprocess.run(["tmux", "-S", str(socket), *args], capture_output=True, text=True,
                          check=False).stdout


@contextmanager
def _env(**values: str | None) -> Iterator[None]:
    saved = {name: os.environ.get(name) for name in values}
    for name, value in values.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@dataclass
class FleetRun:
    socket: Path
    engine: object
    views: list[str]
    windows: dict[str, str]
    navs: dict[str, str]
    server_pid: int


def build_fleet(folder: Path, views: int, agents: int) -> FleetRun:
    """``views`` projects entered, each with ``agents`` live, bound fake Claude agents."""
    socket, root = folder / "tmux.sock", folder / "home"
    root.mkdir(parents=True)
    os.environ[ENV_HOME] = str(root)
    names = tuple(f"p{i:02d}" for i in range(views))
    template = replace(project_config(root / "src", names),
                       providers={p: ProviderConfig(command=quiet_provider_command(p.value))
                                  for p in Provider},
                       tmux=TmuxConfig(socket_path=str(socket)))
    home = Home(root=root, config_path=root / "config.toml")
    init_registry(home, template=template)
    engine = open_engine(home, with_stage=True)
    commands = hook_commands(engine)
    base_env = {k: v for k, v in os.environ.items() if k != ENV_HOME}

    def bind(frame: str) -> None:
        env = pane_env(engine, frame)
        session = engine.conn.execute(
            "SELECT s.provider_session_id FROM frames f JOIN provider_sessions s"
            " ON s.session_key = f.current_session_key WHERE f.frame_id = ?",
            (frame,)).fetchone()[0]
        subprocess.run(["/bin/sh", "-c", commands["SessionStart"]], cwd=REPO,
                       capture_output=True, env={**base_env, **env},
                       input=recorded("SessionStart", session))

    view_ids: list[str] = []
    for name in names:
        route = engine.project_enter(new_request_id(), name)
        engine.frame_start(new_request_id(), route.frame_id)
        retry_until(lambda r=route: pane_of(engine, r.frame_id) is not None, 60.0)
        bind(route.frame_id)
        for index in range(agents - 1):
            child = engine.frame_push(new_request_id(), route.frame_id, f"task {index}",
                                      "Benchmark brief.").target_frame_id
            retry_until(lambda c=child: pane_of(engine, c) is not None, 60.0)
            claim_for_frame(engine, child, session_of(engine, child))
            bind(child)
            engine.frame_back(new_request_id(), route.view_id)
        view_ids.append(route.view_id)
    snap = engine.stage.snapshot()
    windows = {v: snap.view(v).window_id for v in view_ids}
    navs = {v: snap.view(v).navigator.pane_id for v in view_ids}
    server_pid = int(_tmux(socket, "display-message", "-p", "#{pid}").strip())
    return FleetRun(socket, engine, view_ids, windows, navs, server_pid)


def _painted(socket: Path, pane: str) -> bool:
    """The navigator app drew itself: its alternate screen is on, with its Views panel."""
    out = _tmux(socket, "display-message", "-p", "-t", pane, "#{pane_dead} #{alternate_on}")
    return out.split() == ["0", "1"] and "Views" in _tmux(socket, "capture-pane", "-p", "-t",
                                                           pane)


def _asleep(socket: Path, pane: str) -> bool:
    return _tmux(socket, "display-message", "-p", "-t", pane,
                 "#{pane_dead}#{pane_dead_status}").strip() == f"1{parking.ASLEEP_STATUS}"


def _parked(run: FleetRun) -> int:
    out = _tmux(run.socket, "list-panes", "-a", "-F",
                "#{@sb_role} #{pane_dead} #{pane_dead_status}")
    return sum(line == f"navigator 1 {parking.ASLEEP_STATUS}" for line in out.splitlines())


def measure_fleet(views: int, agents: int, *, after: bool,
                  wake_rounds: int = 0) -> dict[str, float]:
    """One fleet, one client on its first view; figures once settled."""
    folder = Path(tempfile.mkdtemp(prefix="sbmem-", dir="/tmp"))
    figures: dict[str, float] = {}
    park = "2" if after else "off"
    shim = None if after else "off"
    with _env(**{parking.ENV_PARK_AFTER: park, agent_tools.ENV_SHIM: shim, ENV_HOME: None,
                 "TMUX": None, "TMUX_PANE": None}):
        run = None
        terminal = None
        try:
            run = build_fleet(folder, views, agents)
            run.engine.stage.navigator_command = None
            looked = run.views[0]
            _tmux(run.socket, "select-window", "-t", run.windows[looked])
            terminal = Terminal(run.socket, run.engine.config.tmux.view_session, 80, 24)
            for view in run.views:  # painted (or, after, already parked: it painted first)
                retry_until(lambda v=view: _painted(run.socket, run.navs[v])
                            or _asleep(run.socket, run.navs[v]), 90.0)
            if after:  # the navigators' own turns (every 10 s) park the unseen ones
                retry_until(lambda: _parked(run) >= views - 1, 120.0)
            else:
                time.sleep(5)
            time.sleep(3)  # settle: hooks' workers, the host's first calls
            counted = census(run.server_pid, run.socket)
            figures["navigators_mb"] = counted.rss(counted.navigators)
            figures["navigators_pss"] = sum(p.pss_mb for p in counted.navigators)
            figures["navigator_procs"] = len(counted.navigators)
            figures["tools_mb"] = counted.rss(counted.agent_tools)
            figures["tools_procs"] = len(counted.agent_tools)
            figures["tool_max_mb"] = max((p.rss_mb for p in counted.agent_tools
                                          if HOST_MARK not in p.argv), default=0.0)
            figures["other_mb"] = counted.rss(counted.other)
            figures["all_mb"] = counted.rss(counted.everything)
            figures["all_pss"] = sum(p.pss_mb for p in counted.everything)
            figures["parked"] = _parked(run)
            screens, usable = wake_figures(run, wake_rounds) if after else ([], [])
            if usable:
                figures["wake_screen_s"] = statistics.median(screens)
                figures["wake_usable_s"] = statistics.median(usable)
                figures["wake_usable_max_s"] = max(usable)
                # the woken navigators run until they park again
                woken = census(run.server_pid, run.socket)
                figures["woken_navigators_mb"] = woken.rss(woken.navigators)
        finally:
            if terminal is not None:
                terminal.close()
            if run is not None:
                run.engine.conn.close()  # type: ignore[attr-defined]
            subprocess.run(["tmux", "-S", str(folder / "tmux.sock"), "kill-server"],
                           capture_output=True)
            shutil.rmtree(folder, ignore_errors=True)
    return figures


def wake_figures(run: FleetRun, rounds: int) -> tuple[list[float], list[float]]:
    """Show parked views one after another: seconds from the window being shown to a
    screen in its navigator pane (tmux's own reading, which takes a few ms itself),
    and from the ``select-window`` to the app painted, for ``rounds`` wakes."""
    screens: list[float] = []
    usable: list[float] = []
    candidates = run.views[1:][:rounds]
    for view in candidates:
        pane = run.navs[view]
        if not retry_until(lambda p=pane: _asleep(run.socket, p), 60.0):
            continue
        started = time.perf_counter()
        _tmux(run.socket, "select-window", "-t", run.windows[view])
        shown_at = time.perf_counter()  # the client shows the window from here on
        shown: float | None = None
        while time.perf_counter() - started < 30:
            if shown is None and _tmux(run.socket, "capture-pane", "-p", "-t", pane).strip():
                shown = time.perf_counter() - shown_at
            if _painted(run.socket, pane):
                break
            time.sleep(0.01)
        usable.append(time.perf_counter() - started)
        screens.append(shown if shown is not None else usable[-1])
        print(f"  wake {len(usable)}: a screen after {screens[-1]:.3f} s, the app painted "
              f"after {usable[-1]:.3f} s", flush=True)
    return screens, usable


def first_tools_list(rounds: int = 5) -> dict[str, float]:
    """Seconds from start to the tools/list answer: today's server, the shim cold, warm."""
    hello = (b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}\n'
             b'{"jsonrpc":"2.0","id":2,"method":"tools/list"}\n')
    folder = Path(tempfile.mkdtemp(prefix="sbmcp-", dir="/tmp"))
    run_dir = folder / "run"
    run_dir.mkdir(mode=0o700)
    full = (sys.executable, *agent_tools.FULL_SERVER_TAIL)
    shim = agent_tools.agent_tool_argv(run_dir, full)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SWITCHBOARD_")}
    env[ENV_HOME] = str(folder)
    socket = agent_tools.socket_path(run_dir)

    def once(argv: tuple[str, ...]) -> float:
        started = time.perf_counter()
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, env=env, cwd=REPO)
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(hello)
        proc.stdin.flush()
        proc.stdout.readline()
        proc.stdout.readline()
        took = time.perf_counter() - started
        proc.stdin.close()
        proc.wait(10)
        proc.stdout.close()
        return took

    def stop_host() -> None:
        for proc in _processes().values():
            if HOST_MARK in proc.argv and os.fsencode(socket) in proc.argv:
                os.kill(proc.pid, 15)
        retry_until(lambda: not socket.exists(), 10.0)

    figures: dict[str, float] = {}
    try:
        figures["today_s"] = statistics.median(once(full) for _ in range(rounds))
        if shim != full:
            cold = []
            for _ in range(rounds):
                stop_host()
                cold.append(once(shim))
            figures["cold_s"] = statistics.median(cold)
            figures["warm_s"] = statistics.median(once(shim) for _ in range(rounds))
    finally:
        stop_host()
        shutil.rmtree(folder, ignore_errors=True)
    return figures


def _size(text: str) -> tuple[int, int]:
    views, agents = text.lower().split("x")
    return int(views), int(agents)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    big = _size(os.environ.get("SB_BENCH_MEMORY", "20x10"))
    parser.add_argument("--views", type=int, default=big[0])
    parser.add_argument("--agents", type=int, default=big[1])
    parser.add_argument("--small", default="8x2")
    parser.add_argument("--wakes", type=int, default=5)
    args = parser.parse_args()
    installed_bytecode()
    small = _size(args.small)
    print("first tools/list ...", flush=True)
    lists = first_tools_list()
    print(f"small fleet {small[0]}x{small[1]}, before and after ...", flush=True)
    small_before = measure_fleet(*small, after=False)
    small_after = measure_fleet(*small, after=True)
    print(f"large fleet {args.views}x{args.agents}, before and after ...", flush=True)
    big_before = measure_fleet(args.views, args.agents, after=False)
    big_after = measure_fleet(args.views, args.agents, after=True, wake_rounds=args.wakes)
    print(f"load average {os.getloadavg()[0]:.2f}")
    print(f"{args.views} views x {args.agents} agents, one view looked at:")
    print(f"  all navigators RSS      before {big_before['navigators_mb']:7.1f} MB "
          f"({big_before['navigator_procs']:.0f} processes)   after "
          f"{big_after['navigators_mb']:7.1f} MB ({big_after['navigator_procs']:.0f} "
          f"processes, {big_after['parked']:.0f} parked; PSS {big_after['navigators_pss']:.1f}"
          f" MB)   {_verdict(big_after['navigators_mb'], 150)}")
    if "wake_usable_s" in big_after:
        print(f"  showing a parked view   a screen after {big_after['wake_screen_s']:.3f} s "
              f"(median)   {_verdict(big_after['wake_screen_s'], 0.05)}")
        print(f"                          the app painted after "
              f"{big_after['wake_usable_s']:.3f} s median, {big_after['wake_usable_max_s']:.3f}"
              f" s max   {_verdict(big_after['wake_usable_s'], 0.4)}")
        print(f"                          (of {args.wakes} wakes, each a cold start; after "
              f"the wakes: navigators {big_after['woken_navigators_mb']:.1f} MB, until the "
              "woken ones park again)")
    print(f"{small[0]} views x {small[1]} agents, one view looked at:")
    print(f"  navigators              before {small_before['navigators_mb']:7.1f} MB   after "
          f"{small_after['navigators_mb']:7.1f} MB")
    print(f"  agent-tool processes    before {small_before['tools_mb']:7.1f} MB "
          f"({small_before['tools_procs']:.0f})   after {small_after['tools_mb']:7.1f} MB "
          f"({small_after['tools_procs']:.0f}, the host server included)")
    print(f"  largest per-agent tool  before {small_before['tool_max_mb']:7.1f} MB   after "
          f"{small_after['tool_max_mb']:7.1f} MB   {_verdict(small_after['tool_max_mb'], 5)}")
    print(f"  everything else         before {small_before['other_mb']:7.1f} MB   after "
          f"{small_after['other_mb']:7.1f} MB")
    print(f"  all Switchboard RSS     before {small_before['all_mb']:7.1f} MB   after "
          f"{small_after['all_mb']:7.1f} MB (PSS {small_after['all_pss']:.1f} MB)   "
          f"{_verdict(small_after['all_mb'], 100)}")
    print(f"first tools/list          today {lists['today_s']:.3f} s   shim, no host yet "
          f"{lists.get('cold_s', float('nan')):.3f} s   shim, host running "
          f"{lists.get('warm_s', float('nan')):.3f} s   "
          f"{_verdict(lists.get('cold_s', lists['today_s']), lists['today_s'] * 1.1)}"
          " (today's, measured now, +10 %)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
