"""Hook path benchmark: the exact command the CLIs run, on payloads they recorded.

Run: ``python -m tests.bench.bench_hook [--runs 30] [--push-runs 5]``.

One real registry (private tmux server, one launched and bound fake-Claude
frame, plus a capability minted for the benchmark) is set up once. The hook
command is the one Switchboard writes into a launch's Claude settings
(``core.runtime.launcher.hook_command`` rendered by ``core.install.hooks_install``), run the
way Claude Code runs it: ``/bin/sh -c COMMAND`` with the recorded payload on
stdin and the pane's environment (capability, generation, home and config).
Payloads are the recorded Claude Code 2.1.197 lines of
``tests/fixtures/hooks`` with the session id of the launched session.

Series, interleaved run by run so load drift hits them alike:
- baseline: ``python -c pass`` with the same interpreter, also through ``sh -c``;
- managed UserPromptSubmit and Stop (a plain turn: record activity, nothing waits),
  and a managed Codex Stop (recorded Codex 0.171.0 payload, on a second home with a
  launched fake Codex; its command from the rendered Codex hooks);
- unmanaged Stop (no Switchboard markers: a person's own session).

Then the Stop that carries work: a push waits for the parent's Stop; the hook
hands the push to a detached worker and returns (measured: the agent waits for
this), and the worker's tmux work (child pane, brief) is timed until the push
is completed. Targets (medians, on a quiet machine): managed Stop <= 2.5x the
baseline, unmanaged <= 1.5x, a Stop that starts a push < 200 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from core.config.capabilities import ENV_CAPABILITY, ENV_GENERATION
from core.config.home import ENV_CONFIG, ENV_HOME, Home
from core.context.requests import new_request_id
from core.hooks.hook_handler import handle_hook
from core.install.hooks_install import launch_hook_command
from core.providers.claude_settings import render_claude_settings
from core.providers.codex_config import render_codex_hooks
from core.runtime.launcher import hook_command
from tests.core.test_hook_handler import (
    CLAUDE_FIXTURE,
    FIXTURES,
    fixture_lines,
    launch_live_surface,
)
from tests.waiting import retry_value

MANAGED_STOP_RATIO = 2.5
UNMANAGED_RATIO = 1.5
PUSH_STOP_MS = 200.0
REPO = Path(__file__).resolve().parents[2]
BASELINE = f"{sys.executable} -c pass"


BACKGROUND_WORKERS = ("core.usage.worker", "core.review.worker")
"""Modules a turn end starts detached (``pgrep -f`` patterns)."""


def _background_settled(limit_s: float = 5.0) -> None:
    """Wait (at most ``limit_s``) until no turn-end worker runs."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        running = subprocess.run(["pgrep", "-f", "|".join(BACKGROUND_WORKERS)],
                                 capture_output=True).returncode == 0
        if not running:
            return
        time.sleep(0.02)


@dataclass
class Series:
    """Wall time (what the agent waits) and CPU time (user + system of the process
    tree: steadier than wall on a loaded machine) of each run, in milliseconds."""

    name: str
    samples: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def cpu_median(self) -> float:
        return statistics.median(self.cpu)

    def add(self, command: str, env: dict[str, str], stdin: bytes) -> None:
        """One ``sh -c COMMAND`` run, spawn to exit; a failure stops the benchmark.

        The readers an earlier turn end started in the background (the usage reader,
        the change worker) are let finish first: a person's turn ends are seconds
        apart, and a run that waited on one's evidence write would time the reader."""
        _background_settled()
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run(["/bin/sh", "-c", command], input=stdin, env=env, cwd=REPO,
                              capture_output=True)
        self.samples.append((time.perf_counter() - start) * 1000)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        self.cpu.append((after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
                        * 1000)
        if done.returncode != 0:
            raise SystemExit(f"{command} exited {done.returncode}: "
                             f"{done.stderr.decode()[-2000:]}")


CODEX_FIXTURE = FIXTURES / "codex-0.171.0.tsv"


def installed_bytecode() -> None:
    """Compile the project's modules, as installing a package does, before timing hooks.

    A hook process imports a dozen project modules; with ``PYTHONDONTWRITEBYTECODE``
    set (CI and this sandbox set it) a module changed since its last ``.pyc`` is
    compiled from source by every hook process, which a person's install never does.
    """
    import compileall

    for package in ("core", "navigator", "storage"):
        compileall.compile_dir(str(REPO / package), quiet=1)


def hook_commands(engine, provider: str = "claude") -> dict[str, str]:
    """Event -> the exact shell command of the launch's hook settings."""
    render = render_claude_settings if provider == "claude" else render_codex_hooks
    settings = json.loads(render(hook_command(engine)))
    return {event: groups[0]["hooks"][0]["command"]
            for event, groups in settings["hooks"].items()}


def recorded(event: str, session_id: str, fixture: Path = CLAUDE_FIXTURE) -> bytes:
    """The first recorded payload of ``event``, as the launched session's."""
    payload = next(body for name, body in fixture_lines(fixture) if name == event)
    payload["session_id"] = session_id
    return json.dumps(payload, separators=(",", ":")).encode()


def codex_stop(folder: Path, base_env: dict[str, str]) -> tuple[str, dict[str, str], bytes]:
    """A second home with a launched, bound fake Codex: its Stop command, env, payload."""
    root = folder / "codex-home"
    root.mkdir()
    os.environ[ENV_HOME] = str(root)
    live = launch_live_surface(root, folder / "codex-tmux.sock", "codex")
    home = Home(root=root, config_path=root / "config.toml")
    env = {**base_env, **live.env(), **home.child_env()}
    command = hook_commands(live.engine, "codex")["Stop"]
    live.engine.conn.close()
    return command, env, recorded("Stop", live.provider_session_id, CODEX_FIXTURE)


def _push_waiting(live, pane_env: dict[str, str], frame_id: str, view_id: str,
                  number: int) -> str:
    """The parent is working and a push waits for its Stop; returns the transition id."""
    handle_hook("claude", "UserPromptSubmit",
                recorded("UserPromptSubmit", live.provider_session_id), pane_env)
    result = live.engine.frame_push(new_request_id(), frame_id, f"Bench task {number}",
                                    "Benchmark brief: nothing to do.")
    state = live.engine.conn.execute("SELECT state FROM view_transitions WHERE"
                                     " transition_id = ?", (result.transition_id,)).fetchone()
    assert state[0] == "prepared", state
    return result.transition_id


def _wait_state(live, transition_id: str, states: tuple[str, ...], timeout: float) -> str:
    row = retry_value(lambda: live.engine.conn.execute(
        "SELECT state, failure FROM view_transitions WHERE transition_id = ?",
        (transition_id,)).fetchone(), lambda row: row[0] in states, timeout, interval=0.02)
    if row[0] not in states:
        raise SystemExit(f"push {transition_id} is {row[0]} ({row[1]})")
    return row[0]


def run(runs: int, push_runs: int) -> tuple[list[Series], Series, Series]:
    installed_bytecode()
    folder = Path(tempfile.mkdtemp(prefix="sbbench-", dir="/tmp"))
    socket = folder / "tmux.sock"
    root = folder / "home"
    root.mkdir()
    ours = ("TMUX", "TMUX_PANE", ENV_CAPABILITY, ENV_GENERATION, ENV_HOME, ENV_CONFIG)
    base_env = {k: v for k, v in os.environ.items() if k not in ours}
    for name in ours:
        os.environ.pop(name, None)
    os.environ[ENV_HOME] = str(root)
    try:
        live = launch_live_surface(root, socket)
        home = Home(root=root, config_path=root / "config.toml")
        pane_env = {**base_env, **live.env(), **home.child_env()}
        commands = hook_commands(live.engine)
        stop = recorded("Stop", live.provider_session_id)
        prompt = recorded("UserPromptSubmit", live.provider_session_id)
        codex_command, codex_env, codex_payload = codex_stop(folder, base_env)
        os.environ[ENV_HOME] = str(root)

        # sanity: the managed calls are handled, the unmanaged one is a no-op
        for env, handled in ((pane_env, True), (base_env, False)):
            check = subprocess.run(["/bin/sh", "-c", commands["Stop"] + " --json"], input=stop,
                                   env=env, cwd=REPO, capture_output=True, check=True)
            assert json.loads(check.stdout)["handled"] is handled, check

        warm = Series("warm-up")
        for _ in range(3):  # page cache, .pyc
            warm.add(commands["Stop"], pane_env, stop)
            warm.add(BASELINE, base_env, b"")

        base, prompts, stops, codex, unmanaged = (Series(name) for name in (
            "python -c pass", "UserPromptSubmit (managed)", "Stop (managed)",
            "Codex Stop (managed)", "Stop (unmanaged)"))
        for _ in range(runs):
            base.add(BASELINE, base_env, b"")
            prompts.add(commands["UserPromptSubmit"], pane_env, prompt)
            stops.add(commands["Stop"], pane_env, stop)
            codex.add(codex_command, codex_env, codex_payload)
            unmanaged.add(commands["Stop"], base_env, stop)

        route = live.engine.conn.execute(
            "SELECT f.frame_id, v.view_id FROM frames f JOIN user_views v"
            " ON v.active_frame_id = f.frame_id WHERE f.role = 'workspace'").fetchone()
        push_hook, push_worker = Series("Stop starting a push (hook)"), \
            Series("push done by the worker")
        for number in range(push_runs):
            transition_id = _push_waiting(live, pane_env, route[0], route[1], number)
            started = time.perf_counter()
            push_hook.add(commands["Stop"], pane_env, stop)
            _wait_state(live, transition_id, ("awaiting_claim", "completed"), 60)
            push_worker.samples.append((time.perf_counter() - started) * 1000)
            _wait_state(live, transition_id, ("completed",), 60)  # the child claimed it
            live.engine.frame_back(new_request_id(), route[1])
        live.engine.conn.close()
    finally:
        for server in (socket, folder / "codex-tmux.sock"):
            subprocess.run(["tmux", "-S", str(server), "kill-server"], capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)
    return [base, prompts, stops, codex, unmanaged], push_hook, push_worker


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--push-runs", type=int, default=5)
    args = parser.parse_args()
    plain, push_hook, push_worker = run(args.runs, args.push_runs)
    # (ratios are of medians; the cpu ratio is the steadier figure on a loaded machine)
    base, base_cpu = plain[0].median, plain[0].cpu_median
    print(f"hook command: sh -c '{shlex.join(launch_hook_command())} --provider claude EVENT'"
          f"  ({args.runs} runs, load average {os.getloadavg()[0]:.2f})")
    targets = {"Stop (managed)": MANAGED_STOP_RATIO, "Codex Stop (managed)": MANAGED_STOP_RATIO,
               "Stop (unmanaged)": UNMANAGED_RATIO}
    for series in plain:
        ratio = series.median / base
        target = targets.get(series.name)
        verdict = "" if target is None else \
            f"  target <= {target:.1f}x: {'OK' if ratio <= target else 'OVER'}"
        print(f"{series.name:28s} median {series.median:7.1f} ms  max {max(series.samples):7.1f}"
              f" ms  {ratio:4.2f}x{verdict}   (cpu {series.cpu_median:5.1f} ms ="
              f" {series.cpu_median / base_cpu:4.2f}x)")
    if push_hook.samples:
        verdict = "OK" if push_hook.median < PUSH_STOP_MS else "OVER"
        print(f"{push_hook.name:28s} median {push_hook.median:7.1f} ms  max "
              f"{max(push_hook.samples):7.1f} ms  {push_hook.median / base:4.2f}x  target < "
              f"{PUSH_STOP_MS:.0f} ms: {verdict}   (cpu {push_hook.cpu_median:5.1f} ms ="
              f" {push_hook.cpu_median / base_cpu:4.2f}x)")
        print(f"{push_worker.name:28s} median {push_worker.median:7.1f} ms  max "
              f"{max(push_worker.samples):7.1f} ms  (after the hook returned; no target)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
