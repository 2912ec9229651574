"""CPU of an agent's turn end, the hook and all it starts: a worker per Stop, or the server.

Run: ``python -m tests.bench.bench_turn_end [--turns 20]``.

The storm figures (``tests.bench.bench_memory``) follow a home's processes by polling
``/proc`` every 50 ms, which misses a short-lived worker on a loaded machine. This
bench counts every CPU tick instead: it makes itself the child subreaper
(``PR_SET_CHILD_SUBREAPER``), so a detached worker a hook starts becomes its child
when the hook exits, and waits for each one (``RUSAGE_CHILDREN`` then holds its CPU,
however short its life); the home's server is read from ``/proc/<pid>/stat`` (with
the children it waited for).

One launched, bound fake Claude agent, its exact hook commands and recorded payloads
(as ``bench_hook``); ``--turns`` turns (UserPromptSubmit, then Stop) twice, interleaved
in blocks: with ``SWITCHBOARD_TURN_END=worker`` (a Python worker per piece of turn-end
work: what every Stop did before issue 38, and what a hook does when no server runs),
and handed to the running server (``core.server.turn_end``). Reported per turn: the
hooks' CPU, the workers' and the server's (its CPU less what it uses idle over as long),
and at the storm's rate (2.5 turns/s: 5 hooks/s) what "beside the hooks" costs in % of
a core.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import resource
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from core.config.home import ENV_HOME, Home
from core.model import turn_end
from core.providers.agent_http import running
from tests.bench.bench_hook import hook_commands, installed_bytecode, recorded
from tests.core.test_hook_handler import launch_live_surface

REPO = Path(__file__).resolve().parents[2]
TURNS_PER_S = 2.5
"""The storm's 5 hooks/s are a prompt and a Stop each: 2.5 turn ends a second."""
PR_SET_CHILD_SUBREAPER = 36
TICK = os.sysconf("SC_CLK_TCK")


def _children_s() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def _children() -> set[int]:
    me, found = os.getpid(), set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == me:
                found.add(int(entry))
    return found


def _reap(keep: set[int], deadline_s: float = 30.0) -> None:
    """Wait for every orphan that became ours (the hooks' detached workers), but the
    long-lived ones of the setup (``keep``: the tmux server, the home's server)."""
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        left = _children() - keep
        if not left:
            return
        for pid in left:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                keep.add(pid)  # not ours to wait for after all


def _proc_s(pid: int) -> float:
    """CPU seconds of ``pid`` and of the children it waited for (the tmux clients the
    server's nudges run)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(f) for f in fields[11:15]) / TICK


def _spool_empty(run_dir: Path) -> bool:
    folder = turn_end.spool_dir(run_dir)
    return not [n for n in os.listdir(folder) if not n.startswith(".")]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--blocks", type=int, default=2)
    args = parser.parse_args()
    installed_bytecode()
    folder = Path(tempfile.mkdtemp(prefix="sbturnend-", dir="/tmp"))
    root = folder / "home"
    root.mkdir()
    os.environ[ENV_HOME] = str(root)
    for name in ("TMUX", "TMUX_PANE", turn_end.ENV_MODE):
        os.environ.pop(name, None)
    socket = folder / "tmux.sock"
    try:
        live = launch_live_surface(root, socket)
        home = Home(root=root, config_path=root / "config.toml")
        server = running(home.run_dir)
        if server is None:
            raise SystemExit("the launch started no server")
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
            raise SystemExit("this bench needs Linux (PR_SET_CHILD_SUBREAPER)")
        keep = _children()  # (none yet: the setup's daemons are init's)
        base = {k: v for k, v in os.environ.items() if not k.startswith("SWITCHBOARD_")}
        env = {**base, **live.env(), **home.child_env()}
        commands = hook_commands(live.engine)
        payloads = {event: recorded(event, live.provider_session_id)
                    for event in ("UserPromptSubmit", "Stop")}
        totals = {mode: {"hooks": 0.0, "workers": 0.0, "server": 0.0, "wall": 0.0}
                  for mode in ("worker", "server")}
        for _block in range(args.blocks):
            for mode in ("worker", "server"):
                mode_env = {**env, turn_end.ENV_MODE: turn_end.WORKER_MODE} \
                    if mode == "worker" else env
                served, started = _proc_s(server.pid), time.monotonic()
                for _turn in range(args.turns):
                    for event in ("UserPromptSubmit", "Stop"):
                        before = _children_s()
                        subprocess.run(["/bin/sh", "-c", commands[event]], cwd=REPO,
                                       env=mode_env, input=payloads[event],
                                       capture_output=True, check=True)
                        hooked = _children_s()
                        totals[mode]["hooks"] += hooked - before
                        _reap(keep)
                        totals[mode]["workers"] += _children_s() - hooked
                    deadline = time.monotonic() + 30
                    while not _spool_empty(home.run_dir) and time.monotonic() < deadline:
                        time.sleep(0.02)
                    time.sleep(0.25)  # the drain's last look (its work is done by then)
                wall = time.monotonic() - started
                totals[mode]["wall"] += wall
                totals[mode]["server"] += _proc_s(server.pid) - served
        # the server's own idle CPU over as long (its housekeeping passes, the drain's
        # looks), taken off both modes
        idle_s = sum(t["wall"] for t in totals.values())
        idle_from = _proc_s(server.pid)
        time.sleep(min(idle_s, 60.0))
        idle_rate = (_proc_s(server.pid) - idle_from) / min(idle_s, 60.0)
        turns = args.turns * args.blocks
        figures: dict[str, float] = {}
        print(f"{turns} turns per mode, load average {os.getloadavg()[0]:.2f}; the server "
              f"idle: {idle_rate * 100:.2f} % of a core")
        for mode, total in totals.items():
            server_s = max(0.0, total["server"] - idle_rate * total["wall"])
            hooks_ms = total["hooks"] / turns * 1000
            workers_ms = total["workers"] / turns * 1000
            server_ms = server_s / turns * 1000
            beside = (workers_ms + server_ms) / 1000 * TURNS_PER_S * 100
            figures[f"{mode}_hooks_ms"] = hooks_ms
            figures[f"{mode}_workers_ms"] = workers_ms
            figures[f"{mode}_server_ms"] = server_ms
            figures[f"{mode}_beside_pct"] = beside
            print(f"{mode:>6}: per turn (prompt + Stop) hooks {hooks_ms:6.1f} ms CPU, workers "
                  f"{workers_ms:6.1f} ms, server {server_ms:6.1f} ms; at the storm's 2.5 turns/s "
                  f"beside the hooks {beside:5.2f} % of a core, the hooks "
                  f"{hooks_ms / 1000 * TURNS_PER_S * 100:5.2f} %")
        print(json.dumps({k: round(v, 3) for k, v in figures.items()}))
        live.engine.conn.close()
    finally:
        subprocess.run(["tmux", "-S", str(socket), "kill-server"], capture_output=True)
        found = running(root / "run") if (root / "run").exists() else None
        if found is not None:
            os.kill(found.pid, 15)
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
