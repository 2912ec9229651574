"""Parking on leave (issue 38): a view the person leaves gives its navigator back at
once, but for the view left last; a view shown again wakes behind its saved screen.

A real tmux server, the real ``switchboard ui`` in each view's navigator pane and a
real ``tmux attach`` at 80x24. The server's leave watcher (``core.memory.leave``) is
stepped here in the test's process, so each step is one reading; the home's server,
if a launch started it, runs its own watcher on the same hooks (a park is gated on the
pane, so whichever comes first parks and the other finds it asleep): the assertions
are on the panes, not on who parked them.
"""

from __future__ import annotations

import re
import time
from dataclasses import replace
from pathlib import Path

import pytest

from core.config.config import ProviderConfig, TmuxConfig
from core.config.registry import init_registry
from core.context.requests import new_request_id
from core.engine.engine import Engine
from core.memory import leave, parking
from core.model.enums import Provider
from core.tmux.navigator_pane import ASLEEP_STATUS
from tests.factories import project_config
from tests.integration.journey_env import tmux
from tests.integration.test_navigator_parking import _pane_state
from tests.integration.test_terminal_sizes import Terminal, _shows_navigator
from tests.integration.transitions_env import (
    home_of,
    open_stage_engine,
    problems,
    quiet_provider_command,
    screen,
)
from tests.waiting import retry_until

pytestmark = pytest.mark.tmux


def _asleep(socket: Path, pane: str) -> bool:
    return _pane_state(socket, pane)[:2] == (True, str(ASLEEP_STATUS))


def _running(socket: Path, pane: str) -> bool:
    return not _pane_state(socket, pane)[0]


def _plain(text: str) -> str:
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text)


def _engine(root: Path, socket: Path, names: tuple[str, ...]) -> Engine:
    """A registry with one project per name on the private server ``socket``."""
    template = replace(project_config(root / "src", names),
                       providers={p: ProviderConfig(command=quiet_provider_command(p.value))
                                  for p in Provider},
                       tmux=TmuxConfig(socket_path=str(socket)))
    init_registry(home_of(root), template=template)
    engine = open_stage_engine(root)
    engine.stage.navigator_command = None  # the real `switchboard ui`
    return engine


def test_left_views_park_at_once_but_the_last_one(tmp_path: Path, tmux_socket: Path) -> None:
    names = ("alpha", "beta", "gamma")
    engine = _engine(tmp_path, tmux_socket, names)
    views = [engine.project_enter(new_request_id(), name).view_id for name in names]
    snap = engine.stage.snapshot()
    navs = [snap.view(v).navigator.pane_id for v in views]
    windows = [snap.view(v).window_id for v in views]
    run_dir = engine.home.run_dir
    tmux(tmux_socket, "select-window", "-t", windows[0])
    terminal = Terminal(tmux_socket, engine.config.tmux.view_session, 80, 24)
    watcher = leave.LeaveWatcher(engine.home, lambda: str(tmux_socket), lambda _line: None)
    mark = leave.left_file(run_dir)

    def show(index: int) -> None:
        """The person shows view ``index``: the hook touches the leave file, the
        watcher reads once."""
        before = mark.stat().st_mtime_ns if mark.exists() else None
        tmux(tmux_socket, "select-window", "-t", windows[index])
        assert retry_until(lambda: mark.exists() and mark.stat().st_mtime_ns != before, 10)
        watcher.step()

    try:
        for nav in navs:
            assert retry_until(lambda nav=nav: _shows_navigator(tmux_socket, nav, 40), 60), \
                screen(tmux_socket, nav)
        # an empty frame's main pane holds no process: the placeholder printed and exited
        main = snap.view(views[0]).main.pane_id
        assert retry_until(lambda: _pane_state(tmux_socket, main)[0], 10)
        assert "No agent is running in this frame." in screen(tmux_socket, main)
        assert "Pane is dead" not in screen(tmux_socket, main)
        watcher.step()  # the hooks are set; alpha is what the client shows
        hooks = tmux(tmux_socket, "show-hooks", "-g")
        assert f"client-detached[{leave.HOOK_INDEX}]" in hooks

        show(1)  # alpha left last: it stays running
        assert _running(tmux_socket, navs[0]) and _running(tmux_socket, navs[1])
        show(2)  # beta left last now; alpha parks at once
        assert retry_until(lambda: _asleep(tmux_socket, navs[0]), 10), screen(tmux_socket,
                                                                              navs[0])
        assert _running(tmux_socket, navs[1]) and _running(tmux_socket, navs[2])
        kept = screen(tmux_socket, navs[0])
        assert "alpha" in kept and "Pane is dead" not in kept

        # alpha shown again: its saved screen at once, then the app itself
        saved = _plain(parking.screen_file(run_dir, views[0]).read_text())
        show(0)
        # (the respawn clears the pane a few ms before the saved screen is printed)
        assert retry_until(lambda: "alpha" in screen(tmux_socket, navs[0]), 2, interval=0.01)
        at_once = screen(tmux_socket, navs[0])
        assert [row.rstrip() for row in at_once.splitlines()[:3]] == \
            [row.rstrip() for row in saved.splitlines()[:3]] or _running(tmux_socket, navs[0])
        assert retry_until(lambda: _shows_navigator(tmux_socket, navs[0], 40), 60), \
            screen(tmux_socket, navs[0])
        # gamma is the one left last; beta (left before it) parks
        assert retry_until(lambda: _asleep(tmux_socket, navs[1]), 10)
        assert _running(tmux_socket, navs[2])

        # the person detaches: alpha is left last and stays, gamma parks
        before = mark.stat().st_mtime_ns
        terminal.close()
        terminal = None
        assert retry_until(lambda: mark.stat().st_mtime_ns != before, 10)
        watcher.step()
        assert retry_until(lambda: _asleep(tmux_socket, navs[2]), 10)
        assert _running(tmux_socket, navs[0])
        assert all(problems(engine, v) == [] for v in views)
    finally:
        if terminal is not None:
            terminal.close()


def test_leave_book_keeps_the_view_left_last() -> None:
    """The policy is pure: left = shown at the last reading and not now; all but the
    last one left, still running and unshown, are due."""
    identity = parking.ServerIdentity("/s", 1, 1)

    def pane(view: str, number: int, dead: bool = False) -> parking.NavigatorPane:
        return parking.NavigatorPane(
            pane_id=f"%{number}", view_id=view, window_id=f"@{number}", in_view_window=True,
            pane_pid=None if dead else 100 + number, dead=dead,
            dead_status=ASLEEP_STATUS if dead else None, unseen_since=None)

    a, b, c = pane("a", 1), pane("b", 2), pane("c", 3)

    def fleet(*shown: int, panes: tuple[parking.NavigatorPane, ...] = (a, b, c)
              ) -> parking.Fleet:
        return parking.Fleet(identity, panes, frozenset(f"@{n}" for n in shown))

    book = leave.LeaveBook()
    assert book.note(fleet(1)) == ()  # first reading: nothing was left
    assert book.note(fleet(2)) == ()  # a left, the last: kept
    assert book.note(fleet(1)) == ()  # back to a: b is the last left
    assert book.note(fleet(3)) == (b,)  # a left last now; b is due
    book.parked({"%2"})
    asleep_b = pane("b", 2, dead=True)
    assert book.note(fleet(3, panes=(a, asleep_b, c))) == ()
    assert book.note(fleet(panes=(a, asleep_b, c))) == (a,)  # detached: c stays
    # two clients: both shown ones stay; an unshown never-shown pane is not "left"
    book = leave.LeaveBook()
    book.note(fleet(1, 2))
    assert book.note(fleet(1, 2)) == ()


def test_the_homes_server_parks_what_the_person_left(
        tmp_path: Path, tmux_socket: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same, end to end: the home's own server hears the hooks and parks, with no
    pass due (``SWITCHBOARD_RECONCILE_INTERVAL`` an hour): a person who went from
    alpha to beta to gamma has alpha parked within seconds, beta and gamma running."""
    from core.server.main import stop_server
    from core.server.start import ensure_running

    names = ("alpha", "beta", "gamma")
    engine = _engine(tmp_path, tmux_socket, names)
    views = [engine.project_enter(new_request_id(), name).view_id for name in names]
    snap = engine.stage.snapshot()
    navs = [snap.view(v).navigator.pane_id for v in views]
    windows = [snap.view(v).window_id for v in views]
    tmux(tmux_socket, "select-window", "-t", windows[0])
    terminal = Terminal(tmux_socket, engine.config.tmux.view_session, 80, 24)
    monkeypatch.setenv("SWITCHBOARD_HOME", str(tmp_path))
    monkeypatch.setenv("SWITCHBOARD_RECONCILE_INTERVAL", "3600")
    stop_server(engine.home.run_dir)  # one started by a launch has no such interval
    ensure_running(engine.home)
    try:
        for nav in navs:
            assert retry_until(lambda nav=nav: _shows_navigator(tmux_socket, nav, 40), 60), \
                screen(tmux_socket, nav)
        # the server's first reading sets the hooks
        assert retry_until(lambda: f"client-detached[{leave.HOOK_INDEX}]" in tmux(
            tmux_socket, "show-hooks", "-g"), 20)
        tmux(tmux_socket, "select-window", "-t", windows[1])
        assert retry_until(lambda: _shows_navigator(tmux_socket, navs[1], 40), 30)
        tmux(tmux_socket, "select-window", "-t", windows[2])
        assert retry_until(lambda: _asleep(tmux_socket, navs[0]), 15), \
            screen(tmux_socket, navs[0])
        assert _running(tmux_socket, navs[1]) and _running(tmux_socket, navs[2])
        assert "alpha" in screen(tmux_socket, navs[0]), (
            screen(tmux_socket, navs[0]),
            parking.screen_file(engine.home.run_dir, views[0]).read_text()[:300])
        # shown again, alpha wakes behind its saved screen
        tmux(tmux_socket, "select-window", "-t", windows[0])
        # (the respawn clears the pane a few ms before the saved screen is printed)
        assert retry_until(lambda: "alpha" in screen(tmux_socket, navs[0]), 2, interval=0.01)
        assert retry_until(lambda: _shows_navigator(tmux_socket, navs[0], 40), 60), \
            screen(tmux_socket, navs[0])
    finally:
        terminal.close()
        stop_server(engine.home.run_dir)


def test_no_tmux_server_is_nothing_to_park_and_nothing_to_log(tmp_path: Path) -> None:
    """The watcher of a home whose tmux server is gone (the server exits a while later)
    retries quietly: a log line there would only say that tmux is not running."""
    import threading

    from core.config.home import Home

    said: list[str] = []
    home = Home(root=tmp_path, config_path=tmp_path / "config.toml")
    watcher = leave.LeaveWatcher(home, lambda: str(tmp_path / "no-server.sock"), said.append)
    stop = threading.Event()
    thread = threading.Thread(target=watcher.run, args=(stop,), daemon=True)
    thread.start()
    leave.left_file(home.run_dir).touch()  # a leave heard: a reading, which finds no server
    time.sleep(1.0)
    stop.set()
    thread.join(5)
    assert not thread.is_alive() and said == []
