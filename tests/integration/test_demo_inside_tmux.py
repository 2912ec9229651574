"""`switchboard demo` typed inside the person's own tmux does not nest a tmux
(issue 40.8).

The demo runs on its own private tmux server, and a client cannot switch-client
to another server. The attach used to run inside the pane: a second tmux, with
the same prefix, inside the first. Now the person's client (a real `tmux attach`
in a pseudo-terminal, as a terminal emulator runs it) leaves their server and the
same terminal attaches to the demo; detaching there brings it back to the
session it came from.
"""

from __future__ import annotations

import os
import pty
import shlex
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.journey_env import tmux
from tests.waiting import retry_until

pytestmark = pytest.mark.tmux

BIN = Path(sys.executable).parent


class Terminal:
    """A real `tmux attach` in a pseudo-terminal (80x24), its output drained."""

    def __init__(self, socket: Path, session: str, env: dict[str, str]) -> None:
        import fcntl
        import struct
        import termios

        argv = ["tmux", "-S", str(socket), "attach-session", "-t", f"={session}"]
        pid, fd = pty.fork()
        if pid == 0:
            try:
                fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
                os.execvpe(argv[0], argv, env)
            finally:
                os._exit(127)
        self.pid, self.fd = pid, fd
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()

    def _drain(self) -> None:
        while True:
            try:
                if not os.read(self.fd, 65536):
                    return
            except OSError:
                return

    def close(self) -> None:
        try:
            os.kill(self.pid, signal.SIGTERM)
            os.waitpid(self.pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
        os.close(self.fd)
        self._reader.join(5)


def _clients(socket: Path) -> list[tuple[str, str]]:
    """(tty, session name) of each client attached to the server at ``socket``."""
    out = tmux(socket, "list-clients", "-F", "#{client_tty}\t#{session_name}")
    return [tuple(line.split("\t", 1)) for line in out.splitlines() if "\t" in line]  # type: ignore[misc]


@pytest.fixture
def demo_home(tmp_path: Path) -> Iterator[Path]:
    home = Path(os.path.realpath("/tmp")) / f"sbdemo-n{os.getpid()}-{tmp_path.name[-8:]}"
    yield home
    subprocess.run(["tmux", "-S", str(home / "tmux.sock"), "kill-server"], capture_output=True)
    subprocess.run(["rm", "-rf", str(home)])


def test_demo_inside_tmux_moves_the_client_instead_of_nesting(
        tmp_path: Path, tmux_socket: Path, demo_home: Path) -> None:
    env = {k: v for k, v in os.environ.items()
           if k not in ("TMUX", "TMUX_PANE", "SWITCHBOARD_HOME", "SWITCHBOARD_CONFIG",
                        "SWITCHBOARD_VIEW_ID")}
    env.update(TERM="xterm-256color", SHELL="/bin/sh", HOME=str(tmp_path))
    # the person's own tmux server, with a shell in session "work"
    subprocess.run(["tmux", "-S", str(tmux_socket), "-f", "/dev/null", "new-session", "-d",
                    "-s", "work", "-x", "80", "-y", "24", "/bin/sh"], check=True, env=env)
    terminal = Terminal(tmux_socket, "work", env)
    try:
        assert retry_until(lambda: len(_clients(tmux_socket)) == 1, 20)
        ((tty, session),) = _clients(tmux_socket)
        assert session == "work"
        # typed in the person's pane, where $TMUX names their server
        line = shlex.join([str(BIN / "switchboard"), "demo", "--home", str(demo_home)])
        tmux(tmux_socket, "send-keys", "-t", "=work:", "-l", line)
        tmux(tmux_socket, "send-keys", "-t", "=work:", "Enter")
        demo_socket = demo_home / "tmux.sock"
        # the same terminal is now the demo's client, on the view's session, and it
        # left the person's server: no tmux client runs inside one of its panes
        assert retry_until(lambda: _clients(demo_socket) == [(tty, "switchboard")], 120), (
            _clients(demo_socket), _clients(tmux_socket),
            tmux(tmux_socket, "capture-pane", "-p", "-t", "=work:"))
        assert _clients(tmux_socket) == []
        nav = tmux(demo_socket, "list-panes", "-t", "=switchboard:", "-F", "#{@sb_role}")
        assert "navigator" in nav.split()
        # prefix d in the demo: the terminal is back in the session it came from
        tmux(demo_socket, "detach-client", "-t", tty)
        assert retry_until(lambda: _clients(tmux_socket) == [(tty, "work")], 30), (
            _clients(tmux_socket))
        assert _clients(demo_socket) == []
        shown = tmux(tmux_socket, "capture-pane", "-p", "-J", "-t", "=work:")
        assert "this terminal moved to the demo's own tmux server" in shown
        assert "prefix d there brings it back to this session" in shown
    finally:
        terminal.close()


def test_demo_in_a_pane_of_the_demo_switches_that_client(
        tmp_path: Path, demo_home: Path) -> None:
    """In a shell on the demo's own server (prefix c there, say), commands find the demo's
    home without being told, and `switchboard demo` switches the client to the view."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("TMUX", "TMUX_PANE", "SWITCHBOARD_HOME", "SWITCHBOARD_CONFIG",
                        "SWITCHBOARD_VIEW_ID")}
    env.update(TERM="xterm-256color", SHELL="/bin/sh", HOME=str(tmp_path))
    switchboard = str(BIN / "switchboard")
    built = subprocess.run([switchboard, "demo", "--home", str(demo_home), "--no-attach"],
                           env=env, capture_output=True, text=True, timeout=120)
    assert built.returncode == 0, built.stderr
    window = built.stdout.split("attach -t ")[1].split()[0]
    demo_socket = demo_home / "tmux.sock"
    # a shell of the person's on the demo's server; tmux gives it the server's environment
    tmux(demo_socket, "new-session", "-d", "-s", "mine", "-x", "80", "-y", "24", "/bin/sh")
    terminal = Terminal(demo_socket, "mine", env)
    try:
        assert retry_until(lambda: [s for _, s in _clients(demo_socket)] == ["mine"], 20)
        ((tty, _),) = _clients(demo_socket)
        listed = tmp_path / "listed"
        tmux(demo_socket, "send-keys", "-t", "=mine:", "-l",
             f"{shlex.quote(switchboard)} recovery list; echo $? > {shlex.quote(str(listed))}")
        tmux(demo_socket, "send-keys", "-t", "=mine:", "Enter")
        assert retry_until(lambda: listed.exists() and listed.read_text().strip(), 60)
        assert listed.read_text().strip() == "0", tmux(demo_socket, "capture-pane", "-p",
                                                       "-t", "=mine:")
        tmux(demo_socket, "send-keys", "-t", "=mine:", "-l",
             shlex.join([switchboard, "demo", "--home", str(demo_home)]))
        tmux(demo_socket, "send-keys", "-t", "=mine:", "Enter")

        def shown() -> str:
            return tmux(demo_socket, "display-message", "-p", "-c", tty,
                        "#{session_name} #{window_id}").strip()

        # the same client, now on the view's window; no second client anywhere
        assert retry_until(lambda: shown() == f"switchboard {window}", 60), (
            shown(), tmux(demo_socket, "capture-pane", "-p", "-J", "-S", "-40", "-t",
                          "=mine:").strip())
        assert _clients(demo_socket) == [(tty, "switchboard")]
    finally:
        terminal.close()


def test_demo_in_a_session_nobody_looks_at_moves_no_other_terminal(
        tmp_path: Path, tmux_socket: Path, demo_home: Path) -> None:
    """With no client on the pane's session tmux would name any client of the server:
    the person's terminal on another session stays where it is; the line says how to
    attach instead."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("TMUX", "TMUX_PANE", "SWITCHBOARD_HOME", "SWITCHBOARD_CONFIG",
                        "SWITCHBOARD_VIEW_ID")}
    env.update(TERM="xterm-256color", SHELL="/bin/sh", HOME=str(tmp_path))
    for session in ("work", "other"):
        subprocess.run(["tmux", "-S", str(tmux_socket), "-f", "/dev/null", "new-session",
                        "-d", "-s", session, "-x", "80", "-y", "24", "/bin/sh"],
                       check=True, env=env)
    terminal = Terminal(tmux_socket, "work", env)
    try:
        assert retry_until(lambda: len(_clients(tmux_socket)) == 1, 20)
        ((tty, _),) = _clients(tmux_socket)
        line = shlex.join([str(BIN / "switchboard"), "demo", "--home", str(demo_home)])
        tmux(tmux_socket, "send-keys", "-t", "=other:", "-l", line)
        tmux(tmux_socket, "send-keys", "-t", "=other:", "Enter")

        def said() -> str:
            return tmux(tmux_socket, "capture-pane", "-p", "-J", "-t", "=other:")

        assert retry_until(lambda: "run the attach line above in a terminal outside tmux"
                           in said(), 120), said()
        assert "attach:    env -u TMUX -u TMUX_PANE tmux -S" in said()
        assert _clients(tmux_socket) == [(tty, "work")]
        assert _clients(demo_home / "tmux.sock") == []
    finally:
        terminal.close()
