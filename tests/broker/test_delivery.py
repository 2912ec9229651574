"""At-least-once pane notification on a real private tmux server with fake agent panes."""

from __future__ import annotations

import fcntl
import os
import re
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import libtmux
import pytest

from core.broker.broker import Broker, MessageState, PlacementSpec, open_broker
from core.broker.delivery import (
    DeliveryFailed,
    Notifier,
    PaneLocks,
    PaneServer,
    PaneTarget,
    TmuxTyper,
    notification_line,
)
from tests.broker.conftest import (
    fleet_with_worker,
    make_broker,
    notified_at,
    pane_lines,
    placeholder,
    wait_for_lines,
)
from tests.waiting import retry_until

pytestmark = pytest.mark.tmux

REPO = Path(__file__).resolve().parents[2]
LINE = re.compile(r"^\[switchboard\] message (\d+) from \S+ \(member \d+\): run "
                  r"`switchboard message poll --member \d+`, then ack (\d+)$")


def test_line_arrives_and_notified_at_is_stamped(
        broker_path: Path, tmux_socket: Path, tmux_server: libtmux.Server,
        fake_pane: Callable[[], PlacementSpec]) -> None:
    worker_pane = fake_pane()
    with make_broker(broker_path, tmux_socket) as broker:
        fleet_id, director_id, worker_id = fleet_with_worker(broker, fake_pane(), worker_pane)
        result = broker.send(fleet_id, director_id, worker_id, "please review #42")
        message_id = result.message.message_id
        assert result.delivery is not None
        assert result.delivery.notified == (message_id,)
        assert result.delivery.not_notified is None
        lines = wait_for_lines(tmux_server, worker_pane.mux_pane_id, 1)
        assert lines == [notification_line(message_id, "boss", director_id, worker_id)]
        assert LINE.match(lines[0])
        assert notified_at(broker, message_id) is not None
        # Delivery never consumes: only ACK changes status_state.
        assert [m.status for m in broker.poll(worker_id)] == [MessageState.INPUT_REQUIRED]


def test_pane_vanishing_mid_drain_leaves_null_and_next_send_retries(
        broker_path: Path, tmux_socket: Path, tmux_server: libtmux.Server,
        fake_pane: Callable[[], PlacementSpec]) -> None:
    with make_broker(broker_path, tmux_socket) as broker:
        fleet_id, director_id, worker_id = fleet_with_worker(broker, fake_pane(),
                                                             placeholder(None))
        # While the worker's pane is pending, messages queue unnotified.
        first = broker.send(fleet_id, director_id, worker_id, "one")
        assert first.delivery is not None
        assert first.delivery.skipped == "recipient's placement has no pane yet"
        second = broker.send(fleet_id, director_id, worker_id, "two").message.message_id
        first_id = first.message.message_id
        doomed = fake_pane()
        broker.place_member(worker_id, doomed)

        def vanish(message_id: int) -> None:  # the pane dies right after the first line
            if message_id == first_id:
                tmux_server.cmd("kill-pane", "-t", doomed.mux_pane_id)

        notifier = Notifier(TmuxTyper(tmux_socket), PaneLocks.beside(broker_path),
                            after_submit=vanish)
        report = notifier.drain(broker.store, worker_id, now=broker.now, attempted=set())
        assert report.notified == (first_id,)
        assert report.not_notified is not None
        assert report.not_notified.message_id == second
        assert f"pane {doomed.mux_pane_id} no longer exists" in report.not_notified.reason
        assert "the next send to that member or a wait retries it" in (
            report.not_notified.diagnostic())
        assert notified_at(broker, first_id) is not None
        assert notified_at(broker, second) is None

        replacement = fake_pane()
        broker.place_member(worker_id, replacement)
        third = broker.send(fleet_id, director_id, worker_id, "three").message.message_id
        lines = wait_for_lines(tmux_server, replacement.mux_pane_id, 2)
        assert [LINE.match(line).group(1) for line in lines] == [str(second), str(third)]
        assert notified_at(broker, second) is not None
        assert notified_at(broker, third) is not None


def test_failed_attempt_is_not_repeated_within_one_invocation(
        broker_path: Path, tmux_socket: Path, tmux_server: libtmux.Server,
        fake_pane: Callable[[], PlacementSpec]) -> None:
    calls: list[str] = []

    class CountingTyper(TmuxTyper):
        def type_line(self, target: PaneTarget, line: str,
                      server: PaneServer | None = None) -> None:
            calls.append(line)
            super().type_line(target, line, server)

    notifier = Notifier(CountingTyper(tmux_socket), PaneLocks.beside(broker_path))
    with make_broker(broker_path, tmux_socket, notifier=notifier) as broker:
        pane = fake_pane()
        fleet_id, director_id, worker_id = fleet_with_worker(broker, fake_pane(), pane)
        tmux_server.cmd("kill-pane", "-t", pane.mux_pane_id)
        one = broker.send(fleet_id, director_id, worker_id, "one")
        assert one.delivery is not None and one.delivery.not_notified is not None
        calls.clear()
        attempted: set[int] = set()
        first = notifier.drain(broker.store, worker_id, now=broker.now, attempted=attempted)
        again = notifier.drain(broker.store, worker_id, now=broker.now, attempted=attempted)
        assert len(calls) == 1  # the same invocation never retries a failed message
        assert first.not_notified is not None and again.not_notified is None
        assert notified_at(broker, one.message.message_id) is None


def test_two_concurrent_sender_processes_never_interleave_lines(
        broker_path: Path, tmux_socket: Path, tmux_server: libtmux.Server,
        fake_pane: Callable[[], PlacementSpec], tmp_path: Path) -> None:
    worker_pane = fake_pane()
    with make_broker(broker_path, tmux_socket) as broker:
        fleet_id, director_id, worker_id = fleet_with_worker(broker, fake_pane(), worker_pane)
        helper = broker.register_member(fleet_id, "helper", description="",
                                        placement=fake_pane()).member.member_id
    go = tmp_path / "go"
    script = (
        "import os, sys, time\n"
        "from core.broker.broker import Broker\n"
        "path, socket, go, fleet, sender, recipient, count = sys.argv[1:]\n"
        "with Broker.open(path, tmux_socket=socket) as broker:\n"
        "    while not os.path.exists(go): time.sleep(0.001)\n"
        "    for i in range(int(count)):\n"
        "        result = broker.send(int(fleet), int(sender), int(recipient), f'm{i}')\n"
        "        assert result.delivery.not_notified is None, result.delivery\n"
    )
    per_sender = 25
    senders = [
        subprocess.Popen([sys.executable, "-c", script, str(broker_path), str(tmux_socket),
                          str(go), str(fleet_id), str(sender), str(worker_id), str(per_sender)],
                         cwd=REPO, stderr=subprocess.PIPE, text=True)
        for sender in (director_id, helper)
    ]
    time.sleep(0.3)  # let both import and open before the start signal
    go.touch()
    for process in senders:
        _, err = process.communicate(timeout=30)
        assert process.returncode == 0, err
    lines = wait_for_lines(tmux_server, worker_pane.mux_pane_id, 2 * per_sender)
    assert len(lines) == 2 * per_sender
    ids = []
    for line in lines:
        match = LINE.match(line)
        assert match, f"interleaved or partial line: {line!r}"
        assert match.group(1) == match.group(2)
        ids.append(int(match.group(1)))
    assert len(set(ids)) == 2 * per_sender  # every message once: the lock + revalidation
    with Broker(open_broker(broker_path)) as broker:
        assert all(notified_at(broker, i) is not None for i in ids)


def test_sender_waits_for_the_pane_input_lock(
        broker_path: Path, tmux_socket: Path, tmux_server: libtmux.Server,
        fake_pane: Callable[[], PlacementSpec]) -> None:
    """The lock is an OS lock on a file named for backend/session/pane, shared by processes."""
    worker_pane = fake_pane()
    with make_broker(broker_path, tmux_socket) as broker:
        fleet_id, director_id, worker_id = fleet_with_worker(broker, fake_pane(), worker_pane)
    lock_path = PaneLocks.beside(broker_path).path_for(worker_pane.target())
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        sender = subprocess.Popen(
            [sys.executable, "-m", "navigator.cli", "message", "send", "--broker-db",
             str(broker_path), "--tmux-socket", str(tmux_socket), "--fleet", str(fleet_id),
             "--from", str(director_id), "--to", str(worker_id), "locked out"],
            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        with Broker(open_broker(broker_path)) as reader:
            assert retry_until(lambda: reader.poll(worker_id), 10, interval=0.02), \
                "the message was never stored"
        time.sleep(0.3)
        assert pane_lines(tmux_server, worker_pane.mux_pane_id) == []
        assert sender.poll() is None  # still waiting for the lock
    finally:
        os.close(fd)
    out, err = sender.communicate(timeout=15)
    assert sender.returncode == 0, err
    assert "(notified)" in out
    assert len(wait_for_lines(tmux_server, worker_pane.mux_pane_id, 1)) == 1


def test_ack_before_stamp_counts_as_notified(
        broker_path: Path, tmux_socket: Path, tmux_server: libtmux.Server,
        fake_pane: Callable[[], PlacementSpec]) -> None:
    worker_pane = fake_pane()
    other = Broker(open_broker(broker_path))
    acked: list[int] = []

    def recipient_acks_first(message_id: int) -> None:
        other.ack(worker_id, message_id)
        acked.append(message_id)

    notifier = Notifier(TmuxTyper(tmux_socket), PaneLocks.beside(broker_path),
                        after_submit=recipient_acks_first)
    with make_broker(broker_path, tmux_socket, notifier=notifier) as broker, other:
        fleet_id, director_id, worker_id = fleet_with_worker(broker, fake_pane(), worker_pane)
        result = broker.send(fleet_id, director_id, worker_id, "quick one")
        message_id = result.message.message_id
        assert acked == [message_id]
        assert result.delivery is not None
        assert result.delivery.notified == (message_id,)
        assert result.delivery.not_notified is None
        row = broker.store.get_message(message_id)
        assert row["status_state"] == "completed"
        assert row["notified_at"] is None  # stamped only while pending
        notifier.after_submit = None
        later = broker.send(fleet_id, director_id, worker_id, "later").message.message_id
        lines = wait_for_lines(tmux_server, worker_pane.mux_pane_id, 2)
        assert [int(LINE.match(line).group(1)) for line in lines] == [message_id, later]


def test_self_send_is_typed_nowhere(
        broker_path: Path, tmux_socket: Path, tmux_server: libtmux.Server,
        fake_pane: Callable[[], PlacementSpec]) -> None:
    worker_pane = fake_pane()
    with make_broker(broker_path, tmux_socket) as broker:
        fleet_id, _, worker_id = fleet_with_worker(broker, fake_pane(), worker_pane)
        result = broker.send(fleet_id, worker_id, worker_id, "note to self")
        assert result.delivery is None
        row = broker.store.get_message(result.message.message_id)
        assert row["notified_at"] == row["created_at"]
        time.sleep(0.2)
        assert pane_lines(tmux_server, worker_pane.mux_pane_id) == []
        assert [m.text for m in broker.poll(worker_id)] == ["note to self"]


def test_root_director_is_never_notified_through_its_pane(
        broker_path: Path, tmux_socket: Path, tmux_server: libtmux.Server,
        fake_pane: Callable[[], PlacementSpec]) -> None:
    director_pane = fake_pane()
    with make_broker(broker_path, tmux_socket) as broker:
        fleet_id, director_id, worker_id = fleet_with_worker(broker, director_pane, fake_pane())
        result = broker.send(fleet_id, worker_id, director_id, "finished")
        assert result.delivery is not None
        assert result.delivery.notified == ()
        assert "root Director" in (result.delivery.skipped or "")
        waited = broker.wait(director_id, 1)
        assert [m.text for m in waited.messages] == ["finished"]
        assert waited.deliveries == ()
        time.sleep(0.2)
        assert pane_lines(tmux_server, director_pane.mux_pane_id) == []
        assert notified_at(broker, result.message.message_id) is None


def test_wait_retries_an_unnotified_message(
        broker_path: Path, tmux_socket: Path, tmux_server: libtmux.Server,
        fake_pane: Callable[[], PlacementSpec]) -> None:
    with make_broker(broker_path, tmux_socket) as broker:
        dead = fake_pane()
        fleet_id, director_id, worker_id = fleet_with_worker(broker, fake_pane(), dead)
        tmux_server.cmd("kill-pane", "-t", dead.mux_pane_id)
        message_id = broker.send(fleet_id, director_id, worker_id, "x").message.message_id
        assert notified_at(broker, message_id) is None
        alive = fake_pane()
        broker.place_member(worker_id, alive)
        waited = broker.wait(worker_id, 1)
        assert [r.notified for r in waited.deliveries] == [(message_id,)]
        assert len(wait_for_lines(tmux_server, alive.mux_pane_id, 1)) == 1
        assert notified_at(broker, message_id) is not None


def test_a_fenced_pane_is_not_typed_into_and_the_message_stays_pending(
        broker_path: Path, tmux_socket: Path, tmux_server: libtmux.Server,
        fake_pane: Callable[[], PlacementSpec]) -> None:
    """tmux drops keys sent to an input-disabled (parked) pane without an error; the
    delivery must not count that as notified, and retries once the pane takes input."""
    worker_pane = fake_pane()
    with make_broker(broker_path, tmux_socket) as broker:
        fleet_id, director_id, worker_id = fleet_with_worker(broker, fake_pane(), worker_pane)
        tmux_server.cmd("select-pane", "-d", "-t", worker_pane.mux_pane_id)
        result = broker.send(fleet_id, director_id, worker_id, "x")
        message_id = result.message.message_id
        assert result.delivery is not None and result.delivery.notified == ()
        assert "parked with input disabled" in result.delivery.not_notified.reason
        assert notified_at(broker, message_id) is None
        assert pane_lines(tmux_server, worker_pane.mux_pane_id) == []

        tmux_server.cmd("select-pane", "-e", "-t", worker_pane.mux_pane_id)
        waited = broker.wait(worker_id, 1)
        assert [r.notified for r in waited.deliveries] == [(message_id,)]
        assert wait_for_lines(tmux_server, worker_pane.mux_pane_id, 1) == [
            notification_line(message_id, "boss", director_id, worker_id)]
        assert notified_at(broker, message_id) is not None


def test_unstampable_line_is_not_notified(
        broker_path: Path, tmux_socket: Path, tmux_server: libtmux.Server,
        fake_pane: Callable[[], PlacementSpec], monkeypatch: pytest.MonkeyPatch) -> None:
    """Typed but not stamped (file locked): a diagnostic, and the message stays unstamped."""
    worker_pane = fake_pane()
    with make_broker(broker_path, tmux_socket) as broker:
        fleet_id, director_id, worker_id = fleet_with_worker(broker, fake_pane(), worker_pane)

        def locked(message_id: int, at: str) -> int:
            raise sqlite3.OperationalError("database is locked")

        monkeypatch.setattr(broker.store, "stamp_notified", locked)
        result = broker.send(fleet_id, director_id, worker_id, "x")
        assert result.delivery is not None and result.delivery.notified == ()
        assert result.delivery.not_notified is not None
        assert "not stamped (database is locked)" in result.delivery.not_notified.reason
        assert notified_at(broker, result.message.message_id) is None
        assert len(wait_for_lines(tmux_server, worker_pane.mux_pane_id, 1)) == 1


def test_typer_without_socket_fails_cleanly() -> None:
    with pytest.raises(DeliveryFailed, match="no tmux socket configured"):
        TmuxTyper(None).type_line(PaneTarget("tmux", "s", "@1", "%1"), "x")
    with pytest.raises(DeliveryFailed, match="not supported"):
        TmuxTyper("/nonexistent").type_line(PaneTarget("zellij", "s", "@1", "%1"), "x")


def test_lock_identity_is_backend_session_pane() -> None:
    a = PaneTarget("tmux", "main", "@1", "%3")
    assert a.lock_name == PaneTarget("tmux", "main", "@9", "%3").lock_name  # window ignored
    assert a.lock_name != PaneTarget("tmux", "other", "@1", "%3").lock_name
    assert a.lock_name != PaneTarget("tmux", "main", "@1", "%4").lock_name


def test_notification_line_is_safe_for_tmux() -> None:
    line = notification_line(7, "evil';\n\x1b[31mname", 1, 2)
    assert line.startswith("[") and line[-1].isdigit()
    assert all(" " <= ch <= "~" for ch in line) and "'" not in line
    assert "message 7" in line


_READ_LOGGER = """
import os, sys, tty
tty.setraw(0)
with open(sys.argv[1], "ab", buffering=0) as log:
    while True:
        log.write(os.read(0, 65536).hex().encode() + b"\\n")
"""


def test_enter_arrives_after_the_line_in_a_read_of_its_own(
        tmp_path: Path, tmux_socket: Path, tmux_server: libtmux.Server) -> None:
    """A real CLI (Claude Code) reads keys that arrive together as a paste and does not
    submit on an Enter inside it: the line would sit unsent in its input box. So the
    Enter must reach the agent in a later read than the text."""
    log = tmp_path / "reads.log"
    script = tmp_path / "reads.py"
    script.write_text(_READ_LOGGER)
    pane = tmux_server.cmd("new-window", "-d", "-t", "scratch:", "-P", "-F", "#{pane_id}",
                           f"exec {sys.executable} {script} {log}").stdout[0]
    assert retry_until(log.exists, 10)  # opened only once the terminal is raw
    line = notification_line(7, "boss", 1, 2)
    TmuxTyper(tmux_socket).type_line(PaneTarget("tmux", "scratch", "@1", pane), line)

    def reads() -> list[bytes]:
        return [bytes.fromhex(r) for r in log.read_text().split()]

    assert retry_until(lambda: b"\r" in b"".join(reads()), 5), reads()
    chunks = reads()
    assert b"".join(chunks) == line.encode() + b"\r"
    assert chunks[-1] == b"\r", chunks  # the Enter came on its own


class _TypingIntoReader:
    """A pane that logs each read of its terminal, and a typist process typing one line
    into it (``TmuxTyper`` in a process of its own, so the test can kill or race it)."""

    def __init__(self, tmp_path: Path, tmux_socket: Path, tmux_server: libtmux.Server,
                 line: str, *, own_group: bool = False) -> None:
        self.log = tmp_path / "reads.log"
        script = tmp_path / "reads.py"
        script.write_text(_READ_LOGGER)
        self.pane = tmux_server.cmd(
            "new-window", "-d", "-t", "scratch:", "-P", "-F", "#{pane_id}",
            f"exec {sys.executable} {script} {self.log}").stdout[0]
        assert retry_until(self.log.exists, 10)
        self.line = line.encode()
        self.typist = subprocess.Popen(
            [sys.executable, "-c", "import sys; from core.broker.delivery import TmuxTyper,"
             " PaneTarget; TmuxTyper(sys.argv[1]).type_line(PaneTarget('tmux', 'scratch',"
             " '@1', sys.argv[2]), sys.argv[3])", str(tmux_socket), self.pane, line],
            cwd=REPO, start_new_session=own_group)

    def reads(self) -> bytes:
        return b"".join(bytes.fromhex(r) for r in self.log.read_text().split())

    def wait_for_text(self) -> None:
        assert retry_until(lambda: self.reads() == self.line, 10), self.reads()

    def wait_for_enter(self) -> None:
        assert retry_until(lambda: self.reads() == self.line + b"\r", 5), self.reads()


def test_the_enter_arrives_when_the_typist_dies_right_after_typing(
        tmp_path: Path, tmux_socket: Path, tmux_server: libtmux.Server) -> None:
    """The server sends the Enter itself: a typist killed in the pause between the text
    and its Enter (a queue that waited in its tmux client died with the client) left the
    text unsent in the input box, where the next line was appended to it."""
    typing = _TypingIntoReader(tmp_path, tmux_socket, tmux_server,
                               notification_line(8, "boss", 1, 2), own_group=True)
    typing.wait_for_text()
    # Ctrl-C in the person's terminal, or a kill of the group: the typist and its tmux
    # client (if still running) die together, the Enter not yet sent.
    os.killpg(typing.typist.pid, 9)
    typing.typist.wait()
    typing.wait_for_enter()


def test_the_enter_arrives_when_the_pane_is_fenced_in_the_pause(
        tmp_path: Path, tmux_socket: Path, tmux_server: libtmux.Server) -> None:
    """A focus that parks the agent (or a control turn) fences its pane between the text
    and its Enter: tmux drops keys to a fenced pane, so the Enter lifts the fence for
    itself and puts it back; the line is submitted, not left in the input box."""
    typing = _TypingIntoReader(tmp_path, tmux_socket, tmux_server,
                               notification_line(9, "boss", 1, 2))
    typing.wait_for_text()
    tmux_server.cmd("select-pane", "-d", "-t", typing.pane)  # fenced before the Enter
    assert typing.typist.wait(10) == 0
    typing.wait_for_enter()
    fence = tmux_server.cmd("display-message", "-p", "-t", typing.pane,
                            "#{pane_input_off}").stdout
    assert fence == ["1"]  # and the pane is fenced again
