"""Managed delivery vs a bare send-keys: send -> line visible in a ready, shown pane.

Run: ``python -m tests.bench.bench_broker_delivery [--rounds N]``.

Recipients are Switchboard-managed members (description ``switchboard-frame:``)
whose panes run ``cat`` with echo off on a private tmux server. The gate says
"shown and ready" (constant), so every message takes the full managed path:
pane lock, revalidation, gate, one guarded tmux command, ``notified_at``
stamp. The baseline types the same line with one bare ``send-keys`` command
list into the same panes, in the same run. Latency is from the start of the
send (or send-keys) to the first ``capture-pane`` showing the line; at 20
recipients one round sends to all 20 in turn and each pane's latency counts.
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

import libtmux

from core.broker.broker import Broker, PlacementSpec
from core.broker.delivery import PaneServer, PaneTarget
from tests.waiting import retry_until

VISIBLE_TIMEOUT_S = 5.0


class _Ready:
    """Every managed pane is ready, on the bench's own server (as the registry records it)."""

    def __init__(self, server: libtmux.Server) -> None:
        pid, start = server.cmd("display-message", "-p", "#{pid} #{start_time}").stdout[0].split()
        self.server = PaneServer(str(server.socket_path), int(pid), int(start))

    def blocked(self, frame_id: str, target: PaneTarget) -> str | None:
        return None

    def server_for(self, frame_id: str) -> PaneServer | None:
        return self.server


def _panes(server: libtmux.Server, count: int) -> list[tuple[str, str]]:
    out = []
    for _ in range(count):
        line = server.cmd("new-window", "-d", "-t", "bench:", "-P", "-F",
                          "#{window_id}\t#{pane_id}", "stty -echo; exec cat").stdout[0]
        out.append(tuple(line.split("\t")))
    deadline = time.monotonic() + 10
    for _, pane in out:
        if not retry_until(lambda pane=pane: server.cmd(
                "display-message", "-p", "-t", pane, "#{pane_current_command}").stdout == ["cat"],
                deadline - time.monotonic(), interval=0.01):
            raise RuntimeError("a fake agent pane did not start")
    return out  # type: ignore[return-value]


def _visible(server: libtmux.Server, pane: str, needle: str, t0: float) -> float:
    while True:
        screen = server.cmd("capture-pane", "-p", "-t", pane).stdout
        if any(needle in line for line in screen[-3:]):
            return time.perf_counter() - t0
        if time.perf_counter() - t0 > VISIBLE_TIMEOUT_S:
            raise RuntimeError(f"{needle!r} never became visible in {pane}")


def run(recipients: int, rounds: int) -> dict[str, float]:
    folder = Path(tempfile.mkdtemp(prefix="sbbench-", dir="/tmp"))
    socket = folder / "tmux.sock"
    env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}
    try:
        subprocess.run(["tmux", "-S", str(socket), "-f", "/dev/null", "new-session", "-d",
                        "-s", "bench", "-x", "200", "-y", "50"], check=True, env=env)
        server = libtmux.Server(socket_path=str(socket))
        panes = _panes(server, recipients)
        with Broker.open(folder / "broker.sqlite3", tmux_socket=socket,
                         gate=_Ready(server)) as broker:
            created = broker.create_fleet("bench", director_name="ws",
                                          director_description="switchboard-frame:ws",
                                          placement=PlacementSpec("bench", "@0", "%0",
                                                                  "fake"))
            fleet = created.fleet.fleet_id
            sender = broker.register_member(fleet, "person", description="switchboard-person",
                                            placement=PlacementSpec("bench", "-", None,
                                                                    "person")).member.member_id
            members = [broker.register_member(
                fleet, f"task{n}", description=f"switchboard-frame:t{n}",
                placement=PlacementSpec("bench", window, pane, "fake")).member.member_id
                for n, (window, pane) in enumerate(panes)]
            managed: list[float] = []
            bare: list[float] = []
            for r in range(rounds):
                starts = []
                for member, (_, pane) in zip(members, panes, strict=True):
                    t0 = time.perf_counter()
                    result = broker.send(fleet, sender, member, f"round {r}")
                    if result.delivery is None or not result.delivery.notified:
                        raise RuntimeError(f"not typed: {result.delivery}")
                    starts.append((pane, f"message {result.message.message_id} from", t0))
                managed += [_visible(server, pane, needle, t0) for pane, needle, t0 in starts]
                starts = []
                for _, pane in panes:
                    needle = f"bare {r} {pane}"
                    t0 = time.perf_counter()
                    server.cmd("send-keys", "-t", pane, "-l", needle, ";",
                               "send-keys", "-t", pane, "Enter")
                    starts.append((pane, needle, t0))
                bare += [_visible(server, pane, needle, t0) for pane, needle, t0 in starts]
        return {"recipients": recipients, "samples": len(managed),
                "managed_median_ms": statistics.median(managed) * 1000,
                "bare_median_ms": statistics.median(bare) * 1000}
    finally:
        subprocess.run(["tmux", "-S", str(socket), "kill-server"], capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=100,
                        help="rounds at 1 recipient (20 recipients: rounds / 10)")
    args = parser.parse_args()
    print("broker delivery bench: send -> line visible in a ready, shown pane "
          "(private tmux socket)")
    for recipients, rounds in ((1, args.rounds), (20, max(1, args.rounds // 10))):
        result = run(recipients, rounds)
        print(f"  {recipients:2d} recipient(s), {result['samples']:.0f} samples: managed "
              f"median {result['managed_median_ms']:.1f} ms vs bare send-keys median "
              f"{result['bare_median_ms']:.1f} ms "
              f"(+{result['managed_median_ms'] - result['bare_median_ms']:.1f} ms)")


if __name__ == "__main__":
    main()
