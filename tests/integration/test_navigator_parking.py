"""Parked navigators (issue 25): an unshown view's navigator holds no process, keeps its
last screen, and comes back when a real client shows the view.

A real tmux server, the real ``switchboard ui`` in each view's navigator pane and a
real ``tmux attach`` at 80x24. The reconcile turn's sweep (``core.memory.turn``) is
driven directly, with the park delay at 0, so no test waits for the host's interval.
"""

from __future__ import annotations

import os
import re
import signal
import sys
import time
from pathlib import Path

import pytest

from core.context.requests import new_request_id
from core.memory import parking
from core.memory.turn import park_unseen
from core.model.enums import ViewMode
from core.reconcile.reconcile import reconcile
from core.tmux.navigator_pane import ASLEEP_STATUS
from core.tmux.panes import DEAD_STATUS_FORMAT
from tests.integration.journey_env import tmux
from tests.integration.test_terminal_sizes import Terminal, _shows_navigator
from tests.integration.transitions_env import make_engine, problems, screen
from tests.waiting import retry_until

pytestmark = pytest.mark.tmux



def _help_shown(text: str) -> bool:
    """The help dialog is up: its Keys heading and the first key's words (the compact
    help of a narrow pane puts each description under its key)."""
    return "Keys" in text and "focus the frame" in text

def _pane_state(socket: Path, pane: str) -> tuple[bool, str, int]:
    """(dead, exit status, pid) of one pane; the status as Switchboard reads it (tmux
    3.3a now and then records none for a parked pane's screen keeper)."""
    dead, status, pid = tmux(socket, "display-message", "-p", "-t", pane,
                             f"#{{pane_dead}} {DEAD_STATUS_FORMAT} #{{pane_pid}}").split(" ")
    return dead == "1", status, int(pid or 0)


def _parked_facts(socket: Path, pane: str, saved: Path) -> str:
    """What a parked pane shows and runs, and the screen saved for it (a failure's story)."""
    facts = tmux(socket, "display-message", "-p", "-t", pane,
                 "dead=#{pane_dead} status=#{pane_dead_status} pid=#{pane_pid} "
                 "alt=#{alternate_on} history=#{history_size} size=#{pane_width}x#{pane_height}"
                 " start=#{pane_start_command}")
    text = saved.read_text() if saved.exists() else "(none)"
    return f"{facts}\nsaved screen ({len(text)} chars): {text[:600]!r}"


def _views(engine: object) -> list[tuple[object, ...]]:
    return [tuple(row) for row in engine.conn.execute(  # type: ignore[attr-defined]
        "SELECT view_id, mode, zoomed, main_pane_id, tmux_window_id, state FROM user_views"
        " ORDER BY view_id")]


def test_unshown_navigator_parks_and_wakes_when_shown(
        tmp_path: Path, tmux_socket: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    engine = make_engine(tmp_path, tmux_socket)
    engine.stage.navigator_command = None  # the real `switchboard ui`
    alpha = engine.project_enter(new_request_id(), "alpha").view_id
    beta = engine.project_enter(new_request_id(), "beta").view_id
    snap = engine.stage.snapshot()
    nav_a, nav_b = snap.view(alpha).navigator.pane_id, snap.view(beta).navigator.pane_id
    window_a, window_b = snap.view(alpha).window_id, snap.view(beta).window_id
    tmux(tmux_socket, "select-window", "-t", window_b)
    terminal = Terminal(tmux_socket, engine.config.tmux.view_session, 80, 24)
    try:
        for nav in (nav_a, nav_b):
            assert retry_until(lambda nav=nav: _shows_navigator(tmux_socket, nav, 40), 60), \
                screen(tmux_socket, nav)
        before = _views(engine)
        monkeypatch.setenv(parking.ENV_PARK_AFTER, "0")

        # alpha is not shown: marked unseen by the first sweep (or by the home server's
        # first pass already), parked by the next
        first = park_unseen(engine)
        parked = first.parked or park_unseen(engine).parked
        assert parked == (alpha,)
        # (tmux marks the pane dead at its terminal's end, the status a moment later)
        assert retry_until(lambda: _pane_state(tmux_socket, nav_a)[:2]
                           == (True, str(ASLEEP_STATUS)), 10)
        assert not _pane_state(tmux_socket, nav_b)[0]  # the shown one runs on
        # the parked pane still shows the last screen it drew, and no dead-pane line
        kept = screen(tmux_socket, nav_a)
        assert "alpha" in kept and "Pane is dead" not in kept, _parked_facts(
            tmux_socket, nav_a, parking.screen_file(engine.home.run_dir, alpha))
        saved = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", parking.screen_file(
            engine.home.run_dir, alpha).read_text())  # the screen captured at the park
        assert [row.rstrip() for row in kept.splitlines()[:3]] == \
            [row.rstrip() for row in saved.splitlines()[:3]]
        # reconcile does not take a parked navigator for a crashed one
        reconcile(engine)
        assert _pane_state(tmux_socket, nav_a)[0]
        assert problems(engine, alpha) == [] and problems(engine, beta) == []
        assert _views(engine) == before  # the view itself is untouched by parking

        # the person shows alpha: the server hook wakes its navigator
        shown_at = time.monotonic()
        tmux(tmux_socket, "select-window", "-t", window_a)
        assert "alpha" in screen(tmux_socket, nav_a)  # a screen at once
        assert retry_until(lambda: not _pane_state(tmux_socket, nav_a)[0], 10)
        assert retry_until(lambda: _shows_navigator(tmux_socket, nav_a, 40), 60), \
            screen(tmux_socket, nav_a)
        assert time.monotonic() - shown_at < 30
        assert tmux(tmux_socket, "show-options", "-wqv", "-t", window_a,
                    parking.OPT_WAKE).strip() == ""
        assert _views(engine) == before
        # beta, now unshown, parks; alpha shown again stays (marked unseen by the first
        # sweep, or already by the home server's pass, parked by the next)
        assert (park_unseen(engine).parked or park_unseen(engine).parked) == (beta,)
        assert not _pane_state(tmux_socket, nav_a)[0]
        # (its screen keeper prints and exits a moment after the park)
        assert retry_until(lambda: _pane_state(tmux_socket, nav_b)[:2]
                           == (True, str(ASLEEP_STATUS)), 10)
        assert parking.wake_view(engine.stage.runner, engine.home.run_dir, beta,
                                 spawn=engine.stage.navigator_spawn(beta))
        assert retry_until(lambda: _shows_navigator(tmux_socket, nav_b, 40), 60), \
            screen(tmux_socket, nav_b)
        assert window_b  # both windows kept their ids
        reconcile(engine)
        assert problems(engine, alpha) == [] and problems(engine, beta) == []

        # direct mode hides beta's navigator: unshown, it parks; asking for the
        # navigator again (prefix + S, `view mode`) brings it back through the
        # dead-navigator path every mode change already has
        engine.view_mode(new_request_id(), beta, ViewMode.DIRECT)
        assert (park_unseen(engine).parked or park_unseen(engine).parked) == (beta,)
        engine.view_mode(new_request_id(), beta, ViewMode.NAVIGATOR)
        assert retry_until(lambda: not _pane_state(tmux_socket, nav_b)[0], 10)
        assert _pane_state(tmux_socket, nav_b)[2] > 0
        reconcile(engine)
        assert problems(engine, beta) == []
    finally:
        terminal.close()


def test_turn_holder_parks_itself_only_when_a_shown_navigator_stays() -> None:
    """The plan is pure: the turn's own navigator goes last, and only if another stays."""
    identity = parking.ServerIdentity("/s", 1, 1)

    def pane(view: str, pid: int, window: str, unseen: int | None) -> parking.NavigatorPane:
        return parking.NavigatorPane(pane_id=f"%{pid}", view_id=view, window_id=window,
                                     in_view_window=True, pane_pid=pid, dead=False,
                                     dead_status=None, unseen_since=unseen)

    mine, other, shown = pane("a", 10, "@1", 0), pane("b", 11, "@2", 0), pane("c", 12, "@3", None)
    fleet = parking.Fleet(identity, (mine, other, shown), frozenset({"@3"}))
    decided = parking.plan(fleet, ["a", "b", "c"], now=100, after=30, own_pid=10)
    assert decided.park == (other, mine)
    alone = parking.Fleet(identity, (mine, other), frozenset())
    assert parking.plan(alone, ["a", "b"], now=100, after=30, own_pid=10).park == (other,)
    assert parking.plan(fleet, ["a", "b", "c"], now=10, after=30, own_pid=10).park == ()


def _pid_of(socket: Path, pane: str) -> int:
    return int(tmux(socket, "display-message", "-p", "-t", pane, "#{pane_pid}").strip() or 0)


def test_woken_navigator_is_the_panes_own_process(
        tmp_path: Path, tmux_socket: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A person shows a parked view in a real 80x24 terminal: the saved screen's shell
    execs the navigator itself (no hand-off, no fork), so the pane's process is the app:
    it takes a key typed in the terminal, follows a resize, and killed, leaves a dead
    navigator (not a parked one) that reconcile brings back as for any crash."""
    engine = make_engine(tmp_path, tmux_socket)
    engine.stage.navigator_command = None  # the real `switchboard ui`
    alpha = engine.project_enter(new_request_id(), "alpha").view_id
    beta = engine.project_enter(new_request_id(), "beta").view_id
    snap = engine.stage.snapshot()
    nav_a = snap.view(alpha).navigator.pane_id
    window_a, window_b = snap.view(alpha).window_id, snap.view(beta).window_id
    tmux(tmux_socket, "select-window", "-t", window_b)
    terminal = Terminal(tmux_socket, engine.config.tmux.view_session, 80, 24)
    try:
        assert retry_until(lambda: _shows_navigator(tmux_socket, nav_a, 40), 60), \
            screen(tmux_socket, nav_a)
        monkeypatch.setenv(parking.ENV_PARK_AFTER, "0")

        def park_alpha() -> None:
            """Park alpha now. A pass of the home's server that read the fleet while
            alpha was shown and parked may wake it once more right after (its respawn is
            gated on the pane being a dead navigator, which a parked one is): park again.
            The server's pass may also park alpha first (unshown, parking after 0 s):
            then there is nothing left to park and it is asleep all the same."""
            for _ in range(3):
                parking.park_view(engine.stage.runner, engine.home.run_dir, alpha,
                                  spawn=engine.stage.navigator_spawn(alpha))
                if retry_until(lambda: _pane_state(tmux_socket, nav_a)[:2]
                               == (True, str(ASLEEP_STATUS)), 10):
                    time.sleep(0.5)
                    if _pane_state(tmux_socket, nav_a)[0]:
                        return
            raise AssertionError(screen(tmux_socket, nav_a))

        def app_runs() -> bool:
            """The app itself drew (its alternate screen), not the saved screen shown
            while it starts."""
            return tmux(tmux_socket, "display-message", "-p", "-t", nav_a,
                        "#{pane_dead} #{alternate_on}").split() == ["0", "1"] \
                and _shows_navigator(tmux_socket, nav_a, 40)

        park_alpha()
        tmux(tmux_socket, "select-window", "-t", window_a)
        assert retry_until(app_runs, 60), screen(tmux_socket, nav_a)
        pid = _pid_of(tmux_socket, nav_a)
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        assert cmdline[1:5] == [b"-OO", b"-m", b"navigator.cli", b"ui"]  # exec'd, not sh
        # a key typed in the person's terminal reaches it
        tmux(tmux_socket, "select-pane", "-t", nav_a)
        terminal.type(b"?")
        assert retry_until(lambda: _help_shown(screen(tmux_socket, nav_a)), 10), \
            screen(tmux_socket, nav_a)  # the help dialog
        terminal.type(b"q")
        assert retry_until(lambda: not _help_shown(screen(tmux_socket, nav_a)), 10)
        # a resize reaches it
        tmux(tmux_socket, "resize-pane", "-t", nav_a, "-x", "50")
        assert retry_until(lambda: tmux(tmux_socket, "display-message", "-p", "-t", nav_a,
                                        "#{pane_width}").strip() == "50"
                           and _shows_navigator(tmux_socket, nav_a, 40), 10), \
            screen(tmux_socket, nav_a)

        # killed: a dead navigator, not a parked one, and reconcile revives it
        os.kill(pid, signal.SIGKILL)
        assert retry_until(lambda: _pane_state(tmux_socket, nav_a)[0], 10)
        assert _pane_state(tmux_socket, nav_a)[1] != str(ASLEEP_STATUS)
        reconcile(engine)
        assert retry_until(lambda: _shows_navigator(tmux_socket, nav_a, 40), 60), \
            screen(tmux_socket, nav_a)
        assert problems(engine, alpha) == []
    finally:
        terminal.close()


def test_waking_spawn_prints_the_screen_then_execs_the_navigator() -> None:
    """What a wake runs: the saved screen first, then the view's own navigator command
    (the default one or a person's own) exec'd by the same shell, with its environment."""
    navigator = (sys.executable, "-OO", "-m", "navigator.cli", "ui", "--view", "v1")
    for command in (navigator, ("my-navigator",)):
        spawn = parking.NavigatorSpawn(view_id="v1", command=command, env={"A": "1"})
        woken = parking.waking_spawn(spawn, Path("/s/v1.screen"))
        assert woken.command == ("/bin/sh", "-c", 'cat "$0" 2>/dev/null; exec "$@"',
                                 "/s/v1.screen", *command)
        assert (woken.view_id, woken.env) == ("v1", {"A": "1"})
