"""Attention outside the view, as a person sees it: a real tmux client attached in a pty
gets the status segment, the message, the bell and the OSC desktop notification for an
agent it is not looking at, and nothing for the one it is looking at."""

from __future__ import annotations

import os
import pty
import select
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Iterator
from fcntl import ioctl
from pathlib import Path

import pytest

from core.context.requests import new_request_id
from core.hooks.attention import (
    CHECKED_OPTION,
    NUDGE_COALESCE_S,
    AttentionCounts,
    AttentionKind,
    Client,
    Subject,
    notices,
    publish_change,
    terminal_bytes,
)
from tests.integration.journey_env import make_live_engine, tmux, type_line
from tests.waiting import retry_until

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_nobody_is_nudged_about_what_someone_is_looking_at() -> None:
    shown = Subject("f1", "Fix", "alpha", view_window="@3", is_active=True)
    parked = Subject("f2", "Tests", "alpha", view_window="@3", is_active=False)
    here, there = Client("/dev/pts/1", "/dev/pts/1", "@3"), Client("/dev/pts/2", "/dev/pts/2",
                                                                   "@9")
    assert notices(shown, AttentionKind.NEEDS_INPUT, [here, there]) == []
    sent = notices(parked, AttentionKind.TURN_FINISHED, [here, there])
    assert [n.client for n in sent] == [here, there]
    assert sent[0].text == "Switchboard: alpha / Tests finished its turn"


def test_segment_and_terminal_bytes() -> None:
    assert AttentionCounts().segment() == ""
    text = AttentionCounts(needs_input=2, ready=1, working=3).segment()
    assert "! 2 input" in text and "✓ 1 ready" in text and "~ 3 working" in text
    data = terminal_bytes("a\x1b]evil\x07;b", bell=True, desktop=True)
    assert data == b"\x1b]9;a]evilb\x07\x1b]777;notify;Switchboard;a]evilb\x07\x07"
    assert terminal_bytes("x", bell=False, desktop=False) == b""


class PtyClient:
    """`tmux attach` in a real pseudo-terminal of a given size; collects what it draws."""

    def __init__(self, socket: Path, target: str, cols: int = 100, rows: int = 30) -> None:
        pid, fd = pty.fork()
        if pid == 0:
            env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}
            env["TERM"] = "xterm-256color"
            os.execvpe("tmux", ["tmux", "-S", str(socket), "attach", "-t", target], env)
        ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        self.pid, self.fd, self.output = pid, fd, b""

    def read(self, seconds: float = 0.3) -> bytes:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.fd], [], [], 0.05)
            if ready:
                try:
                    self.output += os.read(self.fd, 65536)
                except OSError:
                    break
        return self.output

    def close(self) -> None:
        try:
            os.kill(self.pid, 9)
            os.waitpid(self.pid, 0)
        except OSError:
            pass
        os.close(self.fd)


@pytest.fixture
def live(tmp_path: Path, tmux_socket: Path, monkeypatch) -> Iterator[tuple]:
    monkeypatch.setenv("SWITCHBOARD_HOME", str(tmp_path))
    monkeypatch.setenv("SWITCHBOARD_CONFIG", str(tmp_path / "config.toml"))
    engine = make_live_engine(tmp_path, tmux_socket)
    route = engine.project_enter(new_request_id(), "alpha")
    started = engine.frame_start(new_request_id(), route.frame_id)
    main = engine.conn.execute("SELECT main_pane_id FROM user_views").fetchone()[0]
    assert retry_until(lambda: engine.conn.execute(
        "SELECT state FROM launch_intents WHERE launch_id = ?",
        (started.launch_id,)).fetchone()[0] == "bound", 30)
    type_line(tmux_socket, main, "hello")  # one turn: its Stop says ready
    assert retry_until(lambda: engine.conn.execute(
        "SELECT activity FROM provider_sessions").fetchone()[0] == "ready", 30)
    # ... and its publish (the server's turn-end work) has looked at the status line
    # once: a test that sets the person's own line afterwards races nothing
    assert retry_until(lambda: tmux(tmux_socket, "show-options", "-gqv",
                                    CHECKED_OPTION).strip() == "1", 30)
    window = engine.conn.execute("SELECT tmux_window_id FROM user_views").fetchone()[0]
    client = PtyClient(tmux_socket, window)
    try:
        assert retry_until(lambda: b"\x1b[" in client.read(0.2), 30)
        yield engine, route, client
    finally:
        client.close()


def _publish(home: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}
    env.update(SWITCHBOARD_HOME=str(home), SWITCHBOARD_CONFIG=str(home / "config.toml"),
               PYTHONPATH=str(REPO_ROOT))
    done = subprocess.run([sys.executable, "-m", "navigator.cli", "attention", "--publish",
                           *args], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_status_segment_and_nudges_reach_a_real_client(live, tmp_path: Path,
                                                       tmux_socket: Path) -> None:
    engine, route, client = live
    # the agent's own hooks already published: the count, and (its turn finished) the
    # segment in the default status line, with no command run by hand
    assert retry_until(lambda: "✓ 1 ready" in tmux(tmux_socket, "show-options", "-gqv",
                                                    "@sb_attention"), 20)
    assert retry_until(lambda: tmux(tmux_socket, "show-options", "-gv", "status-right")
                       .startswith("#{@sb_attention}"), 20)
    out = _publish(tmp_path, "--frame", route.frame_id, "--event", "turn_finished")
    assert out.strip() == "needs input 0, ready 1, working 0"
    # the person kept tmux's default status line: the segment went in front of it
    status = tmux(tmux_socket, "show-options", "-gv", "status-right")
    assert status.startswith("#{@sb_attention}")
    assert "✓ 1 ready" in tmux(tmux_socket, "show-options", "-gv", "@sb_attention")
    client.read(1.0)
    assert "✓ 1 ready".encode() in client.output  # drawn in the client's status line
    # the client looks at this very frame: no bell, no OSC, no message
    assert b"\x07" not in client.output.replace(b"\x1b]", b"")  # OSC terminators aside
    assert b"]9;" not in client.output

    # a pushed child now shows in main; the workspace is parked, not looked at
    client.output = b""
    engine.conn.execute("SELECT 1")
    child = engine.frame_push(new_request_id(), route.frame_id, "Tests", "Write tests.")
    assert retry_until(lambda: client.read(0.05) is not None and engine.conn.execute(
        "SELECT state FROM view_transitions WHERE kind = 'push'").fetchone()[0]
        == "completed", 30)  # a terminal keeps reading what its client draws
    out = _publish(tmp_path, "--frame", route.frame_id, "--event", "needs_input")
    assert "; nudged /dev/" in out, out
    assert retry_until(lambda: b"]9;Switchboard: alpha / alpha needs input\x07" in client.read(),
                       30), client.output[-400:]
    assert b"]777;notify;Switchboard;Switchboard: alpha / alpha needs input\x07" \
        in client.output
    # nothing about the child the client is looking at
    client.output = b""
    _publish(tmp_path, "--frame", child.target_frame_id, "--event", "turn_finished")
    client.read(0.5)
    assert b"]9;" not in client.output


def test_a_person_s_own_status_line_is_left_alone(live, tmp_path: Path,
                                                 tmux_socket: Path) -> None:
    engine, route, _ = live
    tmux(tmux_socket, "set-option", "-g", "status-right", "mine %H:%M")
    _publish(tmp_path, "--frame", route.frame_id)
    assert tmux(tmux_socket, "show-options", "-gv", "status-right").strip() == "mine %H:%M"
    config = tmp_path / "config.toml"
    config.write_text(config.read_text() + "\n[attention]\nstatus_line = false\n"
                      if "[attention]" not in config.read_text() else
                      config.read_text().replace("status_line = true", "status_line = false"))
    tmux(tmux_socket, "set-option", "-gu", "@sb_attention")
    _publish(tmp_path, "--frame", route.frame_id)
    assert tmux(tmux_socket, "show-options", "-gqv", "@sb_attention").strip() == ""


def test_a_burst_of_turn_ends_nudges_each_client_once(live, tmp_path: Path) -> None:
    """Ten turn ends of the parked workspace in a row (issue 31.9): one bell and one
    desktop notification per client, not ten; the status segment still counts.

    The ten are published as the home's server publishes its turn-end work, in one
    process one after another, so they fall inside one coalescing window however loaded
    the machine is (ten CLI processes one after another took longer than the window at
    a load of 10). The CLI publisher is the other tests' path."""
    from core.config.registry import open_current

    engine, route, client = live
    engine.frame_push(new_request_id(), route.frame_id, "Tests", "Write tests.")
    assert retry_until(lambda: client.read(0.05) is not None and engine.conn.execute(
        "SELECT state FROM view_transitions WHERE kind = 'push'").fetchone()[0]
        == "completed", 30)  # the workspace is parked: the client does not look at it
    client.read(0.5)
    client.output = b""
    opened = open_current(readonly=True)  # the live fixture's home and config
    try:
        started = time.monotonic()
        outs = [publish_change(opened, route.frame_id, "turn_finished") for _ in range(10)]
        took = time.monotonic() - started
    finally:
        opened.conn.close()
    assert took < NUDGE_COALESCE_S, f"ten publishes took {took:.1f} s: more than one window"
    assert sum(len(sent) for _, sent in outs) == 1, outs
    assert all(counts.needs_input == 0 for counts, _ in outs)
    client.read(1.0)
    assert client.output.count(b"]9;Switchboard: alpha / alpha finished its turn") == 1
    # another kind about the same frame is news: it is not held back
    out = _publish(tmp_path, "--frame", route.frame_id, "--event", "needs_input")
    assert "; nudged /dev/" in out, out


def test_stopping_an_agent_takes_it_out_of_the_status_line(
        live, tmp_path: Path, tmux_socket: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A stop sends no hook: the client that stops it puts the new counts in (issue 40.7);
    so does the home's server, with no navigator running, for an agent that went away
    by itself."""
    from core.apps.client import EngineClient
    from core.config.home import Home
    from core.server.main import stop_server
    from core.server.start import ensure_running

    engine, route, _ = live
    assert retry_until(lambda: "✓ 1 ready" in tmux(tmux_socket, "show-options", "-gqv",
                                                    "@sb_attention"), 20)
    client = EngineClient.open(Home(root=tmp_path, config_path=tmp_path / "config.toml"))
    client.stop(route.frame_id)
    assert retry_until(lambda: "ready" not in tmux(tmux_socket, "show-options", "-gqv",
                                                   "@sb_attention"), 10), \
        tmux(tmux_socket, "show-options", "-gqv", "@sb_attention")
    # an agent back to ready, then its process killed outside Switchboard: the turn sees it
    engine.frame_start(new_request_id(), route.frame_id)
    main = engine.conn.execute("SELECT main_pane_id FROM user_views").fetchone()[0]
    type_line(tmux_socket, main, "hello")
    assert retry_until(lambda: "✓ 1 ready" in tmux(tmux_socket, "show-options", "-gqv",
                                                    "@sb_attention"), 30)
    pid = tmux(tmux_socket, "display-message", "-p", "-t", main, "#{pane_pid}").strip()
    os.kill(int(pid), 9)
    monkeypatch.setenv("SWITCHBOARD_RECONCILE_INTERVAL", "0.3")
    ensure_running(client.home)
    try:
        assert retry_until(lambda: "ready" not in tmux(tmux_socket, "show-options", "-gqv",
                                                       "@sb_attention"), 30), \
            tmux(tmux_socket, "show-options", "-gqv", "@sb_attention")
    finally:
        stop_server(client.home.run_dir)


def test_no_tmux_message_by_default(live, tmp_path: Path, tmux_socket: Path) -> None:
    """A tmux message stops the client's pane redraws while it is up (tmux 3.3a: the
    badge came 4.3 s late and typed text 4.0 s late): by default a nudge is the bell,
    the desktop notification and the status line only (issue 40.10)."""
    engine, route, client = live
    engine.frame_push(new_request_id(), route.frame_id, "Tests", "Write tests.")
    assert retry_until(lambda: client.read(0.05) is not None and engine.conn.execute(
        "SELECT state FROM view_transitions WHERE kind = 'push'").fetchone()[0]
        == "completed", 30)
    client.read(0.5)
    client.output = b""
    out = _publish(tmp_path, "--frame", route.frame_id, "--event", "needs_input")
    assert "; nudged /dev/" in out, out
    assert retry_until(lambda: b"]9;Switchboard: alpha / alpha needs input" in client.read(), 15)
    client.read(0.5)
    # the nudge's text reached the terminal as OSC only, never drawn in the status line
    drawn = client.output.replace(b"]9;Switchboard: alpha / alpha needs input", b"").replace(
        b"]777;notify;Switchboard;Switchboard: alpha / alpha needs input", b"")
    assert b"alpha needs input" not in drawn
