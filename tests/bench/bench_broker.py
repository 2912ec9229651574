"""Broker benchmark: 1,000 send+notify into one live pane on a private tmux server.

Run: ``python -m tests.bench.bench_broker [--messages N]``.

Each iteration stores a message and drains the recipient's notifications
(pane lock, revalidation, one ``send-keys`` command list, ``notified_at``
stamp), then polls ``capture-pane`` until the typed line is on screen. It
prints send+notify throughput (time spent in ``send`` only), the end-to-end
rate including the visibility checks, and the send-to-visible latency
(from the start of ``send`` to the first capture that shows the line).
The fake agent is ``cat`` with tty echo off, so each line appears once.
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
from tests.waiting import retry_until

VISIBLE_TIMEOUT_S = 5.0


def _start_server(socket: Path) -> tuple[libtmux.Server, PlacementSpec, PlacementSpec]:
    env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}
    subprocess.run(["tmux", "-S", str(socket), "-f", "/dev/null", "new-session", "-d", "-s",
                    "bench", "-x", "200", "-y", "50"], check=True, env=env)
    server = libtmux.Server(socket_path=str(socket))
    director = server.cmd("display-message", "-p", "-t", "bench:",
                          "#{window_id}\t#{pane_id}").stdout[0].split("\t")
    out = server.cmd("new-window", "-d", "-t", "bench:", "-P", "-F",
                     "#{window_id}\t#{pane_id}", "stty -echo; exec cat").stdout[0]
    window, pane = out.split("\t")
    if not retry_until(lambda: server.cmd("display-message", "-p", "-t", pane,
                                          "#{pane_current_command}").stdout == ["cat"],
                       5, interval=0.01):
        raise RuntimeError("the fake agent pane did not start")
    return (server, PlacementSpec("bench", director[0], director[1], "claude"),
            PlacementSpec("bench", window, pane, "claude"))


def run(messages: int = 1000) -> dict[str, float]:
    folder = Path(tempfile.mkdtemp(prefix="sbbench-", dir="/tmp"))
    socket = folder / "tmux.sock"
    try:
        server, director_at, worker_at = _start_server(socket)
        with Broker.open(folder / "broker.sqlite3", tmux_socket=socket) as broker:
            created = broker.create_fleet("bench", director_name="director",
                                          director_description="bench",
                                          placement=director_at)
            fleet_id = created.fleet.fleet_id
            director_id = created.director.member.member_id
            worker_id = broker.register_member(fleet_id, "worker", description="cat",
                                               placement=worker_at).member.member_id
            pane = worker_at.mux_pane_id
            assert pane is not None
            send_seconds: list[float] = []
            latencies: list[float] = []
            started = time.perf_counter()
            for n in range(messages):
                t0 = time.perf_counter()
                result = broker.send(fleet_id, director_id, worker_id, f"task {n}")
                t1 = time.perf_counter()
                message_id = result.message.message_id
                if result.delivery is None or result.delivery.notified != (message_id,):
                    raise RuntimeError(f"message {message_id} not notified: {result.delivery}")
                needle = f"message {message_id} from"
                while True:
                    screen = server.cmd("capture-pane", "-p", "-t", pane).stdout
                    if any(needle in line for line in screen[-3:]):
                        break
                    if time.perf_counter() - t0 > VISIBLE_TIMEOUT_S:
                        raise RuntimeError(f"message {message_id} never became visible")
                t2 = time.perf_counter()
                send_seconds.append(t1 - t0)
                latencies.append(t2 - t0)
            total = time.perf_counter() - started
            unstamped = broker.store.conn.execute(
                "SELECT count(*) FROM messages WHERE notified_at IS NULL").fetchone()[0]
            if unstamped:
                raise RuntimeError(f"{unstamped} messages left unstamped")
        latencies.sort()
        return {
            "messages": messages,
            "send_notify_per_second": messages / sum(send_seconds),
            "end_to_end_per_second": messages / total,
            "median_send_to_visible_ms": statistics.median(latencies) * 1000,
            "p95_send_to_visible_ms": latencies[int(0.95 * (len(latencies) - 1))] * 1000,
            "max_send_to_visible_ms": latencies[-1] * 1000,
            "total_seconds": total,
        }
    finally:
        subprocess.run(["tmux", "-S", str(socket), "kill-server"], capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=1000)
    args = parser.parse_args()
    result = run(args.messages)
    tmux_version = subprocess.run(["tmux", "-V"], capture_output=True, text=True).stdout.strip()
    print(f"broker bench: {result['messages']:.0f} send+notify into one live pane "
          f"({tmux_version}, private socket)")
    print(f"  send+notify throughput:      {result['send_notify_per_second']:.1f} messages/s")
    print(f"  end to end (with captures):  {result['end_to_end_per_second']:.1f} messages/s "
          f"over {result['total_seconds']:.1f} s")
    print(f"  send-to-visible latency:     median {result['median_send_to_visible_ms']:.1f} ms, "
          f"p95 {result['p95_send_to_visible_ms']:.1f} ms, "
          f"max {result['max_send_to_visible_ms']:.1f} ms")


if __name__ == "__main__":
    main()
