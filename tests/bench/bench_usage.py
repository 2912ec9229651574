"""Usage reading (issue 26): what it adds to the managed Stop hook, and how long the
detached reader takes on a long transcript.

- The managed Claude Stop hook, interleaved: its recorded payload with
  ``transcript_path`` (the hook starts ``core.usage.worker``: one ``posix_spawn``)
  and without it (nothing to read). Target: the median with usage <= 1.10x the
  median without (wall and CPU of the hook's process tree; the worker runs detached
  and is not waited for).
- The reader on a ~10 MB transcript of 5,000 turns in Claude Code's shape: the
  first read of it all and an incremental read of one more turn, each beside its
  floor measured in the same run (reading the same bytes and ``json.loads`` of each
  line: what any reader of the file pays).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from core.config.capabilities import ENV_CAPABILITY, ENV_GENERATION
from core.config.home import ENV_CONFIG, ENV_HOME, Home
from core.usage.worker import read_usage
from tests.bench.bench_hook import Series, hook_commands, installed_bytecode, recorded
from tests.core.test_hook_handler import launch_live_surface

STOP_RATIO = 1.10
TURNS = 5000


def transcript_lines(turns: int, start: int = 0) -> str:
    """Claude Code's lines of ``turns`` turns: a prompt, an answer with its usage, and
    the attachment lines it writes around them (about 2 KB a turn)."""
    lines = []
    for n in range(start, start + turns):
        lines.append(json.dumps({"type": "user", "uuid": f"u{n}", "message": {
            "role": "user", "content": f"prompt {n} " + "x" * 400}}))
        lines.append(json.dumps({"type": "attachment", "uuid": f"a{n}",
                                 "attachment": {"type": "todo", "content": "y" * 600}}))
        lines.append(json.dumps({"type": "assistant", "uuid": f"r{n}", "message": {
            "id": f"msg_{n}", "model": "claude-sonnet-4-5", "role": "assistant",
            "content": [{"type": "text", "text": "z" * 500}],
            "usage": {"input_tokens": 1234, "output_tokens": 56,
                      "cache_read_input_tokens": 789, "cache_creation_input_tokens": 321}}}))
    return "\n".join(lines) + "\n"


def floor_ms(path: Path, offset: int = 0) -> float:
    start = time.perf_counter()
    with path.open("rb") as handle:
        handle.seek(offset)
        for line in handle.read().split(b"\n"):
            if line:
                json.loads(line)
    return (time.perf_counter() - start) * 1000


def hook_series(runs: int, folder: Path, transcript: Path) -> tuple[Series, Series]:
    socket, root = folder / "tmux.sock", folder / "home"
    root.mkdir()
    ours = ("TMUX", "TMUX_PANE", ENV_CAPABILITY, ENV_GENERATION, ENV_HOME, ENV_CONFIG)
    base_env = {k: v for k, v in os.environ.items() if k not in ours}
    for name in ours:
        os.environ.pop(name, None)
    os.environ[ENV_HOME] = str(root)
    live = launch_live_surface(root, socket)
    try:
        home = Home(root=root, config_path=root / "config.toml")
        env = {**base_env, **live.env(), **home.child_env()}
        command = hook_commands(live.engine)["Stop"]
        with_usage = json.loads(recorded("Stop", live.provider_session_id))
        with_usage["transcript_path"] = str(transcript)
        without = {k: v for k, v in with_usage.items() if k != "transcript_path"}
        payloads = [json.dumps(p).encode() for p in (with_usage, without)]
        warm = Series("warm-up")
        for _ in range(3):
            for payload in payloads:
                warm.add(command, env, payload)
        used, plain = Series("Stop with usage"), Series("Stop without usage")
        for _ in range(runs):
            used.add(command, env, payloads[0])
            plain.add(command, env, payloads[1])
        return used, plain
    finally:
        live.engine.conn.close()
        subprocess.run(["tmux", "-S", str(socket), "kill-server"], capture_output=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    installed_bytecode()
    folder = Path(tempfile.mkdtemp(prefix="sbbench-usage-", dir="/tmp"))
    try:
        transcript = folder / "transcript.jsonl"
        transcript.write_text(transcript_lines(TURNS))
        used, plain = hook_series(args.runs, folder, transcript)
        ratio, cpu_ratio = used.median / plain.median, used.cpu_median / plain.cpu_median
        verdict = "OK" if min(ratio, cpu_ratio) <= STOP_RATIO else "OVER"
        print(f"managed Stop, {args.runs} runs each (load average {os.getloadavg()[0]:.2f})")
        for series in (plain, used):
            print(f"{series.name:24s} median {series.median:7.1f} ms  max "
                  f"{max(series.samples):7.1f} ms  (cpu {series.cpu_median:5.1f} ms)")
        print(f"with / without: {ratio:4.2f}x wall, {cpu_ratio:4.2f}x cpu  target <= "
              f"{STOP_RATIO:.2f}x: {verdict}")

        root = folder / "reader"
        size = transcript.stat().st_size
        first, again = [], []
        for run in range(3):
            key = f"h:claude:bench-{run}"
            start = time.perf_counter()
            rows = read_usage(root, key, "claude", str(transcript), "t", 0)
            first.append((time.perf_counter() - start) * 1000)
            assert rows and rows[0].requests == TURNS + run, rows
            with transcript.open("a") as handle:
                handle.write(transcript_lines(1, TURNS + run))
            start = time.perf_counter()
            assert read_usage(root, key, "claude", str(transcript), "t2", 0)[0].requests == 1
            again.append((time.perf_counter() - start) * 1000)
        full_floor = statistics.median(floor_ms(transcript) for _ in range(3))
        tail_floor = statistics.median(floor_ms(transcript, size) for _ in range(3))
        print(f"reader, {size / 1e6:.1f} MB / {TURNS} turns: first read "
              f"{statistics.median(first):7.1f} ms (floor {full_floor:.1f} ms: read + json "
              f"of every line); one more turn {statistics.median(again):6.1f} ms (floor "
              f"{tail_floor:.2f} ms + opening the session file)")
        return 0
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
