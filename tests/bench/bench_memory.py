"""Fleet benchmark (issue 38): every Switchboard process of a home, by memory and by CPU.

Run: ``python -m tests.bench.bench_memory [--views 20] [--agents 10] [--small 8x2]
[--wakes 5] [--storm 30]`` (``SB_BENCH_MEMORY=5x2`` for a quick run of the large fleet;
``--small 0x0`` for the large fleet only).

Two fleets on private tmux servers with real registries, real ``switchboard ui``
navigators (parked 2 s after they stop being shown, ``SWITCHBOARD_PARK_AFTER=2``), live
fake Claude agents and one real ``tmux attach`` at 80x24 looking at one view.

Counted: every process of the fleet's home, found by that home (``tests.bench.census``:
its environment names the home, or it runs under the home's tmux server): navigators,
the server (``core.server.main``), workers, hooks, agent-tool processes. The agents and
tmux are left out ("beside the agents"). RSS is summed per process (shared library
pages count in each, as the issue's figures do); PSS is printed beside it.

Figures, each beside its target and the load average when it was read:
- small fleet (``--small``, 8 x 2): everything Switchboard runs once settled (<= 75 MB);
  then right after a person has visited every view in turn, each until its navigator
  has painted (<= 150 MB);
- large fleet (``--views`` x ``--agents``, 20 x 10) with one view shown (<= 100 MB);
- wake: a client shows a parked view: time until its pane shows its saved screen (at
  once) and until the navigator (a cold ``switchboard ui``) has painted, ``--wakes``;
- storm on the large fleet: ``--storm`` seconds of 5 hooks/s across its agents (the
  launch's exact hook commands, recorded payloads): the CPU of every Switchboard
  process but the hooks themselves (<= 15 % of a core), and the hooks' own; twice in
  the same run, first with the turn-end work in a Python worker per Stop
  (``SWITCHBOARD_TURN_END=worker``: before issue 38's hand-off, and the hook's path when
  no server runs), then handed to the home's server (``core.server.turn_end``).
Floors measured in the same run: a bare Textual app's and a bare ``python``'s RSS in a
pane of the same tmux server; the CPU of ``python -c pass`` run at the storm's rate.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

from core.config.config import ProviderConfig, TmuxConfig
from core.config.home import ENV_HOME, Home
from core.config.registry import init_registry
from core.context.requests import new_request_id
from core.engine.open import open_engine
from core.memory import parking
from core.model import turn_end
from core.model.enums import Provider
from core.runtime.claims import claim_for_frame
from core.server.start import ensure_running
from tests.bench import census as counting
from tests.bench.bench_hook import BASELINE, hook_commands, installed_bytecode, recorded
from tests.factories import project_config
from tests.integration.test_terminal_sizes import Terminal
from tests.integration.transitions_env import pane_env, pane_of, quiet_provider_command, session_of
from tests.waiting import retry_until

REPO = Path(__file__).resolve().parents[2]
HOOKS_PER_S = 5.0
FLOOR_S = 10.0
"""Seconds of ``python -c pass`` at the storm's rate, for the CPU floor."""
TARGETS = {"small": 75.0, "visited": 150.0, "large": 100.0, "storm": 15.0, "screen": 0.05}


def _verdict(value: float, target: float) -> str:
    return f"target <= {target:g}: {'OK' if value <= target else 'OVER'}"


def _load() -> str:
    return f"load {os.getloadavg()[0]:.2f}"


def _tmux(socket: Path, *args: str) -> str:
    return subprocess.run(["tmux", "-S", str(socket), *args], capture_output=True, text=True,
                          check=False).stdout


@contextmanager
def environ(**values: str | None) -> Iterator[None]:
    """This process's environment with ``values`` set (None: unset) while inside."""
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
    root: Path
    engine: object
    views: list[str]
    windows: dict[str, str]
    navs: dict[str, str]
    frames: list[str]
    server_pid: int

    def census(self) -> counting.Census:
        return counting.census(self.root, self.server_pid)


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
    # The home's server first, from here, so it is given this bench's parking knob (a
    # server a launch starts gets only the home's variables).
    ensure_running(home)
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
    frames: list[str] = []
    for name in names:
        route = engine.project_enter(new_request_id(), name)
        engine.frame_start(new_request_id(), route.frame_id)
        retry_until(lambda r=route: pane_of(engine, r.frame_id) is not None, 60.0)
        bind(route.frame_id)
        frames.append(route.frame_id)
        for index in range(agents - 1):
            child = engine.frame_push(new_request_id(), route.frame_id, f"task {index}",
                                      "Benchmark brief.").target_frame_id
            retry_until(lambda c=child: pane_of(engine, c) is not None, 60.0)
            claim_for_frame(engine, child, session_of(engine, child))
            bind(child)
            frames.append(child)
            engine.frame_back(new_request_id(), route.view_id)
        view_ids.append(route.view_id)
    snap = engine.stage.snapshot()
    windows = {v: snap.view(v).window_id for v in view_ids}
    navs = {v: snap.view(v).navigator.pane_id for v in view_ids}
    server_pid = int(_tmux(socket, "display-message", "-p", "#{pid}").strip())
    return FleetRun(socket, root, engine, view_ids, windows, navs, frames, server_pid)


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


def _rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def memory_floor(socket: Path) -> dict[str, float]:
    """RSS of a bare Textual app (once painted) and of a bare ``python`` in panes of this
    server: what any Textual UI, and any Python process, costs here."""
    figures: dict[str, float] = {}
    for name, argv in (("textual", (sys.executable, "-m", "tests.bench.bare_textual")),
                       ("python", (sys.executable, "-c", "import time; time.sleep(60)"))):
        pid = int(_tmux(socket, "new-window", "-d", "-c", str(REPO), "-P", "-F",
                        "#{pane_pid}", "--", *argv).strip())
        try:
            retry_until(lambda p=pid: _rss_mb(p) > 5, 30.0)
            time.sleep(2)
            figures[name] = _rss_mb(pid)
        finally:
            subprocess.run(["kill", str(pid)], capture_output=True)
    return figures


def _settle(run: FleetRun, views: int) -> None:
    """Every navigator painted or parked, all but the shown one parked, 3 s more."""
    for view in run.views:  # painted (or already parked: it painted first)
        retry_until(lambda v=view: _painted(run.socket, run.navs[v])
                    or _asleep(run.socket, run.navs[v]), 90.0)
    retry_until(lambda: _parked(run) >= views - 1, 120.0)
    time.sleep(3)  # settle: hooks' workers, the server's first work


def _record(figures: dict[str, float], name: str, counted: counting.Census) -> str:
    figures[f"{name}_mb"] = counted.rss()
    figures[f"{name}_pss"] = counted.pss()
    figures[f"{name}_load"] = os.getloadavg()[0]
    return counted.by_kind()


def visit_every_view(run: FleetRun) -> None:
    """A person shows each view in turn, each until its navigator has painted."""
    for view in [*run.views[1:], run.views[0]]:
        _tmux(run.socket, "select-window", "-t", run.windows[view])
        retry_until(lambda v=view: _painted(run.socket, run.navs[v]), 60.0, 0.05)


def wake_figures(run: FleetRun, rounds: int) -> tuple[list[float], list[float]]:
    """Show parked views one after another: seconds from the window being shown to a
    screen in its navigator pane (tmux's own reading, which takes a few ms itself),
    and from the ``select-window`` to the app painted, for ``rounds`` wakes."""
    screens: list[float] = []
    usable: list[float] = []
    for view in run.views[1:][:rounds]:
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
              f"after {usable[-1]:.3f} s ({_load()})", flush=True)
    return screens, usable


def _children_cpu_s() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def cpu_floor(seconds: float) -> float:
    """% of a core that ``python -c pass`` (through ``sh -c``, as a hook runs) costs at
    the storm's rate: the least any hook could cost."""
    env = {k: v for k, v in os.environ.items() if k != ENV_HOME}
    before, started = _children_cpu_s(), time.monotonic()
    threads = []
    for index in range(int(seconds * HOOKS_PER_S)):
        delay = started + index / HOOKS_PER_S - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        thread = threading.Thread(target=subprocess.run, args=(["/bin/sh", "-c", BASELINE],),
                                  kwargs={"env": env, "capture_output": True})
        thread.start()
        threads.append(thread)
    for thread in threads:
        thread.join(60)
    return (_children_cpu_s() - before) / (time.monotonic() - started) * 100


def storm(run: FleetRun, seconds: float, extra_env: dict[str, str] | None = None
          ) -> counting.Tracker:
    """5 hooks/s across the fleet's agents (each agent's UserPromptSubmit, then its Stop),
    each the launch's exact command with its pane's environment (plus ``extra_env``); the
    home's CPU followed."""
    engine = run.engine
    commands = hook_commands(engine)
    envs = {frame: {**pane_env(engine, frame), **(extra_env or {})}  # type: ignore[arg-type]
            for frame in run.frames}
    keys = {frame: session_of(engine, frame) for frame in run.frames}  # type: ignore[arg-type]
    sessions = {frame: engine.conn.execute(  # type: ignore[attr-defined]
        "SELECT provider_session_id FROM provider_sessions WHERE session_key = ?",
        (key,)).fetchone()[0] for frame, key in keys.items()}

    def one(index: int) -> None:
        # an agent's turn: its prompt, then (the next hook) its Stop; the agents in turn
        frame = run.frames[(index // 2) % len(run.frames)]
        event = "UserPromptSubmit" if index % 2 == 0 else "Stop"
        subprocess.run(["/bin/sh", "-c", commands[event]], cwd=REPO, capture_output=True,
                       env=envs[frame], input=recorded(event, sessions[frame]))

    def hooks() -> None:
        started, threads = time.monotonic(), []
        for index in range(int(seconds * HOOKS_PER_S)):
            delay = started + index / HOOKS_PER_S - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            thread = threading.Thread(target=one, args=(index,))
            thread.start()
            threads.append(thread)
        for thread in threads:
            thread.join(60)
        time.sleep(1.0)  # the last hooks' workers and the navigators' last redraw

    return counting.follow(counting.Home(run.root, run.server_pid), hooks)


def measure_fleet(views: int, agents: int, *, visit: bool = False, wake_rounds: int = 0,
                  storm_s: float = 0.0) -> dict[str, float]:
    """One fleet, one client on its first view; figures once settled."""
    folder = Path(tempfile.mkdtemp(prefix="sbmem-", dir="/tmp"))
    figures: dict[str, float] = {}
    with environ(**{parking.ENV_PARK_AFTER: "2", ENV_HOME: None, "TMUX": None,
                 "TMUX_PANE": None}):
        run = None
        terminal = None
        try:
            run = build_fleet(folder, views, agents)
            run.engine.stage.navigator_command = None  # type: ignore[attr-defined]
            _tmux(run.socket, "select-window", "-t", run.windows[run.views[0]])
            terminal = Terminal(run.socket,
                                run.engine.config.tmux.view_session,  # type: ignore[attr-defined]
                                80, 24)
            _settle(run, views)
            figures["parked"] = _parked(run)
            kinds = _record(figures, "settled", run.census())
            print(f"  settled, one view shown ({figures['parked']:.0f} parked): "
                  f"{figures['settled_mb']:.1f} MB: {kinds} ({_load()})", flush=True)
            if visit:
                visit_every_view(run)
                kinds = _record(figures, "visited", run.census())
                print(f"  right after visiting every view: {figures['visited_mb']:.1f} MB: "
                      f"{kinds} ({_load()})", flush=True)
                floor = memory_floor(run.socket)
                figures["floor_textual"], figures["floor_python"] = floor["textual"], \
                    floor["python"]
            if wake_rounds:
                _settle(run, views)
                screens, usable = wake_figures(run, wake_rounds)
                if usable:
                    figures["wake_screen_s"] = statistics.median(screens)
                    figures["wake_usable_s"] = statistics.median(usable)
                    figures["wake_usable_max_s"] = max(usable)
                    figures["wake_load"] = os.getloadavg()[0]
            if storm_s:
                # before and after in one run: the hooks' turn-end work in a Python worker
                # per Stop (what a hook does when no server runs), then handed to the server
                for prefix, extra in (("storm_workers", {turn_end.ENV_MODE:
                                                         turn_end.WORKER_MODE}),
                                      ("storm", {})):
                    _settle(run, views)
                    print(f"  storm {storm_s:g} s at {HOOKS_PER_S:g} hooks/s"
                          f"{' (workers forced)' if extra else ''} ...", flush=True)
                    tracked = storm(run, storm_s, extra)
                    beside = [k for k in counting.Kind if k is not counting.Kind.HOOK]
                    figures[f"{prefix}_cpu"] = tracked.percent(beside)
                    figures[f"{prefix}_hooks_cpu"] = tracked.percent([counting.Kind.HOOK])
                    figures[f"{prefix}_load"] = os.getloadavg()[0]
                    for kind in counting.Kind:
                        if tracked.seen(kind):
                            print(f"    {kind.value}: {tracked.percent([kind]):.2f} % of a "
                                  f"core ({tracked.seen(kind)} processes)", flush=True)
                figures["storm_floor_cpu"] = cpu_floor(min(FLOOR_S, storm_s))
        finally:
            if terminal is not None:
                terminal.close()
            if run is not None:
                run.engine.conn.close()  # type: ignore[attr-defined]
            subprocess.run(["tmux", "-S", str(folder / "tmux.sock"), "kill-server"],
                           capture_output=True)
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
    parser.add_argument("--storm", type=float, default=30.0)
    args = parser.parse_args()
    installed_bytecode()
    small = _size(args.small)
    s: dict[str, float] = {}
    if small[0]:  # --small 0x0: the large fleet only
        print(f"small fleet {small[0]}x{small[1]} ...", flush=True)
        s = measure_fleet(*small, visit=True)
    print(f"large fleet {args.views}x{args.agents} ...", flush=True)
    b = measure_fleet(args.views, args.agents, wake_rounds=args.wakes, storm_s=args.storm)
    if s:
        print(f"floors: a bare Textual app {s['floor_textual']:.1f} MB, a bare python "
              f"{s['floor_python']:.1f} MB (RSS, same run)")
        print(f"{small[0]} views x {small[1]} agents, one view shown: all Switchboard "
              f"{s['settled_mb']:7.1f} MB (PSS {s['settled_pss']:.1f})   "
              f"{_verdict(s['settled_mb'], TARGETS['small'])}   (load {s['settled_load']:.2f})")
        print(f"  right after visiting every view: {s['visited_mb']:7.1f} MB (PSS "
              f"{s['visited_pss']:.1f})   {_verdict(s['visited_mb'], TARGETS['visited'])}   "
              f"(load {s['visited_load']:.2f})")
    print(f"{args.views} views x {args.agents} agents, one view shown: all Switchboard "
          f"{b['settled_mb']:7.1f} MB (PSS {b['settled_pss']:.1f}; {b['parked']:.0f} parked)   "
          f"{_verdict(b['settled_mb'], TARGETS['large'])}   (load {b['settled_load']:.2f})")
    if "wake_usable_s" in b:
        print(f"  showing a parked view: its saved screen after {b['wake_screen_s']:.3f} s "
              f"(median)   {_verdict(b['wake_screen_s'], TARGETS['screen'])}; the navigator "
              f"painted after {b['wake_usable_s']:.3f} s median, {b['wake_usable_max_s']:.3f} s"
              f" max (a cold start; no target)   (load {b['wake_load']:.2f})")
    if "storm_workers_cpu" in b:
        print(f"  storm {args.storm:g} s at {HOOKS_PER_S:g} hooks/s, a Python worker per Stop "
              f"(SWITCHBOARD_TURN_END=worker, the no-server fallback): Switchboard beside the "
              f"hooks {b['storm_workers_cpu']:.2f} % of a core; the hooks themselves "
              f"{b['storm_workers_hooks_cpu']:.2f} %   (load {b['storm_workers_load']:.2f})")
    if "storm_cpu" in b:
        print(f"  storm {args.storm:g} s at {HOOKS_PER_S:g} hooks/s: Switchboard beside the hooks "
              f"{b['storm_cpu']:.2f} % of a core   {_verdict(b['storm_cpu'], TARGETS['storm'])};"
              f" the hooks themselves {b['storm_hooks_cpu']:.2f} % (floor: python -c pass at "
              f"the same rate {b['storm_floor_cpu']:.2f} %)   (load {b['storm_load']:.2f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
