"""Parking on leave: a view the person leaves gives its navigator back within a second.

The periodic policy (``core.memory.turn``, every server pass) parks a navigator that
has been unshown ``PARK_AFTER_S`` (60 s): before this, a person who looked at every
view of eight left eight whole Textual apps running for a minute (~42 MB each,
issue 38: 376 MB where 150 MB is the target). Here the server hears each leave at
once and parks what was left, except the view the person came from last.

How the server hears it: tmux server hooks (``session-window-changed``,
``client-session-changed``, ``client-detached``; our index ``HOOK_INDEX`` of each
array) touch one file in the home's run folder (``left_file``): one ``sh`` and one
``touch``, no Python. The server's ``watch_leaves`` thread looks at that file's
time every ``POLL_S`` (a ``stat``, no process); when it moved, it reads which
navigator panes clients show (one read-only tmux process) and compares them with
its last reading: a navigator shown then and not now has been *left*.

Policy (``LeaveBook.note``): of the navigators left and still running and unshown,
the one left last stays (a person flipping between two views never waits for a
navigator's cold start: measured 1.2 s median to a painted app, 5.7 s under load,
while the saved screen shows at once); every other one is parked now (the screen
is saved and shown at wake, as ``core.memory.parking`` always does). So at most
two navigators run per client: the shown one and the one before it, which the
periodic policy parks after ``PARK_AFTER_S`` if the person does not come back.
``SWITCHBOARD_PARK_AFTER=off`` turns this off with the rest of parking.

What the server remembers (the panes shown last and the order views were left) is
a hint: a restarted server starts from what is shown now, and the periodic policy
still parks whatever this one missed.
"""

from __future__ import annotations

import shlex
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from core.memory.parking import (
    SWEEP_LOCK,
    Fleet,
    NavigatorPane,
    fleet_panes,
    hook_commands,
    park,
    park_after,
    screens_dir,
)
from core.model.errors import SwitchboardError
from core.tmux.errors import TmuxUnavailable
from core.tmux.identity import ServerIdentity, run_guarded
from core.tmux.runner import TmuxCommand, TmuxRunner

if TYPE_CHECKING:
    from core.config.home import Home

LEAVE_HOOKS = ("session-window-changed", "client-session-changed", "client-detached")
HOOK_INDEX = 48
"""Our index in each of those hook arrays (the wake line is at 47; the person's own
hooks, at other indexes, stay)."""
LEFT_NAME = "left"
POLL_S = 0.2
"""How often the server looks at ``left_file``'s time: a ``stat``, so a left view is
parked within about this, plus a tmux read and the park's two tmux processes."""
RECHECK_S = 30.0
"""How often the server reads tmux without a leave: a restarted tmux server has lost
the hooks, and this puts them back."""
RETRY_S = 5.0
"""After a failed reading (no tmux server yet), how long before the next."""

def left_file(run_dir: Path) -> Path:
    """The file the hooks touch on each leave, beside the parked navigators' screens."""
    return screens_dir(run_dir) / LEFT_NAME


def _tmux_quoted(text: str) -> str:
    """``text`` as one double-quoted tmux word whose formats are not expanded (``#``
    doubled: ``run-shell`` expands formats in its command)."""
    escaped = (text.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$")
               .replace("#", "##"))
    return f'"{escaped}"'


def leave_hook_commands(run_dir: Path) -> list[TmuxCommand]:
    """Server hooks that touch ``left_file`` whenever what a client shows may have
    changed. Idempotent (our own index of each hook)."""
    body = "run-shell -b " + _tmux_quoted(f"touch {shlex.quote(str(left_file(run_dir)))}")
    return [("set-hook", "-g", f"{hook}[{HOOK_INDEX}]", body) for hook in LEAVE_HOOKS]


@dataclass
class LeaveBook:
    """The watcher's memory between readings: the navigator panes shown at the last
    one, and the panes left since, in the order they were left (oldest first)."""

    shown: frozenset[str] = frozenset()
    left: list[str] = field(default_factory=list)

    def note(self, fleet: Fleet) -> tuple[NavigatorPane, ...]:
        """Take one reading; return the navigators to park now (pure but for the book).

        Left: shown at the last reading, not now. A pane shown again, asleep or gone
        leaves the list; the last one left stays running; every other one left, still
        running and unshown, is due."""
        shown_now = frozenset(p.pane_id for p in fleet.navigators if fleet.shown(p))
        running = {p.pane_id: p for p in fleet.navigators
                   if p.running and not fleet.shown(p)}
        newly = [pane for pane in sorted(self.shown - shown_now) if pane in running]
        order = [pane for pane in self.left if pane not in newly] + newly
        self.left = [pane for pane in order if pane in running]
        self.shown = shown_now
        return tuple(running[pane] for pane in self.left[:-1])

    def parked(self, panes: set[str]) -> None:
        self.left = [pane for pane in self.left if pane not in panes]


class LeaveWatcher:
    """The server's thread: read tmux when the hooks say a client moved, park what
    ``LeaveBook`` says. ``socket_of`` names the home's views socket (None: no config)."""

    def __init__(self, home: Home, socket_of: Callable[[], str | None],
                 log: Callable[[str], None]) -> None:
        self.home = home
        self.socket_of = socket_of
        self.log = log
        self.book = LeaveBook()
        self._hooked: ServerIdentity | None = None
        self._runner: TmuxRunner | None = None
        self._said: str | None = None

    def runner(self) -> TmuxRunner | None:
        socket = self.socket_of()
        if socket is None:
            return None
        if self._runner is None or self._runner.socket_path != socket:
            self._runner = TmuxRunner(socket)
        return self._runner

    def step(self) -> tuple[str, ...]:
        """One reading (one read-only tmux process; the hooks once per tmux server) and
        the parks it calls for; returns the views parked."""
        runner = self.runner()
        if runner is None:
            return ()
        with SWEEP_LOCK:
            fleet = fleet_panes(runner)
            if self._hooked != fleet.identity:
                run_guarded(runner, fleet.identity,
                            [*hook_commands(), *leave_hook_commands(self.home.run_dir)])
                self._hooked = fleet.identity
            due = self.book.note(fleet)
            if not due:
                return ()
            parked = self._park(runner, fleet, due)
        self.book.parked({p.pane_id for p in due if p.view_id in parked})
        return parked

    def _park(self, runner: TmuxRunner, fleet: Fleet,
              due: tuple[NavigatorPane, ...]) -> tuple[str, ...]:
        """Park ``due`` with the engine's spawn of each view (what waking runs); a
        retired view's navigator is left to reconcile."""
        from core.engine.open import open_engine

        engine = open_engine(self.home, with_stage=True)
        try:
            live = {row[0] for row in engine.conn.execute(
                "SELECT view_id FROM user_views WHERE state <> 'retired'")}
            spawn_of = getattr(engine.stage, "navigator_spawn", None)
            if spawn_of is None:
                return ()
            panes = [p for p in due if p.view_id in live]
            return tuple(park(runner, fleet.identity, self.home.run_dir, panes, spawn_of))
        finally:
            engine.conn.close()

    def run(self, stop: threading.Event) -> None:
        """Until ``stop``: a step at start, on every leave, and every ``RECHECK_S``."""
        mark = left_file(self.home.run_dir)
        seen: int | None = -1
        next_read = 0.0
        while not stop.wait(POLL_S):
            if park_after() is None:
                continue
            try:
                stamp: int | None = mark.stat().st_mtime_ns
            except OSError:
                stamp = None
            now = time.monotonic()
            if stamp == seen and now < next_read:
                continue
            seen, next_read = stamp, now + RECHECK_S
            try:
                parked = self.step()
            except TmuxUnavailable:  # no tmux server (yet, or any more): nothing to park
                self._hooked = None
                next_read = now + RETRY_S
                continue
            except (SwitchboardError, OSError, ValueError) as exc:
                self._hooked = None
                next_read = now + RETRY_S
                self._problem(f"parking on leave failed: {exc} (retried)")
                continue
            self._said = None
            if parked:
                self.log(f"parked on leave: {', '.join(parked)}")

    def _problem(self, text: str) -> None:
        if text != self._said:
            self._said = text
            self.log(text)


def watch_leaves(home: Home, socket_of: Callable[[], str | None],
                 log: Callable[[str], None], stop: threading.Event) -> None:
    """The server's leave-parking thread (``core.server.main``)."""
    LeaveWatcher(home, socket_of, log).run(stop)
