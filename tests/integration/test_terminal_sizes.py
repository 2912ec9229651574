"""The navigator pane with a real terminal attached: any size, resized while it runs.

A view window is built at 200x50 while no client is attached. A real tmux
client (in a pseudo-terminal of a chosen size) attaching or resizing shrinks the
window, and tmux used to take the columns from the navigator pane until it had
one left, and the navigator crashed. The view window's resize hooks now give the
navigator its width back (a third of a window too narrow for both, never less
than the compact minimum), and the navigator renders at whatever it gets.
"""

from __future__ import annotations

import fcntl
import os
import pty
import signal
import struct
import subprocess
import termios
import threading
import time
from pathlib import Path

import pytest

from core.context.requests import new_request_id
from core.engine.engine import Engine
from core.tmux.panes import PaneSnapshot
from core.tmux.topology import (
    AGENT_MIN_WIDTH,
    NAVIGATOR_MIN_WIDTH,
    navigator_width_for,
)
from tests.integration.journey_env import tmux
from tests.integration.transitions_env import make_engine, problems, run_cli, screen
from tests.waiting import retry_until

pytestmark = pytest.mark.tmux

WIDTH = 40  # the default `tmux.navigator_width`


class Terminal:
    """A real `tmux attach` in a pseudo-terminal; resizing it is what a person's
    terminal emulator does (TIOCSWINSZ, then SIGWINCH to the client)."""

    def __init__(self, socket: Path, session: str, columns: int, rows: int) -> None:
        env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}
        env["TERM"] = "xterm-256color"
        argv = ["tmux", "-S", str(socket), "attach-session", "-t", f"={session}"]
        pid, fd = pty.fork()
        if pid == 0:  # the child: size its terminal before tmux reads it, then exec
            try:
                fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
                os.execvpe(argv[0], argv, env)
            finally:
                os._exit(127)
        self.pid, self.fd = pid, fd
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()

    def _drain(self) -> None:
        """Read everything the client draws, so it never blocks on a full terminal."""
        while True:
            try:
                if not os.read(self.fd, 65536):
                    return
            except OSError:
                return

    def resize(self, columns: int, rows: int) -> None:
        fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
        os.kill(self.pid, signal.SIGWINCH)

    def type(self, data: bytes) -> None:
        os.write(self.fd, data)

    def close(self) -> None:
        try:
            os.kill(self.pid, signal.SIGTERM)
            os.waitpid(self.pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
        os.close(self.fd)
        self._reader.join(5)


def _navigator(engine: Engine, view_id: str) -> PaneSnapshot:
    snap = engine.stage.snapshot()
    assert snap is not None
    layout = snap.view(view_id)
    assert layout is not None and layout.navigator is not None
    return layout.navigator


def _window_width(socket: Path, pane: str) -> int:
    return int(tmux(socket, "display-message", "-p", "-t", pane, "#{window_width}").strip())


def _fits(engine: Engine, view_id: str, socket: Path, columns: int, rows: int,
          pid: int | None = None) -> bool:
    """The window has the terminal's size and the live navigator its width for it."""
    nav = _navigator(engine, view_id)
    window = tmux(socket, "display-message", "-p", "-t", nav.pane_id,
                  "#{window_width}x#{window_height}").strip()
    return (window == f"{columns}x{rows - 1}"  # the status line takes a row
            and nav.width == navigator_width_for(columns, WIDTH)
            and not nav.dead and (pid is None or nav.pane_pid == pid))


def _pty_size(socket: Path, pane: str) -> str:
    """What the program in the pane is told its terminal is (rows columns)."""
    tty = tmux(socket, "display-message", "-p", "-t", pane, "#{pane_tty}").strip()
    return subprocess.run(["stty", "-F", tty, "size"], capture_output=True,
                          text=True).stdout.strip()


def _shows_navigator(socket: Path, pane: str, configured: int) -> bool:
    """The app drew itself for the pane's real size: the compact layout's borderless
    titles below its configured width, else boxes closed at the pane's last column."""
    width = int(tmux(socket, "display-message", "-p", "-t", pane, "#{pane_width}").strip())
    lines = tmux(socket, "capture-pane", "-p", "-t", pane).splitlines()
    if "Traceback" in screen(socket, pane) or not any("alpha" in line for line in lines):
        return False
    if width < configured:
        return any(line.startswith("─Projects") for line in lines)
    return any(line.startswith("╭─ Projects") and len(line) == width and line.endswith("╮")
               for line in lines)


def _start(tmp_path: Path, socket: Path) -> tuple[Engine, str]:
    engine = make_engine(tmp_path, socket)
    engine.stage.navigator_command = None  # the real `switchboard ui`
    route = engine.project_enter(new_request_id(), "alpha")
    nav = _navigator(engine, route.view_id)
    assert nav.width == WIDTH
    assert retry_until(lambda: _shows_navigator(socket, nav.pane_id, WIDTH), 30, interval=0.02), \
        screen(socket, nav.pane_id)
    return engine, route.view_id


def _check_size(engine: Engine, view_id: str, socket: Path, columns: int, rows: int,
                pid: int | None) -> None:
    nav = _navigator(engine, view_id).pane_id
    assert retry_until(lambda: _fits(engine, view_id, socket, columns, rows, pid), 45,
                       interval=0.02), (
        columns, rows, tmux(socket, "list-panes", "-t", nav, "-F",
                            "#{pane_id} #{pane_width}x#{pane_height} dead=#{pane_dead} "
                            "pid=#{pane_pid}"), pid)
    # the app redrew at its new size and still runs (no traceback, same process)
    assert retry_until(lambda: _shows_navigator(socket, nav, WIDTH), 45, interval=0.02), (
        columns, _pty_size(socket, nav), tmux(socket, "capture-pane", "-p", "-t", nav))
    pane = _navigator(engine, view_id)
    assert not pane.dead and (pid is None or pane.pane_pid == pid)


def test_width_model_matches_the_documented_choice() -> None:
    """The rule the hooks implement, checked against what tmux computes below."""
    assert navigator_width_for(200, WIDTH) == WIDTH
    assert navigator_width_for(WIDTH + 1 + AGENT_MIN_WIDTH, WIDTH) == WIDTH
    assert navigator_width_for(WIDTH + AGENT_MIN_WIDTH, WIDTH) == 26  # 80: a third
    assert navigator_width_for(60, WIDTH) == 19
    assert navigator_width_for(30, WIDTH) == NAVIGATOR_MIN_WIDTH
    assert navigator_width_for(1, WIDTH) == NAVIGATOR_MIN_WIDTH
    assert navigator_width_for(200, 8) == NAVIGATOR_MIN_WIDTH  # below the compact minimum
    for columns in range(1, 260):
        assert NAVIGATOR_MIN_WIDTH <= navigator_width_for(columns, WIDTH) <= WIDTH


@pytest.mark.parametrize("columns,rows", [(80, 24), (100, 30), (120, 40)])
def test_attached_terminal_keeps_the_navigator_alive_and_wide(
        tmp_path: Path, tmux_socket: Path, columns: int, rows: int) -> None:
    engine, view_id = _start(tmp_path, tmux_socket)
    pid = _navigator(engine, view_id).pane_pid
    session = engine.config.tmux.view_session
    terminal = Terminal(tmux_socket, session, columns, rows)
    try:
        _check_size(engine, view_id, tmux_socket, columns, rows, pid)
        for size in ((200, 50), (60, 20), (200, 50), (columns, rows)):
            terminal.resize(*size)
            _check_size(engine, view_id, tmux_socket, *size, pid)
    finally:
        terminal.close()
    assert problems(engine, view_id) == []


def test_hooks_are_the_view_windows_own_and_name_the_navigator(tmp_path: Path,
                                                               tmux_socket: Path) -> None:
    """No global or session hook; the person's own windows resize as tmux always does;
    a zoomed agent pane stays zoomed through a resize and the navigator is refitted
    once the zoom ends."""
    engine, view_id = _start(tmp_path, tmux_socket)
    nav = _navigator(engine, view_id)
    session = engine.config.tmux.view_session
    hooks = tmux(tmux_socket, "show-hooks", "-w", "-t", nav.window_id)
    assert f'resize-pane -t "{nav.pane_id}"' in hooks and "window-resized[0]" in hooks
    assert "window-layout-changed[0]" in hooks
    for scope in (["-g"], ["-t", session], ["-g", "-w"]):
        assert "resize-pane -t" not in tmux(tmux_socket, "show-hooks", *scope), scope
    # the person's own window in the same session: split 30 | rest, no Switchboard tags
    mine = tmux(tmux_socket, "new-window", "-d", "-P", "-F", "#{window_id}", "-t",
                f"={session}:", "sleep", "600").strip()
    left = tmux(tmux_socket, "split-window", "-d", "-h", "-b", "-l", "30", "-P", "-F",
                "#{pane_id}", "-t", mine, "sleep", "600").strip()
    main = _navigator(engine, view_id)
    layout = engine.stage.snapshot().view(view_id)  # type: ignore[union-attr]
    assert layout is not None and layout.main is not None
    terminal = Terminal(tmux_socket, session, 200, 50)
    try:
        _check_size(engine, view_id, tmux_socket, 200, 50, main.pane_pid)
        tmux(tmux_socket, "resize-pane", "-Z", "-t", layout.main.pane_id)
        terminal.resize(80, 24)
        assert retry_until(lambda: _window_width(tmux_socket, nav.pane_id) == 80, 20, interval=0.02)
        time.sleep(0.5)  # give a wrong hook the time to unzoom
        assert tmux(tmux_socket, "display-message", "-p", "-t", nav.pane_id,
                    "#{window_zoomed_flag}").strip() == "1"
        tmux(tmux_socket, "resize-pane", "-Z", "-t", layout.main.pane_id)  # unzoom
        _check_size(engine, view_id, tmux_socket, 80, 24, main.pane_pid)
        # tmux shrank the person's split proportionally; no hook put it back to 30
        tmux(tmux_socket, "select-window", "-t", mine)
        assert retry_until(lambda: _window_width(tmux_socket, left) == 80, 20, interval=0.02)
        width = int(tmux(tmux_socket, "display-message", "-p", "-t", left,
                         "#{pane_width}").strip())
        assert width != 30 and width != navigator_width_for(80, WIDTH)
    finally:
        terminal.close()


def _prefix_key(socket: Path) -> bytes:
    """The server's prefix key as the byte a terminal sends (C-b unless configured)."""
    prefix = tmux(socket, "show-options", "-gv", "prefix").strip() or "C-b"
    assert prefix.startswith("C-") and len(prefix) == 3, prefix
    return bytes([ord(prefix[2].lower()) & 0x1F])




def _crash(engine: Engine, view_id: str) -> None:
    pane = _navigator(engine, view_id)
    assert pane.pane_pid is not None and not pane.dead
    os.kill(pane.pane_pid, signal.SIGKILL)
    assert retry_until(lambda: _navigator(engine, view_id).dead, 10, interval=0.02)


def test_a_crashed_navigator_comes_back_at_its_width(tmp_path: Path,
                                                     tmux_socket: Path) -> None:
    """Dead while the terminal was squeezed: `switchboard open` and prefix + S (typed
    into the attached terminal) both respawn it at the width for the terminal."""
    engine, view_id = _start(tmp_path, tmux_socket)
    terminal = Terminal(tmux_socket, engine.config.tmux.view_session, 80, 24)
    try:
        _check_size(engine, view_id, tmux_socket, 80, 24, None)
        _crash(engine, view_id)
        # squeezed while dead: tmux takes the columns, nothing is there to notice
        tmux(tmux_socket, "resize-pane", "-t", _navigator(engine, view_id).pane_id, "-x", "1")
        assert _navigator(engine, view_id).width == 1

        done = run_cli(tmp_path, "open", "alpha", "--no-attach")
        assert done.returncode == 0, done.stderr
        _check_size(engine, view_id, tmux_socket, 80, 24, None)

        _crash(engine, view_id)
        terminal.resize(60, 20)
        assert retry_until(lambda: _window_width(tmux_socket,
                                                 _navigator(engine, view_id).pane_id) == 60,
                           20, interval=0.02)
        terminal.type(_prefix_key(tmux_socket) + b"S")
        _check_size(engine, view_id, tmux_socket, 60, 20, None)
    finally:
        terminal.close()
    assert problems(engine, view_id) == []


def test_a_view_built_while_a_small_terminal_is_attached(tmp_path: Path,
                                                         tmux_socket: Path) -> None:
    """Entering another project from an 80x24 terminal: its new window is shown at the
    terminal's size, and its navigator has the width for it from the start."""
    engine, alpha = _start(tmp_path, tmux_socket)
    terminal = Terminal(tmux_socket, engine.config.tmux.view_session, 80, 24)
    try:
        _check_size(engine, alpha, tmux_socket, 80, 24, None)
        beta = engine.project_enter(new_request_id(), "beta").view_id
        engine.stage.show_view(dict(engine.conn.execute(
            "SELECT * FROM user_views WHERE view_id = ?", (beta,)).fetchone()))
        _check_size(engine, beta, tmux_socket, 80, 24, None)
        assert _navigator(engine, alpha).width == navigator_width_for(80, WIDTH)
    finally:
        terminal.close()
    assert problems(engine, beta) == []
