"""Every Switchboard process of one home, found by that home: what the fleet benches count.

A process is the home's when the environment it started with names the home
(``SWITCHBOARD_HOME=<root>``: the navigators in their panes, the server
``core.server.main``, the detached workers, the hooks an agent runs, the agent-tool
processes) or when it runs under the home's tmux server. tmux itself, the agents (the
fake agent's module) and the bench's own process are "the agents and tmux" and are
left out: the figures are what Switchboard adds beside them.

Kinds are told by the command line, so a figure can say where the memory or the CPU
goes. ``Tracker`` follows the processes over a phase (a storm) and adds up the CPU of
every one it saw, the short-lived hooks and workers included, each at its last
reading before it ended (a process that starts and ends between two readings is
missed: the poll is 50 ms, a Python process lives longer than that).

Linux only (``/proc``), like the benches that use it.
"""

from __future__ import annotations

import os
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

AGENT_MARK = b"core.providers.fake.agent"
TICK = os.sysconf("SC_CLK_TCK")


class Kind(StrEnum):
    NAVIGATOR = "navigators"
    SERVER = "server"
    WORKER = "workers"
    HOOK = "hooks"
    AGENT_TOOLS = "agent tools"
    OTHER = "other"


_MARKS: tuple[tuple[Kind, tuple[bytes, ...]], ...] = (
    (Kind.HOOK, (b"hook_entry.py", b"navigator.cli\0hook", b"navigator.cli hook")),
    (Kind.NAVIGATOR, (b"navigator.cli\0ui",)),
    (Kind.SERVER, (b"core.server.main",)),
    (Kind.AGENT_TOOLS, (b"core.memory.mcp_host", b"sb-mcp-shim", b"navigator.cli\0mcp")),
    (Kind.WORKER, (b"worker", b"core.remote.follower", b"core.broker.kick")),
)


def kind_of(argv: bytes) -> Kind:
    for kind, marks in _MARKS:
        if any(mark in argv for mark in marks):
            return kind
    return Kind.OTHER


@dataclass
class Proc:
    pid: int
    ppid: int
    argv: bytes
    kind: Kind
    rss_mb: float = 0.0
    pss_mb: float = 0.0
    ticks: int = 0
    """utime + stime at the last reading."""


def _stat(pid: int) -> tuple[int, int] | None:
    """(ppid, utime + stime) of ``pid``; None when it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return int(fields[1]), int(fields[11]) + int(fields[12])


@dataclass(frozen=True)
class Memory:
    """One process's memory in MB: resident, proportional (shared pages split among
    their users) and unique (its private pages alone)."""

    rss: float = 0.0
    pss: float = 0.0
    uss: float = 0.0


def memory_of(pid: int) -> Memory:
    """``pid``'s memory from ``smaps_rollup``; zeros when it is gone."""
    values: dict[str, float] = {}
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            name, _, rest = line.partition(":")
            if name in ("Rss", "Pss", "Private_Clean", "Private_Dirty"):
                values[name] = int(rest.split()[0]) / 1024
    except (OSError, ValueError, IndexError):
        pass
    return Memory(values.get("Rss", 0.0), values.get("Pss", 0.0),
                  values.get("Private_Clean", 0.0) + values.get("Private_Dirty", 0.0))


def _pids() -> list[int]:
    return [int(entry) for entry in os.listdir("/proc") if entry.isdigit()]


def stats() -> dict[int, tuple[int, int]]:
    """pid -> (ppid, utime + stime) of every process now."""
    return {pid: stat for pid in _pids() if (stat := _stat(pid)) is not None}


class Home:
    """The home's processes, read on demand; a pid is judged once (its environment and
    command line do not change after exec, and a bench's phase is far shorter than
    the kernel takes to reuse a pid), but for hooks (see ``_judge``)."""

    def __init__(self, root: Path, tmux_pid: int | None = None) -> None:
        self.mark = b"SWITCHBOARD_HOME=" + os.fsencode(root) + b"\0"
        self.tmux_pid = tmux_pid
        self._judged: dict[int, Kind | None] = {}
        self._argv: dict[int, bytes] = {}

    def _judge(self, pid: int, parents: dict[int, int]) -> Kind | None:
        if pid in self._judged and self._judged[pid] is not Kind.HOOK:
            return self._judged[pid]
        # (a hook is judged again: a worker it forks shows the hook's command line
        # until its exec, and is told apart at the next reading)
        verdict: Kind | None = None
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes()
            environ = Path(f"/proc/{pid}/environ").read_bytes() + b"\0"
        except OSError:
            return None
        if not argv:  # a zombie, or a process between fork and exec: judged later
            return None
        ours = self.mark in environ or self._under_tmux(pid, parents)
        if ours and pid != os.getpid() and program(argv) != "tmux" \
                and AGENT_MARK not in argv:
            verdict = kind_of(argv)
        self._judged[pid] = verdict
        self._argv[pid] = argv
        return verdict

    def _under_tmux(self, pid: int, parents: dict[int, int]) -> bool:
        seen = 0
        while pid > 1 and seen < 64:
            pid, seen = parents.get(pid, 0), seen + 1
            if pid == self.tmux_pid:
                return True
        return False

    def processes(self, memory: bool = True) -> list[Proc]:
        """The home's processes now; their RSS/PSS too when ``memory``."""
        now = stats()
        parents = {pid: stat[0] for pid, stat in now.items()}
        found: list[Proc] = []
        for pid, (ppid, ticks) in now.items():
            kind = self._judge(pid, parents)
            if kind is None:
                continue
            proc = Proc(pid, ppid, self._argv[pid], kind, ticks=ticks)
            if memory:
                read = memory_of(pid)
                proc.rss_mb, proc.pss_mb = read.rss, read.pss
            found.append(proc)
        return found


@dataclass
class Census:
    """One reading of a home's processes, summed by kind."""

    procs: list[Proc]

    def rss(self, *kinds: Kind) -> float:
        return sum(p.rss_mb for p in self.procs if not kinds or p.kind in kinds)

    def pss(self, *kinds: Kind) -> float:
        return sum(p.pss_mb for p in self.procs if not kinds or p.kind in kinds)

    def count(self, *kinds: Kind) -> int:
        return sum(1 for p in self.procs if not kinds or p.kind in kinds)

    def by_kind(self) -> str:
        """``navigators 3 (120.1 MB), server 1 (40.2 MB), ...`` for the kinds present; the
        programs of "other" named."""
        parts = []
        for kind in Kind:
            count = self.count(kind)
            if not count:
                continue
            part = f"{kind.value} {count} ({self.rss(kind):.1f} MB"
            if kind is Kind.OTHER:
                names = Counter(program(p.argv) for p in self.procs if p.kind is kind)
                part += ": " + ", ".join(f"{name} x{n}" for name, n in names.most_common())
            parts.append(part + ")")
        return ", ".join(parts) or "none"


def program(argv: bytes) -> str:
    """The module a Python process runs (``-m``), else the program's file name."""
    args = argv.split(b"\0")
    if b"-m" in args[:-1]:
        return os.fsdecode(args[args.index(b"-m") + 1])
    return os.path.basename(os.fsdecode(args[0])) or "?"


def census(root: Path, tmux_pid: int | None = None) -> Census:
    return Census(Home(root, tmux_pid).processes())


@dataclass
class Tracker:
    """CPU of a home's processes over a phase: ``start()``, ``poll()`` often, ``stop()``.

    A process already running at ``start`` counts from its reading then; one that
    starts later counts from zero (its whole life); each counts up to its last reading."""

    home: Home
    first: dict[int, int] = field(default_factory=dict)
    last: dict[int, int] = field(default_factory=dict)
    kinds: dict[int, Kind] = field(default_factory=dict)
    started: float = 0.0
    stopped: float = 0.0

    def start(self) -> None:
        for proc in self.home.processes(memory=False):
            self.first[proc.pid] = self.last[proc.pid] = proc.ticks
            self.kinds[proc.pid] = proc.kind
        self.started = time.monotonic()

    def poll(self) -> None:
        for proc in self.home.processes(memory=False):
            self.first.setdefault(proc.pid, 0)
            self.last[proc.pid] = proc.ticks
            self.kinds[proc.pid] = proc.kind

    def stop(self) -> None:
        self.poll()
        self.stopped = time.monotonic()

    def percent(self, kinds: Iterable[Kind] | None = None) -> float:
        """% of one core over the phase, for ``kinds`` (every kind when None)."""
        wanted = set(Kind if kinds is None else kinds)
        ticks = sum(self.last[pid] - self.first[pid] for pid, kind in self.kinds.items()
                    if kind in wanted)
        return ticks / TICK / max(1e-9, self.stopped - self.started) * 100

    def seen(self, kind: Kind) -> int:
        return sum(1 for k in self.kinds.values() if k == kind)


def follow(home: Home, action: Callable[[], object], every_s: float = 0.05) -> Tracker:
    """The home's CPU while ``action`` runs, read every ``every_s`` by a thread."""
    tracker = Tracker(home)
    tracker.start()
    done = threading.Event()

    def poll() -> None:
        while not done.wait(every_s):
            tracker.poll()

    thread = threading.Thread(target=poll, daemon=True)
    thread.start()
    try:
        action()
    finally:
        done.set()
        thread.join(5)
        tracker.stop()
    return tracker
