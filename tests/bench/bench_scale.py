"""Scale benchmark: many views, each with its real navigator, and many live agents.

Run: ``python -m tests.bench.bench_scale [--views 20] [--agents 10] [--idle 30] [--storm 30]``
(``SB_BENCH_SCALE=5x4`` or ``--views 5 --agents 4`` for a quick run).

A private tmux server and a real registry: N projects entered (one view each,
its navigator pane running ``python -m navigator.cli ui --view``), each with M
live fake agents (the workspace plus M-1 pushed, claimed and parked tasks; their
own hooks are no-ops, so the benchmark decides when a hook runs). Then:

- idle: every navigator's CPU over ``--idle`` seconds (``/proc/<pid>/stat`` of
  the navigator and its children), in % of one core;
- storm: ``--storm`` seconds of 5 hooks/s across the agents, each the exact
  command of a launch's Claude settings (``sh -c``, recorded payloads, the
  agent's own environment); hook wall p50/p99 against ``python -c pass`` timed
  in the same run (20 runs before the storm and one per three hooks during it);
  navigators' CPU during the storm, per hook and per view;
- drain: from the last hook to the navigators' last load burst (idle's scattered single
  CPU ticks aside);
- focus: ``view_focus`` between two parked tasks against a bare ``swap-pane``, the two
  interleaved over 30 rounds;
- reconcile: tmux processes of one idle reconcile pass (the server runs one per
  interval);
- navigator RSS (largest), every Switchboard process's RSS (``tests.bench.census``),
  and private memory (RSS less shared library pages).
CPU is counted for every Switchboard process of the home (``tests.bench.census``:
navigators, the server, workers; the hooks apart), the navigators' share printed too.
Targets are printed beside each figure; load average is printed too, since the
machine is shared.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import replace
from pathlib import Path

from core.config.config import ProviderConfig, TmuxConfig
from core.config.home import ENV_HOME, Home
from core.config.registry import init_registry
from core.context.requests import new_request_id
from core.engine.open import open_engine
from core.model.enums import Provider
from core.reconcile.reconcile import reconcile
from core.runtime.claims import claim_for_frame
from core.server.start import ensure_running
from tests.bench import census as counting
from tests.bench.bench_hook import BASELINE, hook_commands, installed_bytecode, recorded
from tests.bench.bench_tmux import quantile
from tests.factories import project_config
from tests.integration.transitions_env import pane_env, pane_of, quiet_provider_command, session_of
from tests.waiting import retry_until

REPO = Path(__file__).resolve().parents[2]
HOOKS_PER_S = 5.0
#: Focuses (each followed by a bare swap-pane floor) for the focus figures.
FOCUS_ROUNDS = 30
TICK = os.sysconf("SC_CLK_TCK")


def _verdict(value: float, target: float) -> str:
    return f"target <= {target:g}: {'OK' if value <= target else 'OVER'}"


def _children(pid: int) -> list[int]:
    found = [pid]
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == pid:
            found.extend(_children(int(entry)))
    return found


def _cpu_ticks(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime + stime
    return total


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _private_mb(pid: int) -> float:
    """Memory only this process holds (private pages): what one more view costs.

    RSS also counts the shared libraries' pages (libpython, libsqlite, libcrypto),
    which every navigator shares with the others.
    """
    fields = dict(line.split(":", 1) for line in
                  Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:])
    return sum(int(fields[name].split()[0]) for name in ("Private_Clean", "Private_Dirty")) / 1024


def _tmux(socket: Path, *args: str) -> str:
    return subprocess.run(["tmux", "-S", str(socket), *args], capture_output=True, text=True,
                          check=True).stdout




def _timed(command: str, env: dict[str, str], stdin: bytes) -> float:
    start = time.perf_counter()
    done = subprocess.run(["/bin/sh", "-c", command], input=stdin, env=env, cwd=REPO,
                          capture_output=True)
    if done.returncode != 0:
        raise SystemExit(f"{command} exited {done.returncode}: {done.stderr.decode()[-800:]}")
    return (time.perf_counter() - start) * 1000




def _bare_textual_rss(socket: Path) -> float:
    """RSS in MB of a bare Textual app in a pane of this server, once it has painted."""
    pid = int(_tmux(socket, "new-window", "-d", "-c", str(REPO), "-P", "-F", "#{pane_pid}", "--",
                    sys.executable, "-m", "tests.bench.bare_textual").strip())
    try:
        retry_until(lambda: _rss_mb(pid) > 20, 30.0)
        time.sleep(2)
        return _rss_mb(pid)
    finally:
        subprocess.run(["kill", str(pid)], capture_output=True)


def provider_session(engine, frame: str) -> str:
    """The provider's session id of the frame's current session (its hooks carry it)."""
    return engine.conn.execute(
        "SELECT s.provider_session_id FROM frames f JOIN provider_sessions s"
        " ON s.session_key = f.current_session_key WHERE f.frame_id = ?",
        (frame,)).fetchone()[0]


def run(views: int, agents: int, idle_s: float, storm_s: float) -> dict[str, float]:
    installed_bytecode()
    folder = Path(tempfile.mkdtemp(prefix="sbscale-", dir="/tmp"))
    socket, root = folder / "tmux.sock", folder / "home"
    root.mkdir()
    saved = os.environ.get(ENV_HOME)
    os.environ[ENV_HOME] = str(root)
    for name in ("TMUX", "TMUX_PANE"):
        os.environ.pop(name, None)
    # Every navigator runs for the whole bench, as when every view is looked at (no
    # client is attached here, so parked navigators would leave nothing to measure;
    # bench_memory measures parking).
    os.environ["SWITCHBOARD_PARK_AFTER"] = "off"
    figures: dict[str, float] = {}
    try:
        names = tuple(f"p{i:02d}" for i in range(views))
        template = project_config(root / "src", names)
        template = replace(
            template,
            providers={p: ProviderConfig(command=quiet_provider_command(p.value))
                       for p in Provider},
            tmux=TmuxConfig(socket_path=str(socket)))
        home = Home(root=root, config_path=root / "config.toml")
        init_registry(home, template=template)
        # The home's server first, from here, so it is given this bench's parking knob
        # (a server a launch starts gets only the home's variables).
        ensure_running(home)
        engine = open_engine(home, with_stage=True)
        print(f"setting up {views} views x {agents} agents ...", flush=True)
        frames: list[tuple[str, str]] = []  # (view, frame) of every agent
        tasks: dict[str, list[str]] = {}
        commands = hook_commands(engine)
        base_env = {k: v for k, v in os.environ.items() if k != ENV_HOME}

        unbound: list[str] = []

        def bind(frame: str) -> None:
            # The quiet agents' own hooks are no-ops; a real agent's SessionStart binds
            # its launch (else each opens a bind_timeout recovery after 60 s).
            env = pane_env(engine, frame)  # waits for the provider's exec
            done = subprocess.run(
                ["/bin/sh", "-c", commands["SessionStart"] + " --json"], cwd=REPO,
                capture_output=True, env={**base_env, **env},
                input=recorded("SessionStart", provider_session(engine, frame)))
            state = engine.conn.execute(
                "SELECT state FROM launch_intents WHERE frame_id = ?"
                " ORDER BY created_at DESC LIMIT 1", (frame,)).fetchone()[0]
            if state != "bound":
                unbound.append(f"{frame[:8]} {state}: {(done.stdout + done.stderr).decode()!r}")

        for name in names:
            route = engine.project_enter(new_request_id(), name)
            engine.frame_start(new_request_id(), route.frame_id)
            retry_until(lambda r=route: pane_of(engine, r.frame_id) is not None, 60.0)
            bind(route.frame_id)
            frames.append((route.view_id, route.frame_id))
            for index in range(agents - 1):
                pushed = engine.frame_push(new_request_id(), route.frame_id,
                                           f"task {index}", "Benchmark brief.")
                child = pushed.target_frame_id
                retry_until(lambda c=child: pane_of(engine, c) is not None, 60.0)
                claim_for_frame(engine, child, session_of(engine, child))
                bind(child)
                engine.frame_back(new_request_id(), route.view_id)
                frames.append((route.view_id, child))
                tasks.setdefault(route.view_id, []).append(child)
        if unbound:
            raise SystemExit(f"SessionStart left {len(unbound)} launches unbound: {unbound[:3]}")
        reconcile(engine)
        navigators = [int(line) for line in _tmux(
            socket, "list-panes", "-a", "-F", "#{?#{==:#{@sb_role},navigator},#{pane_pid},}"
        ).split() if line]
        if len(navigators) != views:
            raise SystemExit(f"expected {views} navigator panes, found {len(navigators)}")
        time.sleep(8)  # navigators start, paint and settle
        tracked_home = counting.Home(root, int(_tmux(socket, "display-message", "-p",
                                                     "#{pid}").strip()))

        print(f"idle {idle_s:g} s ...", flush=True)
        idle = counting.follow(tracked_home, lambda: time.sleep(idle_s))
        figures["idle"] = idle.percent([counting.Kind.NAVIGATOR])
        figures["idle_all"] = idle.percent()
        runner = engine.stage.runner
        count = runner.invocations
        reconcile(engine)
        figures["per_reconcile"] = runner.invocations - count

        # hook floor and storm
        envs = {frame: pane_env(engine, frame) for _view, frame in frames}
        keys = {frame: provider_session(engine, frame) for _view, frame in frames}
        floor = [_timed(BASELINE, base_env, b"") for _ in range(20)]
        print(f"storm {storm_s:g} s ...", flush=True)
        samples: list[float] = []
        slowest: list[tuple[float, str, float]] = []  # (ms, event, seconds into the storm)
        lock = threading.Lock()
        total = int(storm_s * HOOKS_PER_S)
        storm_cpu = counting.Tracker(tracked_home)
        storm_cpu.start()
        following = threading.Event()

        def follow() -> None:
            while not following.is_set():
                storm_cpu.poll()
                time.sleep(0.05)

        follower = threading.Thread(target=follow, daemon=True)
        follower.start()
        started = time.monotonic()

        def one(index: int) -> None:
            if index % 3 == 0:  # the floor again, under the storm's own load
                took = _timed(BASELINE, base_env, b"")
                with lock:
                    floor.append(took)
            # an agent's turn: its prompt, then (the next hook) its Stop; the agents in
            # turn (200 agents at 5/s would otherwise see no Stop within 30 s)
            _view, frame = frames[(index // 2) % len(frames)]
            event = "UserPromptSubmit" if index % 2 == 0 else "Stop"
            began = time.monotonic() - started
            took = _timed(commands[event], envs[frame], recorded(event, keys[frame]))
            with lock:
                samples.append(took)
                slowest.append((took, event, began))

        threads = []
        for index in range(total):
            delay = started + index / HOOKS_PER_S - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            thread = threading.Thread(target=one, args=(index,))
            thread.start()
            threads.append(thread)
        for thread in threads:
            thread.join(60)
        last_hook = time.monotonic()
        following.set()
        follower.join(5)
        storm_cpu.stop()
        figures["storm"] = storm_cpu.percent([counting.Kind.NAVIGATOR])
        beside = [k for k in counting.Kind if k is not counting.Kind.HOOK]
        figures["storm_all"] = storm_cpu.percent(beside)
        figures["storm_hooks"] = storm_cpu.percent([counting.Kind.HOOK])
        figures["update_ms"] = (figures["storm"] / 100 * (storm_cpu.stopped - storm_cpu.started)
                                * 1000 / max(1, len(samples)) / views)
        floor_p50 = statistics.median(floor)
        figures["floor_ms"] = floor_p50
        figures["hook_p50"] = statistics.median(samples) / floor_p50
        figures["hook_p99"] = quantile(samples, 0.99) / floor_p50
        print("slowest hooks: " + ", ".join(f"{ms:.0f} ms {event} at {at:.1f} s"
                                            for ms, event, at in sorted(slowest)[-3:]),
              flush=True)
        # drain: until the navigators' last load burst, then a second with none. Idle
        # navigators are not at zero: their timers cost a CPU tick (10 ms) every second
        # or two, scattered, which used to count as "not yet quiet" and added up to a
        # second at random. A burst is a 100 ms sample of 2 ticks or more (the storm's
        # last change loads in all 20 navigators within a few samples), or of 1 tick
        # within 0.3 s after one; an isolated single tick is idle.
        nav_pids = [p.pid for p in tracked_home.processes(memory=False)
                    if p.kind is counting.Kind.NAVIGATOR]
        quiet_since, ticks = time.monotonic(), _cpu_ticks(nav_pids)
        while time.monotonic() - quiet_since < 1.0 and time.monotonic() - last_hook < 60:
            time.sleep(0.1)
            now, now_ticks = time.monotonic(), _cpu_ticks(nav_pids)
            used, ticks = now_ticks - ticks, now_ticks
            if used >= 2 or (used == 1 and now - quiet_since <= 0.3):
                quiet_since = now
        figures["drain_s"] = quiet_since - last_hook

        # focus against a bare swap-pane
        view_id, pair = next((v, t) for v, t in tasks.items() if len(t) >= 2) \
            if any(len(t) >= 2 for t in tasks.values()) else (None, [])
        if view_id is not None:
            # Interleaved, so a focus and its floor see the same machine: one focus, then
            # one bare swap-pane of the same two panes (and the swap back, untimed).
            focus, swap = [], []
            panes = [pane_of(engine, frame) for frame in pair]
            for round_ in range(FOCUS_ROUNDS):
                start = time.perf_counter()
                engine.view_focus(new_request_id(), view_id, pair[round_ % 2])
                focus.append((time.perf_counter() - start) * 1000)
                start = time.perf_counter()
                _tmux(socket, "swap-pane", "-d", "-s", panes[0], "-t", panes[1])
                swap.append((time.perf_counter() - start) * 1000)
                _tmux(socket, "swap-pane", "-d", "-s", panes[1], "-t", panes[0])
            figures["focus_median"] = statistics.median(focus) / statistics.median(swap)
            figures["focus_p95"] = quantile(focus, 0.95) / statistics.median(swap)
            figures["swap_ms"] = statistics.median(swap)
        everything = counting.Census(tracked_home.processes())
        running = [p.pid for p in everything.procs if p.kind is counting.Kind.NAVIGATOR]
        figures["navigators_gone"] = len(set(navigators) - set(running))
        if figures["navigators_gone"]:  # exited or restarted during the run
            print(f"{figures['navigators_gone']:.0f} of the {views} navigators of the start "
                  "are no longer running", flush=True)
        rss = {p.pid: p.rss_mb for p in everything.procs if p.kind is counting.Kind.NAVIGATOR}
        figures["rss"] = max(rss.values(), default=0.0)
        figures["all_mb"] = everything.rss()
        print(f"all Switchboard processes after the storm: {everything.by_kind()}", flush=True)
        figures["private"] = max((_private_mb(pid) for pid in rss), default=0.0)
        figures["rss_floor"] = _bare_textual_rss(socket)
        # Correctness under load: nothing in this run stops an agent, so any surface
        # not live or any recovery opened is a false alarm (a load-induced misreading).
        figures["recoveries"] = engine.conn.execute(
            "SELECT COUNT(*) FROM recoveries").fetchone()[0]
        figures["surfaces_not_live"] = engine.conn.execute(
            "SELECT COUNT(*) FROM surfaces WHERE lifecycle_state != 'live'").fetchone()[0]
        for kind, count, explanation in engine.conn.execute(
                "SELECT kind, COUNT(*), MIN(bounded_explanation) FROM recoveries"
                " GROUP BY kind"):
            print(f"recoveries opened under load: {count} x {kind}, e.g. {explanation}",
                  flush=True)
        engine.conn.close()
    finally:
        subprocess.run(["tmux", "-S", str(socket), "kill-server"], capture_output=True)
        os.environ.pop("SWITCHBOARD_PARK_AFTER", None)
        if saved is None:
            os.environ.pop(ENV_HOME, None)
        else:
            os.environ[ENV_HOME] = saved
        shutil.rmtree(folder, ignore_errors=True)
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    size = os.environ.get("SB_BENCH_SCALE", "20x10").split("x")
    parser.add_argument("--views", type=int, default=int(size[0]))
    parser.add_argument("--agents", type=int, default=int(size[1]))
    parser.add_argument("--idle", type=float, default=30.0)
    parser.add_argument("--storm", type=float, default=30.0)
    args = parser.parse_args()
    f = run(args.views, args.agents, args.idle, args.storm)
    print(f"{args.views} views x {args.agents} agents (every navigator running), idle "
          f"{args.idle:g} s, storm "
          f"{args.storm:g} s at {HOOKS_PER_S:g}/s, load average {os.getloadavg()[0]:.2f}")
    print(f"navigators idle CPU      {f['idle']:6.2f} % of a core   {_verdict(f['idle'], 2)}"
          f"   (every Switchboard process: {f['idle_all']:.2f} %)")
    print(f"navigators storm CPU     {f['storm']:6.2f} % of a core   {_verdict(f['storm'], 20)}")
    print(f"all Switchboard storm CPU {f['storm_all']:5.2f} % of a core, the hooks aside "
          f"(navigators, server, workers)   {_verdict(f['storm_all'], 15)}; the hooks "
          f"themselves {f['storm_hooks']:.2f} %")
    print(f"navigator CPU per update {f['update_ms']:6.2f} ms (per hook per view)   "
          f"{_verdict(f['update_ms'], 10)}")
    print(f"hook p50                 {f['hook_p50']:6.2f} x python -c pass "
          f"({f['floor_ms']:.1f} ms)   {_verdict(f['hook_p50'], 2)}")
    print(f"hook p99                 {f['hook_p99']:6.2f} x   {_verdict(f['hook_p99'], 4)}")
    print(f"storm drain              {f['drain_s']:6.2f} s (last hook to the last load burst)   "
          f"{_verdict(f['drain_s'], 1)}")
    if "focus_median" in f:
        print(f"focus median             {f['focus_median']:6.2f} x swap-pane   "
              f"{_verdict(f['focus_median'], 2)}")
        print(f"focus p95                {f['focus_p95']:6.2f} x swap-pane "
              f"({f['swap_ms']:.1f} ms)")
    print(f"reconcile tmux processes {f['per_reconcile']:6.2f} per pass (one pass per "
          "interval, the server's)")
    print(f"navigator RSS (largest)  {f['rss']:6.1f} MB   {_verdict(f['rss'], 45)}"
          f"   (a bare Textual app: {f['rss_floor']:.1f} MB)")
    print(f"all Switchboard RSS      {f['all_mb']:6.1f} MB (every navigator running)")
    print(f"navigator private memory {f['private']:6.1f} MB (largest; RSS less shared "
          "library pages: what one more view costs)")
    print(f"false alarms             {f['recoveries']:4.0f} recoveries, "
          f"{f['surfaces_not_live']:.0f} surfaces not live   {_verdict(f['recoveries'], 0)}")
    print(json.dumps({k: round(v, 3) for k, v in f.items()}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
