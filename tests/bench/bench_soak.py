"""The long soak: 30 minutes of seeded work and faults over four views, counters flat.

Run: ``python -m tests.bench.bench_soak [--seconds 1800] [--views 4] [--seed N]``
(``SB_SOAK_SECONDS=120`` for a quick run). The world and the operations are
``tests.soak.driver`` (the short run of `make test` is ``tests/soak/test_soak.py``);
here the phases go on until the time is up, with a `tmux kill-server` and
`switchboard restore` every ``--restore-every`` phases.

Printed beside the targets: orphaned processes and tmux clients (0), fds of the
tmux server, of the navigators and of this process and navigator RSS flat (no
growth beyond 5 % after the warm-up), WAL files bounded (the largest sample
against 64 MB), 0 lost or twice-typed messages, and the phases whose check failed (0).

Navigator memory is judged so that growth means a leak (docs/decisions.md,
"Navigator memory over a long run (issue 25)"): a real client shows one view for
the whole run (``Soak(watch=True)``), so its navigator lives from one restore to
the next (``--restore-every`` phases, a few minutes) while every other navigator
is killed, parked or woken within a minute. Growth is the median of the last third
of a navigator's samples against the median of the first third, after its warm-up
(``WATCH_WARM_S`` for the watched one, whose first minute fills Textual's and the
allocator's working set; ``WARM_S`` for the others): a spike that comes back (a
toast, a turn's transient allocations) moves no median, a leak moves the last one.
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
from dataclasses import asdict, dataclass
from pathlib import Path

from tests.soak.driver import WARM_S, Sample, Soak, flat, per_process

WAL_BOUND = 64 * 1024 * 1024
WATCH_WARM_S = 60.0
"""The watched navigator's warm-up: after its imports (the first second) it still grows
~2 MB over its first minute (caches filling, the allocator's working set), then stays
flat (measured over 5 minutes and ~800 operations)."""
MIN_SERIES = 6
"""Samples after the warm-up a navigator needs before its growth is judged."""


def _thirds(values: list[int]) -> list[int]:
    """[median of the first third, median of the last third] (a leak moves the second)."""
    third = max(1, len(values) // 3)
    return [int(statistics.median(values[:third])), int(statistics.median(values[-third:]))]


def _verdict(ok: bool) -> str:
    return "OK" if ok else "OVER"


def _grown(values: list[int], tolerance: float = 0.05) -> bool:
    """The last third's median above the first third's by more than ``tolerance``."""
    first, last = _thirds(values)
    return last > first * (1 + tolerance)


@dataclass
class Series:
    """One navigator process's RSS samples (KB) after its warm-up, and what they span."""

    pid: int
    values: list[int]
    ops: int
    """Operations drawn while it was sampled."""


def rss_series(samples: list[Sample], *, watched: bool) -> list[Series]:
    """Per navigator process: the watched view's (after ``WATCH_WARM_S``) or the others'
    (after ``WARM_S``)."""
    rows: dict[int, list[tuple[int, int]]] = {}
    for sample in samples:
        for pid, rss, age in zip(sample.navigator_pids, sample.navigator_rss_kb,
                                 sample.navigator_ages, strict=False):
            if rss < 0 or (pid == sample.watched_pid) != watched:
                continue
            if age >= (WATCH_WARM_S if watched else WARM_S):
                rows.setdefault(pid, []).append((rss, sample.ops_done))
    found = [Series(pid, [r for r, _ in row], row[-1][1] - row[0][1])
             for pid, row in rows.items()]
    return [s for s in found if len(s.values) >= MIN_SERIES]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float,
                        default=float(os.environ.get("SB_SOAK_SECONDS", "1800")))
    parser.add_argument("--views", type=int, default=4)
    parser.add_argument("--seed", type=int, default=25)
    parser.add_argument("--ops", type=int, default=8, help="operations per phase")
    parser.add_argument("--restore-every", type=int, default=50,
                        help="phases between server kills (a restore ends every navigator:"
                        " the watched one lives this long, ~3 minutes)")
    args = parser.parse_args(argv)
    folder = Path(tempfile.mkdtemp(prefix="sbsoak-", dir="/tmp"))
    saved = {k: os.environ.get(k) for k in ("SWITCHBOARD_HOME", "SWITCHBOARD_CONFIG")}
    os.environ["SWITCHBOARD_HOME"] = str(folder / "home")
    os.environ["SWITCHBOARD_CONFIG"] = str(folder / "home" / "config.toml")
    for name in ("TMUX", "TMUX_PANE", "SWITCHBOARD_VIEW_ID"):
        os.environ.pop(name, None)
    soak = Soak(folder, args.seed, views=args.views, watch=True)
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
    watched = rss_series(samples, watched=True)
    others = rss_series(samples, watched=False)
    longest = max(watched, key=lambda s: len(s.values), default=Series(0, [0], 0))
    worst_other = max(others, key=lambda s: _thirds(s.values)[1] / max(1, _thirds(s.values)[0]),
                      default=Series(0, [0], 0))
    # judged by the medians of its first and last thirds, as RSS is: a descriptor a
    # request holds for a moment (a tmux command's pipe) is not a leak, a growing count is
    worst_fds = max((_thirds(v) for v in nav_fds.values()), key=lambda t: t[1] - t[0],
                    default=[0, 0])
    wal = max(s.wal_bytes for s in samples)
    largest = max(samples, key=lambda s: s.wal_largest)
    lost = report.messages_sent - report.messages_delivered
    checks = {
        "orphans": orphans == 0, "clients": clients == 0, "server_fds": flat(server_fds),
        "nav_fds": all(flat(_thirds(v)) for v in nav_fds.values()), "own_fds": flat(own_fds),
        "rss": not any(_grown(s.values) for s in watched),
        "rss_others": not any(_grown(s.values) for s in others),
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
    print(f"  navigator fds           {worst_fds[0]:6d} -> {worst_fds[1]} (medians of the first "
          f"and last thirds of the navigator that grew most, of {len(nav_fds)} followed)   "
          f"flat within 5 %: "
          f"{_verdict(checks['nav_fds'])}")
    print(f"  this process's fds      {own_fds[0]:6d} -> {max(own_fds)} (max)   "
          f"flat within 5 %: {_verdict(checks['own_fds'])}")
    first, last = _thirds(longest.values)
    print(f"  watched navigator RSS   {first / 1024:6.1f} -> {last / 1024:.1f} MB (medians of the "
          f"first and last thirds after {WATCH_WARM_S:g} s; the longest of {len(watched)}: "
          f"{len(longest.values)} samples over {longest.ops} operations, peak "
          f"{max(longest.values) / 1024:.1f} MB)   flat within 5 %: {_verdict(checks['rss'])}")
    first, last = _thirds(worst_other.values)
    print(f"  other navigators RSS    {first / 1024:6.1f} -> {last / 1024:.1f} MB (the one that "
          f"grew most, of {len(others)} followed {MIN_SERIES}+ samples after {WARM_S:g} s)"
          f"   flat within 5 %: {_verdict(checks['rss_others'])}")
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
    dump = Path(tempfile.gettempdir()) / f"bench_soak_{args.seed}_{args.seconds:g}s.json"
    dump.write_text(json.dumps({"ops": report.ops, "problems": report.problems,
                                "samples": [asdict(s) for s in samples]}))
    print(f"  samples and problems: {dump}")
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
