"""The server's periodic pass: what a navigator's "reconcile turn" used to do.

Every ``interval`` seconds, while the home's tmux server is up, one pass:

1. ``reconcile`` tmux with the registry (dead panes, expired leases and watchdogs,
   exited providers, stale activity; recoveries opened where a way out is needed);
2. a passive WAL checkpoint (hooks leave the registry's checkpoints to this pass);
3. the tmux status segment, when its counts moved without a hook (an agent found
   gone sends none);
4. the broker lines that wait for an agent able to take them (the backstop for a
   Stop whose ``kick`` worker was lost);
5. the parking policy (``core.memory.turn.park_unseen``);
6. the remote followers: cached state of unconfigured remotes dropped, one follower
   per configured remote running (a killed one is started again), the interest held
   for the server's life.

Each step is guarded on its own: a failing one is logged once per run of failures
and the others still run. The pass holds nothing the registry does not: a server
killed in the middle of a pass leaves what reconcile leaves when any process dies
mid-way (its writes are transactions; the next pass, or `switchboard reconcile`,
finishes the rest). A fresh engine per pass follows a registry reset and a config
edit without a restart.
"""

from __future__ import annotations

import contextlib
import math
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from core.config.home import Home
from core.model.text import shown
from core.server.lifetime import tmux_alive

if TYPE_CHECKING:
    from core.engine.engine import Engine
    from core.reconcile.reconcile import ReconcileReport

_T = TypeVar("_T")

RECONCILE_INTERVAL_S = 10.0
"""Seconds between two passes (what every navigator's turn used to be due after)."""
ENV_INTERVAL = "SWITCHBOARD_RECONCILE_INTERVAL"
"""A tuning knob a front end may pass to the server it starts (tests, benches)."""


def interval_from_env() -> float:
    """Seconds between passes; ``off`` is no pass at all (``math.inf``): the server still
    serves the agent tools and the turn-end work. Tests that step through reconcile on
    an engine clock of their own use it: a pass on the real clock would race them."""
    raw = os.environ.get(ENV_INTERVAL, "")
    if raw.strip().lower() == "off":
        return math.inf
    try:
        value = float(raw) if raw else RECONCILE_INTERVAL_S
    except ValueError:
        return RECONCILE_INTERVAL_S
    return value if value > 0 else RECONCILE_INTERVAL_S


@dataclass(frozen=True)
class PassReport:
    """What one pass did (the server logs it; tests read it)."""

    skipped: str | None = None
    reconciled: ReconcileReport | None = None
    problems: tuple[str, ...] = ()

    @property
    def recoveries_opened(self) -> int:
        return self.reconciled.recoveries_opened if self.reconciled is not None else 0


@dataclass
class Housekeeper:
    """The pass and its memory between passes (the problems it said)."""

    home: Home
    log: Callable[[str], None]
    _said: dict[str, str] = field(default_factory=dict)

    def tmux_socket(self) -> str | None:
        """The home's views socket; None when the home has no config (nothing to do)."""
        from core.config.config import configured_views_socket

        return configured_views_socket(self.home.config_path, self.home.root)

    def run_pass(self) -> PassReport:
        """One pass. Without a config there is nothing to do; without a reachable tmux
        server the tmux steps wait (reconcile would read every pane as gone), and only
        the remote followers are kept."""
        socket = None
        with contextlib.suppress(Exception):
            socket = self.tmux_socket()
        if socket is None:
            return PassReport(skipped="no config")
        from core.engine.open import open_engine
        from core.model.errors import SwitchboardError

        tmux_up = tmux_alive(socket)
        try:
            engine = open_engine(self.home, with_stage=tmux_up)
        except (SwitchboardError, OSError) as exc:
            self._problem("open", shown(exc))
            return PassReport(skipped=f"registry: {shown(exc)}")
        self._fine("open")
        problems: list[str] = []
        report = None
        try:
            if tmux_up:
                report = self._step("reconcile", problems, lambda: self._reconcile(engine))
            self._step("checkpoint", problems, lambda: self._checkpoint(engine))
            if tmux_up:
                self._step("attention", problems, lambda: self._attention(engine, socket))
                self._step("delivery", problems, lambda: self._deliver(engine))
                self._step("parking", problems, lambda: self._park(engine))
            self._step("remotes", problems, lambda: self._follow_remotes(engine))
        finally:
            engine.conn.close()
        if report is not None and report.recoveries_opened:
            self.log(f"reconcile opened {report.recoveries_opened} recovery(ies)")
        return PassReport(skipped=None if tmux_up else "no tmux server", reconciled=report,
                          problems=tuple(problems))

    # ------------------------------------------------------------------ steps

    @staticmethod
    def _reconcile(engine: Engine) -> ReconcileReport:
        from core.reconcile.reconcile import reconcile

        return reconcile(engine)

    @staticmethod
    def _checkpoint(engine: Engine) -> None:
        from storage.connection import checkpoint_wal

        checkpoint_wal(engine.conn)

    @staticmethod
    def _attention(engine: Engine, socket: str) -> None:
        """The live counts in the status line when they moved without a hook (an agent
        found gone sends none). Hooks, a stop and the remote followers set it too, so
        what tmux shows is read (one tmux process) and set only when it differs; a
        person who turned the status line off is left alone."""
        import subprocess

        from core.hooks.attention_counts import OPTION, read_counts, spawn_segment

        if not engine.config.attention.status_line:
            return
        segment = read_counts(engine.conn).segment()
        shown = subprocess.run(["tmux", "-S", socket, "show-options", "-gqv", OPTION],  # noqa: S607
                               capture_output=True, text=True, timeout=10, check=False)
        if shown.returncode == 0 and shown.stdout.rstrip("\n") != segment:
            spawn_segment(socket, segment)

    def _deliver(self, engine: Engine) -> None:
        """Type the broker lines that wait for an agent that can take them now.

        An agent's Stop hands its pending lines to a detached ``kick`` worker at once;
        this is the backstop for a Stop whose worker died or never started (killed,
        out of memory), which otherwise waited for the agent's next Stop, possibly
        never. Same gate, same pane locks and attempt records as every typist, so a
        kill in the middle (of this server or of a worker) types nothing twice. One
        read-only query per open frame; the broker is opened only for a project that
        has a line waiting."""
        from core.broker.kick import pending_for_frame
        from core.broker.membership import deliver_pending

        broker = self.home.broker_path
        if not broker.exists():
            return
        rows = engine.conn.execute(
            "SELECT frame_id, project_id FROM frames WHERE lifecycle_state = 'open'").fetchall()
        projects = sorted({row[1] for row in rows if pending_for_frame(broker, row[0])})
        for project_id in projects:
            typed = sum(len(report.notified) for report in deliver_pending(engine, project_id))
            if typed:
                self.log(f"typed {typed} waiting broker line(s) in project {project_id}")

    @staticmethod
    def _park(engine: Engine) -> None:
        from core.memory.turn import park_unseen

        park_unseen(engine)

    def _follow_remotes(self, engine: Engine) -> None:
        """The followers of configured remotes, kept running while the server lives."""
        from core.remote.interest import ensure_followers, hold_interest
        from core.state.remotes import prune_unconfigured

        config = engine.config
        prune_unconfigured(engine.conn, config.remotes)
        if config.remotes:
            hold_interest(self.home)  # for the server's life: followers idle-exit after it
            for name, pid in ensure_followers(self.home, config):
                self.log(f"started the follower of remote {name} (pid {pid})")

    # ------------------------------------------------------------------ problems

    def _step(self, name: str, problems: list[str], work: Callable[[], _T]) -> _T | None:
        try:
            done = work()
        except Exception as exc:  # one failing step never stops the others or the loop
            problem = f"{name}: {shown(exc)}"
            problems.append(problem)
            self._problem(name, problem)
            return None
        self._fine(name)
        return done

    def _problem(self, step: str, text: str) -> None:
        if self._said.get(step) != text:
            self._said[step] = text
            self.log(f"housekeeping {step} failed: {text} (retried every pass)")

    def _fine(self, step: str) -> None:
        if self._said.pop(step, None) is not None:
            self.log(f"housekeeping {step} works again")


def run_loop(keeper: Housekeeper, interval: float, stop: threading.Event,
             on_pass: Callable[[PassReport], None] | None = None) -> None:
    """A pass at once (a server started by a navigator first checks tmux; the server
    starts this loop once its endpoint has answered its first requests, at most
    ``core.server.main.BACKGROUND_WAIT_MAX_S`` after listening), then one every
    ``interval`` seconds from the start of the last, until ``stop``; no pass at all
    when the interval is infinite (``off``)."""
    if math.isinf(interval):
        return
    while not stop.is_set():
        started = time.monotonic()
        report = keeper.run_pass()
        if on_pass is not None:
            on_pass(report)
        stop.wait(max(0.0, interval - (time.monotonic() - started)))


__all__ = ["ENV_INTERVAL", "Housekeeper", "PassReport", "RECONCILE_INTERVAL_S",
           "interval_from_env", "run_loop"]
