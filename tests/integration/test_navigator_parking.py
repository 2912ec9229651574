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

        # alpha is not shown: marked unseen by the first sweep (or by a navigator's own
        # first turn already), parked by the next
        first = park_unseen(engine)
        parked = first.parked or park_unseen(engine).parked
        assert parked == (alpha,)
        # (tmux marks the pane dead at its terminal's end, the status a moment later)
        assert retry_until(lambda: _pane_state(tmux_socket, nav_a)[:2]
                           == (True, str(ASLEEP_STATUS)), 10)
        assert not _pane_state(tmux_socket, nav_b)[0]  # the shown one runs on
        # the parked pane still shows the last screen it drew, and no dead-pane line
        kept = screen(tmux_socket, nav_a)
        assert "alpha" in kept and "Pane is dead" not in kept
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
        # beta, now unshown, parks; alpha shown again stays
        assert park_unseen(engine).parked == ()  # beta marked unseen now
        assert park_unseen(engine).parked == (beta,)
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
        assert park_unseen(engine).parked == ()
        assert park_unseen(engine).parked == (beta,)
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


def _warm_children(socket_file: Path) -> list[int]:
    """Navigators the warm server of ``socket_file`` forked that still run."""
    marker = f"navigator.warm\0{socket_file}".encode()
    stats: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if marker not in (entry / "cmdline").read_bytes():
                continue
            stats[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except OSError:
            continue
    servers = {pid for pid, parent in stats.items() if parent not in stats}
    return [pid for pid, parent in stats.items() if parent in servers]


def test_parked_view_wakes_through_the_warm_server(
        tmp_path: Path, tmux_socket: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A person shows a parked view in a real 80x24 terminal: the pane's process is the
    small hand-off client, the app the warm server forked draws on that terminal, takes
    a key, follows a resize, and when the pane's process is killed the app goes with it
    and reconcile brings the navigator back as for any crash."""
    engine = make_engine(tmp_path, tmux_socket)
    engine.stage.navigator_command = None  # the real `switchboard ui`
    alpha = engine.project_enter(new_request_id(), "alpha").view_id
    beta = engine.project_enter(new_request_id(), "beta").view_id
    snap = engine.stage.snapshot()
    nav_a = snap.view(alpha).navigator.pane_id
    window_a, window_b = snap.view(alpha).window_id, snap.view(beta).window_id
    tmux(tmux_socket, "select-window", "-t", window_b)
    terminal = Terminal(tmux_socket, engine.config.tmux.view_session, 80, 24)
    warm = parking.warm_socket(engine.home.run_dir)
    assert warm is not None
    try:
        assert retry_until(lambda: _shows_navigator(tmux_socket, nav_a, 40), 60), \
            screen(tmux_socket, nav_a)
        monkeypatch.setenv(parking.ENV_PARK_AFTER, "0")
        runner, run_dir = engine.stage.runner, engine.home.run_dir

        def park_alpha() -> None:
            """Park alpha now. A navigator's own reconcile turn that read the fleet while
            alpha was shown and parked may wake it once more right after (its respawn is
            gated on the pane being a dead navigator, which a parked one is): park again.
            A navigator's own turn may also park alpha first (unshown, parking after 0 s):
            then there is nothing left to park and it is asleep all the same."""
            for _ in range(3):
                parking.park_view(runner, run_dir, alpha,
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

        # the first wake finds no warm server: it starts one (a tmux job, so it descends
        # from the tmux server) and wakes cold, as before
        park_alpha()
        tmux(tmux_socket, "select-window", "-t", window_a)
        assert retry_until(app_runs, 60), screen(tmux_socket, nav_a)
        assert _warm_children(warm) == []
        assert retry_until(lambda: warm.exists() and parking.warm_server_running(warm), 30)
        # the next wake is warm
        tmux(tmux_socket, "select-window", "-t", window_b)
        park_alpha()
        tmux(tmux_socket, "select-window", "-t", window_a)
        assert retry_until(app_runs, 30), screen(tmux_socket, nav_a)
        started = tmux(tmux_socket, "display-message", "-p", "-t", nav_a,
                       "#{pane_start_command}")
        assert "wake_client.py" in started and str(warm) in started
        [child] = _warm_children(warm)  # the app runs in the server's fork
        assert child != _pane_state(tmux_socket, nav_a)[2]
        # a key typed in the person's terminal reaches it through the pane's terminal
        tmux(tmux_socket, "select-pane", "-t", nav_a)
        terminal.type(b"?")
        assert retry_until(lambda: _help_shown(screen(tmux_socket, nav_a)), 10), \
            screen(tmux_socket, nav_a)  # the help dialog
        terminal.type(b"q")
        assert retry_until(lambda: not _help_shown(screen(tmux_socket, nav_a)), 10)
        # a resize reaches it (tmux signals the pane's process, which forwards it)
        tmux(tmux_socket, "resize-pane", "-t", nav_a, "-x", "50")
        assert retry_until(lambda: tmux(tmux_socket, "display-message", "-p", "-t", nav_a,
                                        "#{pane_width}").strip() == "50"
                           and _shows_navigator(tmux_socket, nav_a, 40), 10), \
            screen(tmux_socket, nav_a)

        # parked again (tmux ends the pane's process): the forked app goes with it
        tmux(tmux_socket, "select-window", "-t", window_b)
        park_alpha()
        assert retry_until(lambda: _warm_children(warm) == [], 10)
        tmux(tmux_socket, "select-window", "-t", window_a)
        assert retry_until(app_runs, 30), screen(tmux_socket, nav_a)
        assert retry_until(lambda: len(_warm_children(warm)) == 1, 10)

        # the pane's process killed: the forked app goes too, the pane is a dead
        # navigator (not parked), and reconcile revives it as any crashed one
        os.kill(_pane_state(tmux_socket, nav_a)[2], signal.SIGKILL)
        assert retry_until(lambda: _pane_state(tmux_socket, nav_a)[0], 10)
        assert retry_until(lambda: _warm_children(warm) == [], 10)
        assert _pane_state(tmux_socket, nav_a)[1] != str(ASLEEP_STATUS)
        reconcile(engine)
        assert retry_until(lambda: _shows_navigator(tmux_socket, nav_a, 40), 60), \
            screen(tmux_socket, nav_a)
        assert problems(engine, alpha) == []
    finally:
        terminal.close()
    # the tmux server gone, the warm server goes too
    tmux(tmux_socket, "kill-server")
    assert retry_until(lambda: not parking.warm_server_running(warm), 10)


def test_wake_protocol_agrees_and_runs_only_navigators() -> None:
    """The hand-off client and the server speak one protocol, the server forks only the
    navigator command, and a forked navigator knows its pane's pid for parking's plan."""
    from core.memory import wake_client
    from navigator import warm

    assert wake_client.MAGIC == warm.MAGIC
    assert wake_client.ENV_PANE_PID == parking.ENV_PANE_PID
    navigator = [sys.executable, "-OO", "-m", "navigator.cli", "ui", "--view", "v1"]

    def message(argv: list[str]) -> bytes:
        body = b"\0".join(os.fsencode(f) for f in ["/tmp", str(len(argv)), *argv, "A=1"])
        return warm.MAGIC + body

    assert warm.parse(message(navigator)) == ("/tmp", ["ui", "--view", "v1"], {"A": "1"})
    assert warm.parse(message([sys.executable, "-c", "print(1)"])) is None
    assert warm.parse(message(["/bin/sh", "-OO", "-m", "navigator.cli", "ui"])) is None
    assert warm.parse(b"GET / HTTP/1.0\r\n") is None
    spawn = parking.NavigatorSpawn(view_id="v1", command=tuple(navigator), env={})
    own = parking.NavigatorSpawn(view_id="v1", command=("my-navigator",), env={})
    sock = Path("/tmp/x/warm.sock")
    server = parking.WarmServer(sock, "tmux", "/tmp/x/tmux.sock", 600)
    woken = parking.waking_spawn(spawn, Path("/s"), server).command
    client = woken[4:]
    assert client[3:4] == (str(parking.WAKE_CLIENT),) and client[-len(navigator):] == \
        tuple(navigator)
    # what the client is given is exactly what its main() takes apart
    socket_path, tmux_bin, tmux_server, start, separator = client[4:9]
    assert (socket_path, tmux_bin, tmux_server, separator) == \
        (str(sock), "tmux", "/tmp/x/tmux.sock", "--")
    assert "-m navigator.warm /tmp/x/warm.sock 600" in start
    assert parking.waking_spawn(own, Path("/s"), server).command[-1] == "my-navigator"
    assert parking.waking_spawn(spawn, Path("/s"), None).command[4:] == tuple(navigator)
    assert wake_client.main(["only-a-socket"]) == 2
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(parking.ENV_PANE_PID, "4242")
        assert parking.own_pane_pid() == 4242
        patch.delenv(parking.ENV_PANE_PID)
        assert parking.own_pane_pid() == os.getpid()
