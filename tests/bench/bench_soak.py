"""The long soak: 30 minutes of seeded work and faults over four views, counters flat.

Run: ``python -m tests.bench.bench_soak [--seconds 1800] [--views 4] [--seed N]``
(``SB_SOAK_SECONDS=120`` for a quick run). The world and the operations are
``tests.soak.driver`` (the short run of `make test` is ``tests/soak/test_soak.py``);
here the phases go on until the time is up, with a `tmux kill-server` and
`switchboard restore` every ``--restore-every`` phases.

Printed beside the targets: orphaned processes and tmux clients (0), fds of the
tmux server, of the navigators and of this process and navigator RSS flat (no
growth beyond 5 % after the warm-up, the first quarter of the phases; the floor
is the first sample after it), WAL files bounded (the largest sample against
64 MB), 0 lost or twice-typed messages, and the phases whose check failed (0).
Navigator parking is not in the mix: it is not built yet.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import tempfile
from collections import Counter
from dataclasses import asdict
from pathlib import Path

from tests.soak.driver import Sample, Soak, flat, per_process

WAL_BOUND = 64 * 1024 * 1024


def _thirds(values: list[int]) -> list[int]:
    """[median of the first third, median of the last third] (a leak moves the second)."""
    third = max(1, len(values) // 3)
    return [int(statistics.median(values[:third])), int(statistics.median(values[-third:]))]


def _verdict(ok: bool) -> str:
    return "OK" if ok else "OVER"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float,
                        default=float(os.environ.get("SB_SOAK_SECONDS", "1800")))
    parser.add_argument("--views", type=int, default=4)
    parser.add_argument("--seed", type=int, default=25)
    parser.add_argument("--ops", type=int, default=8, help="operations per phase")
    parser.add_argument("--restore-every", type=int, default=10)
    args = parser.parse_args(argv)
    folder = Path(tempfile.mkdtemp(prefix="sbsoak-", dir="/tmp"))
    saved = {k: os.environ.get(k) for k in ("SWITCHBOARD_HOME", "SWITCHBOARD_CONFIG")}
    os.environ["SWITCHBOARD_HOME"] = str(folder / "home")
    os.environ["SWITCHBOARD_CONFIG"] = str(folder / "home" / "config.toml")
    for name in ("TMUX", "TMUX_PANE", "SWITCHBOARD_VIEW_ID"):
        os.environ.pop(name, None)
    soak = Soak(folder, args.seed, views=args.views)
    try:
        print(f"soak: {args.views} views, seed {args.seed}, {args.seconds:g} s ...", flush=True)
        soak.setup()
        report = soak.run(phases=None, seconds=args.seconds, ops_per_phase=args.ops,
                          server_kill_phases=set(), every=args.restore_every)
    finally:
        soak.close()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        shutil.rmtree(folder, ignore_errors=True)
    samples: list[Sample] = report.samples
    after = samples[max(1, len(samples) // 4):] or samples
    orphans = max(len(s.orphans) for s in samples)
    clients = max(s.clients for s in samples)
    # One pty per pane is not a leak, and every tmux command in flight (hooks run them)
    # holds a client fd for a moment: the medians of the first and last thirds compare.
    server_fds = _thirds([s.server_fds - s.panes for s in after])
    nav_fds = {pid: v for pid, v in per_process(after, "navigator_fds").items() if len(v) > 1}
    own_fds = [s.own_fds for s in after]
    rss = {pid: v for pid, v in per_process(after, "navigator_rss_kb").items() if len(v) > 1}
    worst_fds = max(nav_fds.values(), key=lambda v: max(v) - v[0], default=[0])
    worst_rss = max(rss.values(), key=lambda v: max(v) / v[0], default=[1])
    wal = max(s.wal_bytes for s in samples)
    largest = max(samples, key=lambda s: s.wal_largest)
    lost = report.messages_sent - report.messages_delivered
    checks = {
        "orphans": orphans == 0, "clients": clients == 0, "server_fds": flat(server_fds),
        "nav_fds": all(flat(v) for v in nav_fds.values()), "own_fds": flat(own_fds),
        "rss": all(flat(v, slack=0) for v in rss.values()),
        "wal": largest.wal_largest <= WAL_BOUND, "lost": lost == 0,
        "twice": report.typed_twice == 0,
        "phases": not report.problems,
    }
    print(f"soak {args.seconds:g} s: {report.phases} phases, {sum(report.ops.values())} "
          f"operations ({dict(sorted(report.ops.items()))}), {report.restores} restores")
    print(f"  orphaned processes      {orphans:6d}   target 0: {_verdict(checks['orphans'])}")
    for line in next((s.orphans for s in samples if s.orphans), ())[:3]:
        print(f"    {line}")
    print(f"  tmux clients            {clients:6d}   target 0: {_verdict(checks['clients'])}")
    print(f"  tmux server fds         {server_fds[0]:6d} -> {server_fds[1]} (medians of the first "
          f"and last thirds, beyond one pty per pane)   flat within 5 %: "
          f"{_verdict(checks['server_fds'])}")
    print(f"  navigator fds           {worst_fds[0]:6d} -> {max(worst_fds)} (the navigator that "
          f"grew most, of {len(nav_fds)} followed)   flat within 5 %: "
          f"{_verdict(checks['nav_fds'])}")
    print(f"  this process's fds      {own_fds[0]:6d} -> {max(own_fds)} (max)   "
          f"flat within 5 %: {_verdict(checks['own_fds'])}")
    print(f"  navigator RSS           {worst_rss[0] / 1024:6.1f} -> {max(worst_rss) / 1024:.1f} MB "
          f"(the navigator that grew most, of {len(rss)} followed over "
          f"{max((len(v) for v in rss.values()), default=0)} samples)   flat within 5 %: "
          f"{_verdict(checks['rss'])}")
    print(f"  WAL file (largest)      {largest.wal_largest / 1024:6.0f} KB "
          f"({largest.wal_largest_name})   target <= {WAL_BOUND // (1024 * 1024)} MB: "
          f"{_verdict(checks['wal'])}   (all WAL "
          f"files together at most {wal / 1024:.0f} KB)")
    print(f"  evidence                {samples[0].evidence_bytes / 1024:6.0f} -> "
          f"{samples[-1].evidence_bytes / 1024:.0f} KB")
    print(f"  messages                {report.messages_sent} sent, {lost} lost, "
          f"{report.typed_twice} typed twice ({report.read_by_poll} read through another's "
          f"poll)   target 0/0: "
          f"{_verdict(checks['lost'] and checks['twice'])}")
    print(f"  phase checks failed     {len(report.problems):6d}   target 0: "
          f"{_verdict(checks['phases'])}")
    kinds = Counter(re.sub(r"[0-9a-f]{8}|\d+", "N", p.split(": ", 1)[-1])[:90]
                    for p in report.problems)
    for problem, count in kinds.most_common(12):
        print(f"    {count:4d} x {problem}")
    dump = Path(tempfile.gettempdir()) / f"bench_soak_{args.seed}.json"
    dump.write_text(json.dumps({"ops": report.ops, "problems": report.problems,
                                "samples": [asdict(s) for s in samples]}))
    print(f"  samples and problems: {dump}")
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
