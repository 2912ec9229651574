"""Focus transition benchmark: ``engine.view_focus`` with 50 parked provider panes.

Run: ``python -m tests.bench.bench_transition [--parked 50] [--rounds 100]``.

What is measured is the whole transition as the navigator and the CLI run it:
request recorded, transition prepared and claimed, the guarded ``swap-pane``
(one tmux process, which also re-reads the pane now in main), phases
``moved``/``inspected`` and the commit, against a real registry (SQLite in a
temporary home) and a private tmux server. The timer starts before
``view_focus`` and stops when it returns; by then tmux has reported the target
pane in main. Each round focuses the other of two parked task frames.

Set-up: one project entered (its workspace shows the placeholder), then
``parked + 1`` task frames pushed from the workspace and each push's brief
claimed (``frame_push`` + ``claim_for_frame``), so every task has a started
provider surface in its own pane: one in main, ``parked`` in the holding
session. The provider is a tiny shell script that answers ``--version`` like
the real CLI and otherwise ``exec sleep``s, so 50 panes cost 50 idle
processes, not 50 Python interpreters.

Baseline, interleaved round by round on the same server and panes: a bare
``subprocess.run(["tmux", "-S", SOCKET, "swap-pane", "-d", "-s", A, "-t",
B])`` between main and a parked pane, and the same swap back (both timed),
so the registry's view of tmux is unchanged for the next focus.

Printed: median and p90 of the focus, of the bare swap, their ratio; time
spent inside tmux per focus (the rest is SQLite and Python); tmux processes
spawned per focus (``TmuxStage.invocations``, the runner's counter). Targets:
median <= 40 ms and <= 3 tmux processes per transition; exit status 1 if one
is missed.
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
from pathlib import Path

from tests.bench.bench_tmux import quantile

TARGET_MEDIAN_MS = 40.0
TARGET_PROCESSES = 3.0

PROVIDER_SCRIPT = """#!/bin/sh
# Stand-in provider: the version line the launcher checks, else an idle process.
if [ "$1" = "--version" ]; then
  case "$0" in
    *codex*) echo "codex-cli 0.171.0" ;;
    *) echo "2.1.197 (Claude Code)" ;;
  esac
  exit 0
fi
exec sleep 3600
"""




def _provider_scripts(folder: Path) -> dict[str, str]:
    scripts = {}
    for name in ("claude", "codex"):
        path = folder / f"fake-{name}"
        path.write_text(PROVIDER_SCRIPT)
        path.chmod(0o755)
        scripts[name] = str(path)
    return scripts


def run(parked: int, rounds: int) -> dict[str, float]:
    # Imported here so `run_all` reports a missing dependency as a skip, not a crash.
    from core.context.requests import new_request_id
    from core.runtime.claims import claim_for_frame
    from core.runtime.stage import TmuxStage
    from tests.integration.transitions_env import make_engine, pane_of, session_of

    folder = Path(tempfile.mkdtemp(prefix="sbbench-", dir="/tmp"))
    socket = folder / "tmux.sock"
    for name in ("TMUX", "TMUX_PANE"):
        os.environ.pop(name, None)
    scripts = _provider_scripts(folder)
    try:
        engine = make_engine(folder / "home", socket,
                             provider_command=lambda provider: (scripts[provider],))
        route = engine.project_enter(new_request_id(), "alpha")
        view_id, workspace = route.view_id, route.frame_id
        tasks: list[str] = []
        for index in range(parked + 1):
            pushed = engine.frame_push(new_request_id(), workspace, f"Task {index}",
                                       f"Benchmark brief {index}")
            assert pushed.state == "awaiting_claim", pushed
            child = pushed.target_frame_id
            claim_for_frame(engine, child, session_of(engine, child))
            tasks.append(child)
        panes = {frame: pane_of(engine, frame) for frame in tasks}
        assert all(panes.values()), panes
        observer = TmuxStage(engine, str(socket))  # its own runner: counts stay exact
        snap = observer.snapshot()
        assert snap is not None
        parked_seen = sum(1 for p in snap.parked() if p.surface_id is not None)

        def main_pane() -> str:
            layout = observer.snapshot().view(view_id)
            assert layout is not None and layout.main is not None
            return layout.main.pane_id

        tmux_ms = 0.0
        real_run = engine.stage.runner.run

        def timed_run(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
            nonlocal tmux_ms
            started = time.perf_counter()
            try:
                return real_run(*args, **kwargs)
            finally:
                tmux_ms += (time.perf_counter() - started) * 1000

        engine.stage.runner.run = timed_run  # type: ignore[method-assign]

        first, second = tasks[0], tasks[len(tasks) // 2]
        for frame in (first, second, first):  # warm-up: caches, SQLite pages
            engine.view_focus(new_request_id(), view_id, frame)
        assert main_pane() == panes[first]

        focus_ms: list[float] = []
        inside_tmux_ms: list[float] = []
        bare_ms: list[float] = []
        spawned: list[int] = []
        states: set[str] = set()
        tmux = shutil.which("tmux") or "tmux"
        shown = first
        others = [frame for frame in tasks if frame not in (first, second)]
        for index in range(rounds):
            target = second if shown == first else first
            before, tmux_ms = engine.stage.invocations, 0.0
            started = time.perf_counter()
            result = engine.view_focus(new_request_id(), view_id, target)
            focus_ms.append((time.perf_counter() - started) * 1000)
            inside_tmux_ms.append(tmux_ms)
            spawned.append(engine.stage.invocations - before)
            states.add(f"{result.state}/{result.transport_phase}")
            shown = target
            assert main_pane() == panes[target], f"round {index}: focus did not land"

            # Bare swap of main with a parked pane, and back: same server, same panes.
            spare = panes[others[index % len(others)]]
            for source, destination in ((spare, panes[target]), (panes[target], spare)):
                started = time.perf_counter()
                subprocess.run([tmux, "-S", str(socket), "swap-pane", "-d", "-s", source,
                                "-t", destination], check=True, capture_output=True)
                bare_ms.append((time.perf_counter() - started) * 1000)
        assert main_pane() == panes[shown]
        assert states == {"completed/committed"}, states
    finally:
        subprocess.run(["tmux", "-S", str(socket), "kill-server"], capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)

    focus_median = statistics.median(focus_ms)
    bare_median = statistics.median(bare_ms)
    return {
        "parked": float(parked),
        "parked_seen": float(parked_seen),
        "rounds": float(rounds),
        "focus_median_ms": focus_median,
        "focus_p90_ms": quantile(focus_ms, 0.9),
        "focus_max_ms": max(focus_ms),
        "inside_tmux_median_ms": statistics.median(inside_tmux_ms),
        "bare_swap_median_ms": bare_median,
        "bare_swap_p90_ms": quantile(bare_ms, 0.9),
        "ratio": focus_median / bare_median,
        "tmux_processes_per_focus": statistics.mean(spawned),
        "tmux_processes_max": float(max(spawned)),
    }


def report(figures: dict[str, float]) -> bool:
    print(f"focus transition benchmark: {int(figures['parked_seen'])} parked provider panes "
          f"(real registry, private tmux server), {int(figures['rounds'])} rounds")
    print(f"  view_focus request -> pane in main: median {figures['focus_median_ms']:.2f} ms, "
          f"p90 {figures['focus_p90_ms']:.2f} ms, max {figures['focus_max_ms']:.2f} ms "
          f"(target median <= {TARGET_MEDIAN_MS:.0f} ms)")
    print(f"    of which inside tmux (median):    {figures['inside_tmux_median_ms']:.2f} ms")
    print(f"  bare `tmux swap-pane` subprocess:   median {figures['bare_swap_median_ms']:.2f} ms, "
          f"p90 {figures['bare_swap_p90_ms']:.2f} ms")
    print(f"  ratio focus/bare (median):          {figures['ratio']:.2f}x")
    print(f"  tmux processes per focus:           mean {figures['tmux_processes_per_focus']:.2f}, "
          f"max {int(figures['tmux_processes_max'])} (target <= {TARGET_PROCESSES:.0f})")
    ok = figures["focus_median_ms"] <= TARGET_MEDIAN_MS and \
        figures["tmux_processes_max"] <= TARGET_PROCESSES
    print(f"  verdict: {'PASS' if ok else 'FAIL'}")
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--parked", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=100)
    args = parser.parse_args()
    if args.parked < 2 or args.rounds < 1:
        parser.error("--parked must be >= 2 and --rounds >= 1")
    return 0 if report(run(args.parked, args.rounds)) else 1


if __name__ == "__main__":
    sys.exit(main())
