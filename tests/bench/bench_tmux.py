"""tmux adapter benchmark: present() with 50 parked panes vs a bare `tmux swap-pane`.

Run: ``python -m tests.bench.bench_tmux [--parked 50] [--rounds 200]``.

present() is the tmux half of a focus transition, measured from the call
(request) to its return, which is after tmux re-read the target pane in
`main` in the same process. The baseline, interleaved round by round, is
`subprocess.run(["tmux", "-S", SOCKET, "swap-pane", ...])` on the same
server with the same panes: one tmux process doing only the swap. Also printed: tmux processes
spawned per present() and per full snapshot of every pane.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from core.tmux import TmuxAdapter

VIEW = "bench-view"
TARGET_MEDIAN_MS = 40.0


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def run(parked: int, rounds: int) -> dict[str, float]:
    folder = Path(tempfile.mkdtemp(prefix="sbbench-", dir="/tmp"))
    socket = folder / "tmux.sock"
    for name in ("TMUX", "TMUX_PANE"):
        os.environ.pop(name, None)
    try:
        adapter = TmuxAdapter.start(socket, config_file="/dev/null")
        layout = adapter.create_view(
            session_name="bench", view_id=VIEW, window_name="bench",
            navigator_command=["sleep", "3600"], main_command=["sleep", "3600"],
        )
        assert layout.main is not None
        panes = [
            adapter.launch_staged_pane(surface_id=f"s{i:04d}", command=["sleep", "3600"]).pane_id
            for i in range(parked)
        ]
        main = layout.main.pane_id

        for target in panes[:5]:  # warm-up
            adapter.present(main_pane=main, target_pane=target, view_id=VIEW)
            main = target

        # Interleaved, so drift in machine load affects both series alike.
        present_ms: list[float] = []
        bare_ms: list[float] = []
        spawned = 0
        tmux = shutil.which("tmux") or "tmux"
        for i in range(rounds):
            candidates = [p for p in panes if p != main]
            target = candidates[(2 * i) % len(candidates)]
            before = adapter.invocations
            started = time.perf_counter()
            shown = adapter.present(main_pane=main, target_pane=target, view_id=VIEW)
            present_ms.append((time.perf_counter() - started) * 1000)
            spawned += adapter.invocations - before
            assert shown.main.pane_id == target and not shown.main.parked
            main = target

            target = candidates[(2 * i + 1) % len(candidates)]
            if target == main:
                target = candidates[(2 * i + 2) % len(candidates)]
            started = time.perf_counter()
            subprocess.run([tmux, "-S", str(socket), "swap-pane", "-d", "-s", target, "-t", main],
                           check=True, capture_output=True)
            bare_ms.append((time.perf_counter() - started) * 1000)
            main = target
        per_present = spawned / rounds

        snap_before = adapter.invocations
        started = time.perf_counter()
        snap = adapter.snapshot()
        snapshot_ms = (time.perf_counter() - started) * 1000
        per_snapshot = adapter.invocations - snap_before
        parked_seen = len(snap.parked())
    finally:
        subprocess.run(["tmux", "-S", str(socket), "kill-server"], capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)

    present_median = statistics.median(present_ms)
    bare_median = statistics.median(bare_ms)
    return {
        "parked": float(parked),
        "parked_seen": float(parked_seen),
        "panes_in_snapshot": float(len(snap.panes)),
        "rounds": float(rounds),
        "present_median_ms": present_median,
        "present_p90_ms": quantile(present_ms, 0.9),
        "bare_swap_median_ms": bare_median,
        "bare_swap_p90_ms": quantile(bare_ms, 0.9),
        "ratio": present_median / bare_median,
        "tmux_processes_per_present": per_present,
        "snapshot_ms": snapshot_ms,
        "tmux_processes_per_snapshot": float(per_snapshot),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--parked", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    figures = run(args.parked, args.rounds)
    print(f"tmux adapter benchmark: {int(figures['parked'])} parked panes "
          f"({int(figures['parked_seen'])} in the holding session incl. anchor and the "
          f"parked placeholder), {int(figures['rounds'])} rounds")
    print(f"  present() request -> pane in main: median {figures['present_median_ms']:.2f} ms, "
          f"p90 {figures['present_p90_ms']:.2f} ms (target median <= {TARGET_MEDIAN_MS:.0f} ms)")
    print(f"  bare `tmux swap-pane` subprocess:  median {figures['bare_swap_median_ms']:.2f} ms, "
          f"p90 {figures['bare_swap_p90_ms']:.2f} ms")
    print(f"  ratio present/bare (median):       {figures['ratio']:.2f}x")
    print(f"  tmux processes per present():      {figures['tmux_processes_per_present']:.2f} "
          "(target <= 3)")
    print(f"  snapshot of {int(figures['panes_in_snapshot'])} panes: "
          f"{figures['snapshot_ms']:.2f} ms in "
          f"{int(figures['tmux_processes_per_snapshot'])} tmux process(es)")
    verdict = figures["present_median_ms"] <= TARGET_MEDIAN_MS and \
        figures["tmux_processes_per_present"] <= 3
    print(f"  verdict: {'PASS' if verdict else 'FAIL'}")


if __name__ == "__main__":
    main()
