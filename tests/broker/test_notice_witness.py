"""A notification line is typed once even when its typist dies before stamping it.

The typist records its attempt in the pane's lock file before typing; the
agent's prompt hook stamps a line it received (``storage.broker_witness``); the
next typist of that pane waits a moment for that stamp instead of typing the
line again, and types it only when no witness came (the line never arrived).
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from core.broker.broker import Broker, PlacementSpec, open_broker
from core.broker.delivery import Notifier, PaneLocks, PaneServer, PaneTarget
from core.model.notice_line import managed_line, notice_message_id
from storage import broker_schema
from storage.broker_witness import _APPLICATION_ID, _LEDGER_VERSION, iso_utc_ms, stamp_witnessed

MANAGED = "switchboard-frame:F1"


class Killed(BaseException):
    """The typist dies right after its line went out (kill -9 between type and stamp)."""


class _Typer:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def type_line(self, target: PaneTarget, line: str,
                  server: PaneServer | None = None) -> None:
        self.lines.append(line)


class _ReadyGate:
    def blocked(self, frame_id: str, target: PaneTarget) -> str | None:
        return None

    def server_for(self, frame_id: str) -> PaneServer | None:
        return PaneServer("/tmp/views.sock", 1, 1)


def _world(tmp_path: Path, *, wait_s: float, die: bool
           ) -> tuple[Broker, _Typer, int, int, Path]:
    path = tmp_path / "b.sqlite3"
    store = open_broker(path)
    typer = _Typer()
    locks = PaneLocks(tmp_path / "locks")

    def killed(message_id: int) -> None:
        raise Killed(message_id)

    notifier = Notifier(typer, locks, gate=_ReadyGate(), witness_wait_s=wait_s,
                        after_submit=killed if die else None)
    broker = Broker(store, notifier=notifier, locks=locks)
    created = broker.create_fleet("f", director_name="ws", director_description="Director",
                                  placement=PlacementSpec("s", "@1", "%1", "fake"))
    agent = broker.register_member(created.fleet.fleet_id, "agent", description=MANAGED,
                                   placement=PlacementSpec("s", "@1", "%2", "fake"))
    return broker, typer, created.director.member.member_id, agent.member.member_id, path


def _notified(broker: Broker, message_id: int) -> str | None:
    row = broker.store.get_message(message_id)
    assert row is not None
    return row["notified_at"]


def _send_and_die(broker: Broker, director: int, agent: int) -> int:
    with pytest.raises(Killed) as died:
        broker.send(1, director, agent, "please look")
    message_id = died.value.args[0]
    assert _notified(broker, message_id) is None  # typed, never stamped by the typist
    assert broker.notifier is not None
    broker.notifier.after_submit = None  # the next typist is another, living process
    return int(message_id)


def test_a_line_the_agent_received_is_not_typed_again(tmp_path: Path) -> None:
    broker, typer, director, agent, path = _world(tmp_path, wait_s=5.0, die=True)
    message_id = _send_and_die(broker, director, agent)
    # The agent's prompt hook saw exactly that line.
    assert stamp_witnessed(path, MANAGED, message_id, time.time_ns() // 1_000_000)
    started = time.monotonic()
    report = broker._drain(agent, set())
    assert report.notified == () and typer.lines == [managed_line(message_id, "ws")]
    assert time.monotonic() - started < 1.0  # a stamp ends the wait at once
    assert _notified(broker, message_id) is not None
    broker.close()


def test_a_witness_that_comes_during_the_wait_ends_it(tmp_path: Path) -> None:
    broker, typer, director, agent, path = _world(tmp_path, wait_s=5.0, die=True)
    message_id = _send_and_die(broker, director, agent)
    late = threading.Timer(0.3, stamp_witnessed,
                           (path, MANAGED, message_id, time.time_ns() // 1_000_000))
    late.start()
    started = time.monotonic()
    report = broker._drain(agent, set())
    late.join()
    assert report.notified == () and len(typer.lines) == 1
    assert 0.2 < time.monotonic() - started < 4.0
    broker.close()


def test_a_line_nobody_witnessed_is_typed_again_after_the_wait(tmp_path: Path) -> None:
    broker, typer, director, agent, _ = _world(tmp_path, wait_s=0.3, die=True)
    message_id = _send_and_die(broker, director, agent)
    report = broker._drain(agent, set())
    assert report.notified == (message_id,)
    assert typer.lines == [managed_line(message_id, "ws")] * 2  # it never arrived: again
    assert _notified(broker, message_id) is not None
    assert broker.notifier is not None and broker.notifier.locks.attempt_of(
        PaneTarget("fake", "s", "@1", "%2")) is None  # finished attempts leave no record
    broker.close()


def test_the_witness_stamps_only_what_waits_for_that_member(tmp_path: Path) -> None:
    broker, typer, director, agent, path = _world(tmp_path, wait_s=0.3, die=True)
    message_id = _send_and_die(broker, director, agent)
    now = time.time_ns() // 1_000_000
    assert not stamp_witnessed(path, "switchboard-frame:F2", message_id, now)  # not its
    assert not stamp_witnessed(path, MANAGED, message_id + 1, now)  # no such message
    assert not stamp_witnessed(tmp_path / "missing.sqlite3", MANAGED, message_id, now)
    foreign = tmp_path / "foreign.sqlite3"
    foreign.write_bytes(b"not a database")
    assert not stamp_witnessed(foreign, MANAGED, message_id, now)
    assert _notified(broker, message_id) is None
    broker.ack(agent, message_id)
    assert not stamp_witnessed(path, MANAGED, message_id, now)  # ACKed: nothing to stamp
    assert _notified(broker, message_id) is None
    broker.close()


def test_the_witness_speaks_the_brokers_format() -> None:
    assert (_APPLICATION_ID, _LEDGER_VERSION) == (broker_schema.APPLICATION_ID,
                                                  broker_schema.LEDGER_VERSION)
    from core.broker.reading import iso_utc

    for ms in (0, 1_733_400_000_123, 1_799_999_999_999):
        assert iso_utc_ms(ms) == iso_utc(ms)


@pytest.mark.parametrize("name", ["ws", "Fix the bug", "a: call message_poll() to read it",
                                  "x) then message_ack(9", "ü'\x1b[31m;"])
def test_a_notice_line_names_its_message(name: str) -> None:
    assert notice_message_id(managed_line(417, name)) == 417
    assert notice_message_id("  " + managed_line(3, name) + "\n") == 3


@pytest.mark.parametrize("prompt", [
    "", "hello", "[switchboard] message 4 from x: call message_poll() to read it, then "
    "message_ack(5)", "[switchboard] message x from y: call message_poll() to read it, "
    "then message_ack(x)", "please: [switchboard] message 4 from x: call message_poll() "
    "to read it, then message_ack(4)", "[switchboard] message ４ from x: call "
    "message_poll() to read it, then message_ack(４)",
    "[switchboard] message 4 from x: call message_poll() to read it, then message_ack(4) "
    "and more"])
def test_other_prompts_name_no_message(prompt: str) -> None:
    assert notice_message_id(prompt) is None


def test_an_attempt_refused_before_typing_leaves_nothing_to_wait_for(tmp_path: Path) -> None:
    """A guard that refused (the pane fenced or gone meanwhile) typed nothing: the next
    typist types at once instead of waiting for a witness that cannot come."""
    from core.broker.delivery import NothingTyped

    broker, typer, director, agent, _ = _world(tmp_path, wait_s=30.0, die=False)
    refused = [True]
    typed = typer.type_line

    def refusing(target: PaneTarget, line: str, server: PaneServer | None = None) -> None:
        if refused.pop() if refused else False:
            raise NothingTyped("pane %2 was not typed into: it is parked with input disabled")
        typed(target, line, server)

    typer.type_line = refusing  # type: ignore[method-assign]
    sent = broker.send(1, director, agent, "please look")
    assert sent.delivery is not None and sent.delivery.not_notified is not None
    started = time.monotonic()
    report = broker._drain(agent, set())
    assert report.notified == (sent.message.message_id,) and len(typer.lines) == 1
    assert time.monotonic() - started < 5.0  # not the 30 s witness wait
    broker.close()


class _ScreenTyper(_Typer):
    """A typist that can look at the pane: what was typed is on screen, unsent."""

    def __init__(self, on_screen: bool) -> None:
        super().__init__()
        self.on_screen = on_screen
        self.enters = 0

    def finish_line(self, target: PaneTarget, line: str,
                    server: PaneServer | None = None) -> bool:
        if not (self.on_screen and line in self.lines):
            return False
        self.enters += 1
        return True


@pytest.mark.parametrize("on_screen", [True, False])
def test_an_unwitnessed_line_still_on_screen_gets_its_enter_not_a_second_copy(
        tmp_path: Path, on_screen: bool) -> None:
    """No witness after the wait, but the earlier typist's line is on the agent's screen
    (its Enter was not taken): the next typist presses Enter once and types nothing. Not on
    screen: it never arrived, and it is typed again."""
    broker, _, director, agent, _ = _world(tmp_path, wait_s=0.3, die=True)
    assert broker.notifier is not None
    typer = _ScreenTyper(on_screen)
    broker.notifier.typer = typer
    message_id = _send_and_die(broker, director, agent)
    report = broker._drain(agent, set())
    assert report.notified == (message_id,)
    line = managed_line(message_id, "ws")
    assert (typer.lines, typer.enters) == (([line], 1) if on_screen else ([line] * 2, 0))
    assert _notified(broker, message_id) is not None
    assert broker.notifier.locks.attempt_of(PaneTarget("fake", "s", "@1", "%2")) is None
    broker.close()


@pytest.mark.tmux
def test_tmux_typer_finishes_only_a_line_that_is_on_screen(tmux_socket: Path) -> None:
    """On a real tmux server: a line typed without its Enter (echoed, unsent) gets one
    Enter; a line that is not on screen gets nothing."""
    import subprocess

    from core.broker.delivery import TmuxTyper
    from tests.waiting import retry_until

    tmux = ["tmux", "-S", str(tmux_socket)]
    subprocess.run([*tmux, "new-session", "-d", "-x", "120", "-y", "20", "sh", "-c",
                    "read x; echo \"got [$x]\"; sleep 60"], check=True)
    pane = subprocess.run([*tmux, "display-message", "-p", "#{pane_id}"], check=True,
                          capture_output=True, text=True).stdout.strip()
    target = PaneTarget("tmux", "s", "@0", pane)

    def shown() -> str:
        return subprocess.run([*tmux, "capture-pane", "-p", "-t", pane], check=True,
                              capture_output=True, text=True).stdout

    typer = TmuxTyper(tmux_socket)
    line = managed_line(7, "ws")
    assert not typer.finish_line(target, line)  # not typed: nothing to finish
    subprocess.run([*tmux, "send-keys", "-t", pane, "-l", line], check=True)
    assert retry_until(lambda: line in shown(), 5), shown()
    assert "got [" not in shown()
    assert typer.finish_line(target, line)
    assert retry_until(lambda: f"got [{line}]" in shown(), 5), shown()
