"""Navigators cost memory only where someone looks: park the unseen ones, wake on sight.

A view's navigator is a whole Textual app (~43 MB RSS). A view no tmux client
shows needs none: the reconcile turn *parks* its navigator. One tmux batch reads
the navigator's screen (``capture-pane -e``, kept in a 0600 file under the home's
run folder) and respawns the pane with ``cat`` of that file, which exits with
``ASLEEP_STATUS``: the pane stays (remain-on-exit, with an empty dead-pane line),
showing the last screen it drew, and holds no process at all. Nothing in the
registry changes: parking is only about the process, so a parked view's mode,
zoom, frames, attention and broker delivery (hook-driven) are exactly as before.

It *wakes* (``wake_view``) when a client shows its window: a server hook
(``session-window-changed``, ``client-session-changed``, ``client-attached``)
runs the window's ``@sb_wake`` line (one tmux client that respawns the pane; no
Python on the way) and clears it; the reconcile turn wakes any shown navigator
the hook missed; a request that needs the navigator (``prefix + S``, opening the view) respawns it
as before (a dead navigator is brought back by the existing code). A woken pane
first prints the saved screen and then execs the navigator, so a screen is there
at once and the app paints over it when it is ready.

Policy (``sweep``): a running navigator of a live view that no client shows,
seen unshown at least ``PARK_AFTER_S`` ago (``@sb_unseen``, a pane option with the
epoch second it was first seen unshown; cleared when shown), is parked. The
navigator of the process running the sweep (the reconcile-turn holder) is parked
only when another navigator that stays running is shown, and last: the turn passes
to that one. A crashed or quit navigator (any other exit status) is still revived
by reconcile as before (``core.tmux.navigator_pane.dead_navigators``).

Public API (also for ``switchboard restore`` and tests): ``park_view`` and
``wake_view`` (one view, now), ``sweep`` (the reconcile turn's policy),
``fleet_panes`` (what is parked, running and shown).
"""

from __future__ import annotations

import contextlib
import os
import shlex
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from core.model.errors import TmuxError
from core.model.files import own_dir, write_private
from core.model.text import strip_sgr
from core.tmux.commands import Check, both, equals, gated, outcomes
from core.tmux.errors import TmuxCommandFailed
from core.tmux.identity import ServerIdentity, identity_command, run_guarded
from core.tmux.navigator_pane import ASLEEP_STATUS, default_navigator_argv, navigator_spawn
from core.tmux.panes import (
    DEAD_STATUS_FORMAT,
    LAST_WORDS_PAUSE_S,
    OPT_ROLE,
    OPT_SERVES,
    PaneRole,
    check_tag_value,
)
from core.tmux.runner import TmuxCommand, TmuxRunner
from core.tmux.topology import NavigatorSpawn, respawn_navigators

ENV_PARK_AFTER = "SWITCHBOARD_PARK_AFTER"
"""Seconds a navigator must stay unshown before it is parked (default ``PARK_AFTER_S``);
``off`` never parks. Read by the process that runs the reconcile turn."""
PARK_AFTER_S = 60.0
"""Long enough that flipping between a few views never restarts their navigators,
short enough that a fleet left alone gives its memory back within about a minute."""
OPT_UNSEEN = "@sb_unseen"
"""Pane option of a running navigator: the epoch second it was first seen unshown."""
OPT_WAKE = "@sb_wake"
"""Window option of a view window whose navigator is parked: the shell line that wakes
it, run (and cleared) by the server hooks when a client shows the window."""
HOOK_INDEX = 47
"""Our index in each hook array, so the person's own hooks (other indexes) stay."""
WAKE_HOOKS = ("session-window-changed", "client-session-changed", "client-attached")
SCREENS = "navigators"
"""Folder under the run folder with each parked navigator's last screen."""
SWEEP_LOCK = threading.Lock()
"""One parking decision at a time in a process: the server's periodic sweep and its
parking on leave (``core.memory.leave``) read and change the same panes."""
_SEP = "\x1f"
_SCREEN_START = "\x1b[?7l\x1b[?25l\x1b[H\x1b[2J"
"""Before a saved screen: no auto-wrap (a row wider than the pane is cut at its edge,
not wrapped: a window shown at another size than it was parked at), no cursor, a
clear screen."""
_SCREEN_END = "\x1b[0m\x1b[?7h"


@dataclass(frozen=True)
class NavigatorPane:
    """One navigator pane as the fleet reading saw it."""

    pane_id: str
    view_id: str
    window_id: str
    in_view_window: bool
    pane_pid: int | None
    dead: bool
    dead_status: int | None
    unseen_since: int | None

    @property
    def asleep(self) -> bool:
        """Parked: dead with the screen keeper's status (not crashed, not quit)."""
        return self.dead and self.dead_status == ASLEEP_STATUS

    @property
    def running(self) -> bool:
        return not self.dead


@dataclass(frozen=True)
class Fleet:
    """Every navigator pane and the windows clients show, from one tmux process."""

    identity: ServerIdentity
    navigators: tuple[NavigatorPane, ...]
    shown_windows: frozenset[str]

    def shown(self, pane: NavigatorPane) -> bool:
        return pane.in_view_window and pane.window_id in self.shown_windows

    def of_view(self, view_id: str) -> NavigatorPane | None:
        return next((p for p in self.navigators if p.view_id == view_id), None)


@dataclass(frozen=True)
class SweepReport:
    parked: tuple[str, ...] = ()
    woken: tuple[str, ...] = ()
    marked: int = 0


_PANE_FORMAT = _SEP.join(("P", "#{pane_id}", "#{@sb_role}", "#{@sb_serves}", "#{window_id}",
                          "#{@sb_view}", "#{pane_pid}", "#{pane_dead}", DEAD_STATUS_FORMAT,
                          f"#{{{OPT_UNSEEN}}}"))
_CLIENT_FORMAT = _SEP.join(("C", "#{window_id}"))


def _int(text: str) -> int | None:
    return int(text) if text.strip().lstrip("-").isdigit() else None


def fleet_panes(runner: TmuxRunner) -> Fleet:
    """The server's identity, its navigator panes and the windows its clients show: one
    read-only tmux process."""
    output = runner.run([identity_command(), ("list-clients", "-F", _CLIENT_FORMAT),
                         ("list-panes", "-a", "-F", _PANE_FORMAT)])
    if not output.stdout:
        raise TmuxCommandFailed("tmux printed no identity")
    identity = ServerIdentity.parse(output.stdout[0])
    shown: set[str] = set()
    navigators: list[NavigatorPane] = []
    for line in output.stdout[1:]:
        fields = line.split(_SEP)
        if fields[0] == "C" and len(fields) == 2:
            shown.add(fields[1])
        elif fields[0] == "P" and len(fields) == 10 and fields[2] == PaneRole.NAVIGATOR \
                and fields[3]:
            _, pane, _, serves, window, window_view, pid, dead, status, unseen = fields
            navigators.append(NavigatorPane(
                pane_id=pane, view_id=serves, window_id=window,
                in_view_window=window_view == serves, pane_pid=_int(pid), dead=dead == "1",
                dead_status=_int(status), unseen_since=_int(unseen)))
    return Fleet(identity, tuple(navigators), frozenset(shown))


# ------------------------------------------------------------------ files


def screens_dir(run_dir: Path) -> Path:
    return own_dir(run_dir / SCREENS)


def screen_file(run_dir: Path, view_id: str) -> Path:
    return screens_dir(run_dir) / f"{check_tag_value(view_id)}.screen"


def _save_screen(run_dir: Path, view_id: str, captured: Sequence[str]) -> Path:
    """The captured rows, ready to print into a pane of the same size (no final newline:
    it would scroll the top row away)."""
    rows = list(captured)
    while rows and not rows[-1].strip():
        rows.pop()
    path = screen_file(run_dir, view_id)
    write_private(path, _SCREEN_START + "\x1b[0m\n".join(rows) + _SCREEN_END)
    return path


def keeper_command(screen: Path) -> tuple[str, ...]:
    """What a parked navigator pane runs: print the saved screen, exit ``ASLEEP_STATUS``.

    The pause (``LAST_WORDS_PAUSE_S``) lets tmux read the screen before the exit;
    ``_settle`` prints again a screen dropped even so."""
    script = f'cat "$0" 2>/dev/null; sleep {LAST_WORDS_PAUSE_S}; exit {ASLEEP_STATUS}'
    return ("/bin/sh", "-c", script, str(screen))


def waking_spawn(spawn: NavigatorSpawn, screen: Path) -> NavigatorSpawn:
    """The navigator's own spawn, behind a ``cat`` of its saved screen: the screen is
    there at once, and the navigator, exec'd by the same shell, paints over it when it
    is ready (a cold start; see docs/decisions.md, "No warm navigator server")."""
    return NavigatorSpawn(
        view_id=spawn.view_id,
        command=("/bin/sh", "-c", 'cat "$0" 2>/dev/null; exec "$@"', str(screen),
                 *spawn.command),
        env=spawn.env)


def wake_line(runner: TmuxRunner, pane: NavigatorPane, spawn: NavigatorSpawn,
              screen: Path) -> str:
    """The shell line the server hooks run to wake ``pane``: one tmux client that respawns
    it behind its saved screen (no Python on the way: the navigator's own start is the
    wait). ``respawn-pane`` without ``-k`` never touches a pane that runs, and a pane id
    is never reissued by the server that holds this window option."""
    waking = waking_spawn(spawn, screen)
    env = [arg for name, value in waking.env.items() for arg in ("-e", f"{name}={value}")]
    argv = [runner.tmux_bin or "tmux", "-S", runner.socket_path,
            "respawn-pane", "-t", pane.pane_id, *env, "--", *waking.command,
            ";", "set-option", "-puq", "-t", pane.pane_id, "remain-on-exit-format"]
    return " ".join(shlex.quote(arg) for arg in argv) + " >/dev/null 2>&1"


def hook_commands() -> list[TmuxCommand]:
    """Server hooks: a client that comes to show a window whose navigator is parked runs
    the window's wake line once. Idempotent (our own index of each hook)."""
    body = (f"if-shell -F '#{{{OPT_WAKE}}}' "
            f"{{ run-shell -b '#{{{OPT_WAKE}}}' ; set-option -wu {OPT_WAKE} }}")
    return [("set-hook", "-g", f"{hook}[{HOOK_INDEX}]", body) for hook in WAKE_HOOKS]


# ------------------------------------------------------------------ batches


def _is_navigator(pane: NavigatorPane) -> str:
    return both(equals(f"#{{{OPT_ROLE}}}", PaneRole.NAVIGATOR),
                equals(f"#{{{OPT_SERVES}}}", check_tag_value(pane.view_id)))


def _park_commands(pane: NavigatorPane, screen: Path, wake: str) -> list[TmuxCommand]:
    """Gated on the pane still being that view's navigator, alive, the same process."""
    checks = [Check(pane.pane_id, _is_navigator(pane), "not_navigator"),
              Check(pane.pane_id, "#{?pane_dead,0,1}", "navigator_dead")]
    if pane.pane_pid is not None:
        checks.append(Check(pane.pane_id, equals("#{pane_pid}", str(pane.pane_pid)),
                            "navigator_restarted"))
    then: list[TmuxCommand] = [
        ("set-option", "-pq", "-t", pane.pane_id, "remain-on-exit-format", ""),
        ("set-option", "-pu", "-t", pane.pane_id, OPT_UNSEEN)]
    if pane.in_view_window:
        then.append(("set-option", "-w", "-t", pane.window_id, OPT_WAKE, wake))
    then.append(("respawn-pane", "-k", "-t", pane.pane_id, "--", *keeper_command(screen)))
    return gated(checks, then)


def _capture(runner: TmuxRunner, panes: Sequence[NavigatorPane], state: str = ""
             ) -> dict[str, tuple[str, list[str]]]:
    """Each pane's visible screen with its colours, after the ``state`` format read from
    the pane: one tmux process. A pane gone stops the reading there."""
    marker = f"SB_SCREEN_{uuid.uuid4().hex} "  # plain text: tmux escapes control bytes
    commands: list[TmuxCommand] = []
    for pane in panes:
        commands += [("display-message", "-p", "-t", pane.pane_id,
                      f"{marker}{pane.pane_id}{_SEP}{state}"),
                     ("capture-pane", "-e", "-p", "-t", pane.pane_id)]
    output = runner.run(commands, check=False)
    screens: dict[str, tuple[str, list[str]]] = {}
    current: list[str] | None = None
    for line in output.stdout:
        if line.startswith(marker):
            pane_id, _, read = line[len(marker):].partition(_SEP)
            current = []
            screens[pane_id.strip()] = (read, current)
        elif current is not None:
            current.append(line)
    return screens


def _blank(rows: Sequence[str]) -> bool:
    """No text on a captured screen (colours and spaces only)."""
    return not any(strip_sgr(row).strip() for row in rows)


def park(runner: TmuxRunner, expected: ServerIdentity, run_dir: Path,
         panes: Sequence[NavigatorPane],
         spawn_of: Callable[[str], NavigatorSpawn]) -> list[str]:
    """Park ``panes`` (running navigators): their screens saved, their processes gone.
    Two tmux processes (read the screens, then one guarded batch); returns the views
    parked. A refusal (the pane changed meanwhile) stops the rest: the next turn
    reads again."""
    if not panes:
        return []
    screens = _capture(runner, panes)
    commands: list[TmuxCommand] = [*hook_commands()]
    spawns = {pane.view_id: spawn_of(pane.view_id) for pane in panes}
    saved: list[tuple[NavigatorPane, Path, bool]] = []
    for pane in panes:
        rows = screens.get(pane.pane_id, ("", []))[1]
        screen = _save_screen(run_dir, pane.view_id, rows)
        saved.append((pane, screen, not _blank(rows)))
        commands += _park_commands(pane, screen,
                                   wake_line(runner, pane, spawns[pane.view_id], screen))
    output = run_guarded(runner, expected, commands, refusal_stops=True)
    labels = outcomes(output.stdout, missing_raises=False)
    parked = [entry for index, entry in enumerate(saved)
              if index < len(labels) and labels[index] == "ok"]
    _settle(runner, expected, parked)
    return [pane.view_id for pane, _, _ in parked]


def _settle(runner: TmuxRunner, expected: ServerIdentity,
            parked: Sequence[tuple[NavigatorPane, Path, bool]], limit_s: float = 2.0) -> None:
    """Wait (briefly) until the screen keepers have printed and exited, so whoever acts
    next (a mode change, a wake) finds each pane dead, as parked, not still running.

    A keeper whose screen had text but whose pane is blank lost its output to tmux
    (before 3.7 tmux may close an exited process's terminal unread: seen in about one
    park in ten on a loaded machine without the keeper's pause): it prints again, one
    gated respawn of the dead pane (never of a running one)."""
    deadline = time.monotonic() + limit_s
    waiting = list(parked)
    while waiting and time.monotonic() < deadline:
        time.sleep(0.05)
        read = _capture(runner, [pane for pane, _, _ in waiting],
                        "#{pane_dead}" + DEAD_STATUS_FORMAT)
        again: list[TmuxCommand] = []
        still: list[tuple[NavigatorPane, Path, bool]] = []
        for pane, screen, has_text in waiting:
            if pane.pane_id not in read:
                continue  # gone (or not read): nothing to wait for
            state, rows = read[pane.pane_id]
            if state != f"1{ASLEEP_STATUS}":
                still.append((pane, screen, has_text))  # still printing
            elif has_text and _blank(rows):
                again += _reprint_commands(pane, screen)
                still.append((pane, screen, has_text))
        if again:
            with contextlib.suppress(TmuxError):  # the next wake prints the screen anyway
                run_guarded(runner, expected, again)
        waiting = still


def _reprint_commands(pane: NavigatorPane, screen: Path) -> list[TmuxCommand]:
    """The keeper once more in a parked pane (still that view's navigator, still dead)."""
    return gated([Check(pane.pane_id, _is_navigator(pane), "not_navigator"),
                  Check(pane.pane_id, "#{pane_dead}", "navigator_running")],
                 [("respawn-pane", "-t", pane.pane_id, "--", *keeper_command(screen))])


def wake(runner: TmuxRunner, expected: ServerIdentity, run_dir: Path,
         panes: Sequence[tuple[NavigatorPane, NavigatorSpawn]]) -> list[str]:
    """Run the navigators of parked ``panes`` again, each behind its saved screen, and
    clear their wake lines. One guarded tmux process; returns the views woken."""
    if not panes:
        return []
    respawns = [(pane.pane_id, waking_spawn(spawn, screen_file(run_dir, pane.view_id)))
                for pane, spawn in panes]
    results = respawn_navigators(runner, expected, respawns)
    clear: list[TmuxCommand] = []
    for pane, _ in panes:
        clear.append(("set-option", "-puq", "-t", pane.pane_id, "remain-on-exit-format"))
        if pane.in_view_window:
            clear.append(("set-option", "-wu", "-t", pane.window_id, OPT_WAKE))
    with contextlib.suppress(TmuxError):  # leftovers only cost a no-op wake later
        run_guarded(runner, expected, clear)
    return [pane.view_id for pane, _ in panes if results.get(pane.pane_id) == "ok"]


# ------------------------------------------------------------------ one view


def park_view(runner: TmuxRunner, run_dir: Path, view_id: str,
              spawn: NavigatorSpawn | None = None,
              home_env: Mapping[str, str] | None = None) -> bool:
    """Park the navigator of ``view_id`` now, shown or not; True if it was running and
    is parked. ``spawn`` (what waking it runs) defaults to ``switchboard ui --view``
    with ``home_env``. The view itself (registry, mode, zoom, its agents) is untouched."""
    fleet = fleet_panes(runner)
    pane = fleet.of_view(view_id)
    if pane is None or not pane.running:
        return False
    chosen = spawn or navigator_spawn(view_id, default_navigator_argv(view_id), home_env or {})
    return park(runner, fleet.identity, run_dir, [pane], lambda _view: chosen) == [view_id]


def wake_view(runner: TmuxRunner, run_dir: Path, view_id: str,
              spawn: NavigatorSpawn | None = None,
              home_env: Mapping[str, str] | None = None) -> bool:
    """Run the navigator of ``view_id`` again (its saved screen first); True if it was
    not running and runs now. ``spawn`` defaults to ``switchboard ui --view`` with
    ``home_env``. Any dead navigator pane qualifies: one just parked may not show its
    exit status yet, and a crashed one is what reconcile would respawn anyway. A
    navigator that runs, or whose pane is gone, is left alone (False); so is one parked
    a moment ago whose screen keeper is still printing (wait for ``asleep``)."""
    fleet = fleet_panes(runner)
    pane = fleet.of_view(view_id)
    if pane is None or pane.running:
        return False
    spawn = spawn or navigator_spawn(view_id, default_navigator_argv(view_id), home_env or {})
    return wake(runner, fleet.identity, run_dir, [(pane, spawn)]) == [view_id]


# ------------------------------------------------------------------ the turn


def park_after() -> float | None:
    """``PARK_AFTER_S``, or the environment's; None when parking is off."""
    raw = os.environ.get(ENV_PARK_AFTER, "")
    if raw.strip().lower() == "off":
        return None
    try:
        return max(0.0, float(raw)) if raw else PARK_AFTER_S
    except ValueError:
        return PARK_AFTER_S


@dataclass(frozen=True)
class Plan:
    """What one sweep does, decided from one reading (pure: tests drive it directly)."""

    wake: tuple[NavigatorPane, ...]
    park: tuple[NavigatorPane, ...]
    mark: tuple[NavigatorPane, ...]
    unmark: tuple[NavigatorPane, ...]


def plan(fleet: Fleet, view_ids: Iterable[str], now: int, after: float,
         own_pid: int | None = None) -> Plan:
    """Wake what is shown and parked; park what has been unshown ``after`` seconds.

    The navigator of ``own_pid`` (the process running this turn) is parked only when
    another navigator that stays running is shown, and is put last."""
    views = set(view_ids)
    panes = [p for p in fleet.navigators if p.view_id in views]
    wake = tuple(p for p in panes if p.asleep and fleet.shown(p))
    mark = tuple(p for p in panes if p.running and not fleet.shown(p)
                 and p.unseen_since is None)
    unmark = tuple(p for p in panes if p.running and fleet.shown(p)
                   and p.unseen_since is not None)
    due = [p for p in panes if p.running and not fleet.shown(p)
           and p.unseen_since is not None and now - p.unseen_since >= after]
    mine = [p for p in due if own_pid is not None and p.pane_pid == own_pid]
    due = [p for p in due if p not in mine]
    stays = any(p.running and fleet.shown(p) and p.pane_pid != own_pid for p in panes)
    if mine and stays:
        due += mine
    return Plan(wake=wake, park=tuple(due), mark=mark, unmark=unmark)


def sweep(runner: TmuxRunner, run_dir: Path, view_ids: Iterable[str],
          spawn_of: Callable[[str], NavigatorSpawn], *,
          now: float | None = None, own_pid: int | None = None) -> SweepReport:
    """One reconcile turn's parking: read the fleet (one tmux process), then mark, wake
    and park as ``plan`` says (one process each, only when there is something to do)."""
    after = park_after()
    if after is None:
        return SweepReport()
    fleet = fleet_panes(runner)
    expected = fleet.identity
    stamp = int(time.time() if now is None else now)
    decided = plan(fleet, view_ids, stamp, after,
                   os.getpid() if own_pid is None else own_pid)
    marks: list[TmuxCommand] = [("set-option", "-p", "-t", p.pane_id, OPT_UNSEEN, str(stamp))
                                for p in decided.mark]
    marks += [("set-option", "-pu", "-t", p.pane_id, OPT_UNSEEN) for p in decided.unmark]
    if marks:
        with contextlib.suppress(TmuxError):  # a mark is a hint; the next turn reads again
            run_guarded(runner, expected, marks)
    woken = wake(runner, expected, run_dir, [(p, spawn_of(p.view_id)) for p in decided.wake])
    parked = park(runner, expected, run_dir, decided.park, spawn_of)
    return SweepReport(parked=tuple(parked), woken=tuple(woken), marked=len(decided.mark))
