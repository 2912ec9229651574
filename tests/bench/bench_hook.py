"""Hook path benchmark: the whole `switchboard hook --provider claude Stop` process.

Run: ``python -m tests.bench.bench_hook [--runs 30]``.

One real registry (private tmux server, one launched and bound fake-Claude
frame, plus a capability minted for the benchmark) is set up once. Each run
then spawns ``python -m navigator.cli hook --provider claude Stop`` with the
recorded-shape Stop payload on stdin and the pane markers in its environment
(a managed, trusted Stop that records ``ready``), and measures spawn to exit.
The baseline, interleaved run by run, is ``python -c pass`` with the same
interpreter. Also measured: an unmanaged call (no Switchboard markers).
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
import time
from pathlib import Path

from core.capabilities import ENV_CAPABILITY, ENV_GENERATION, ENV_HOME
from tests.core.test_hook_handler import launch_live_surface

TARGET_MEDIAN_MS = 80.0
REPO = Path(__file__).resolve().parents[2]
HOOK_ARGV = [sys.executable, "-m", "navigator.cli", "hook", "--provider", "claude", "Stop"]
BASELINE_ARGV = [sys.executable, "-c", "pass"]


def _timed(argv: list[str], env: dict[str, str], stdin: bytes) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, input=stdin, env=env, cwd=REPO, capture_output=True)
    elapsed = (time.perf_counter() - start) * 1000
    if done.returncode != 0:
        raise SystemExit(f"{argv} exited {done.returncode}: {done.stderr.decode()[-2000:]}")
    return elapsed


def run(runs: int) -> dict[str, float]:
    folder = Path(tempfile.mkdtemp(prefix="sbbench-", dir="/tmp"))
    socket = folder / "tmux.sock"
    root = folder / "home"
    root.mkdir()
    base_env = {k: v for k, v in os.environ.items()
                if k not in ("TMUX", "TMUX_PANE", ENV_CAPABILITY, ENV_GENERATION, ENV_HOME)}
    os.environ.pop("TMUX", None)
    os.environ.pop("TMUX_PANE", None)
    os.environ[ENV_HOME] = str(root)
    try:
        live = launch_live_surface(root, socket)
        managed_env = dict(base_env, **live.env())
        unmanaged_env = dict(base_env)
        payload = json.dumps({
            "session_id": live.provider_session_id,
            "transcript_path": f"/home/dev/.claude/projects/x/{live.provider_session_id}.jsonl",
            "cwd": "/home/dev/src/demo", "prompt_id": "b4a98e45-d406-48c3-98ef-7380eacddfaf",
            "permission_mode": "default", "hook_event_name": "Stop",
            "stop_hook_active": False, "last_assistant_message": "FAKE-OK",
            "background_tasks": [], "session_crons": [],
        }).encode()

        # sanity: the managed call is handled, the unmanaged one is a no-op
        check = subprocess.run([*HOOK_ARGV, "--json"], input=payload, env=managed_env,
                               cwd=REPO, capture_output=True, check=True)
        managed_outcome = json.loads(check.stdout)
        assert managed_outcome["handled"] and managed_outcome["activity"] == "ready", check
        check = subprocess.run([*HOOK_ARGV, "--json"], input=payload, env=unmanaged_env,
                               cwd=REPO, capture_output=True, check=True)
        assert not json.loads(check.stdout)["handled"], check

        for _ in range(3):  # warm-up (page cache, .pyc)
            _timed(HOOK_ARGV, managed_env, payload)
            _timed(BASELINE_ARGV, base_env, b"")

        baseline, managed, unmanaged = [], [], []
        for _ in range(runs):  # interleaved, so load drift hits all series alike
            baseline.append(_timed(BASELINE_ARGV, base_env, b""))
            managed.append(_timed(HOOK_ARGV, managed_env, payload))
            unmanaged.append(_timed(HOOK_ARGV, unmanaged_env, payload))
        live.engine.conn.close()
    finally:
        subprocess.run(["tmux", "-S", str(socket), "kill-server"], capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)
    return {"baseline": statistics.median(baseline), "managed": statistics.median(managed),
            "unmanaged": statistics.median(unmanaged),
            "managed_max": max(managed), "unmanaged_max": max(unmanaged)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    result = run(args.runs)
    base = result["baseline"]
    print(f"python -c pass           median {base:7.1f} ms")
    for name in ("managed", "unmanaged"):
        median = result[name]
        verdict = "OK" if median <= TARGET_MEDIAN_MS else "OVER TARGET"
        print(f"hook Stop ({name:9s})  median {median:7.1f} ms  max {result[name + '_max']:7.1f}"
              f" ms  = {median / base:4.1f}x python -c pass"
              f"  (target <= {TARGET_MEDIAN_MS:.0f} ms: {verdict})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
