"""At-least-once pane notification: type one line per pending message into the recipient's pane.

Guarantees (spec: broker data model, messages):
- Nothing is written before input; ``notified_at`` is stamped only after the
  whole line and its Enter were submitted, while the message is still pending
  and the pane lock is held. A message ACKed before the stamp counts as
  notified (the stamp then touches no row, which is correct).
- A failed attempt leaves ``notified_at`` null and ends the drain with a
  not-notified diagnostic; the next send or wait retries, so a line may appear
  twice but is never lost. Poll and ACK stay authoritative.
- One drain attempts each message at most once (the caller's ``attempted``
  set spans one send or wait invocation).
- Lines from concurrent processes never interleave in a pane: each line is
  typed under an OS file lock (``fcntl.flock``) whose file name is derived
  from backend/session/pane, so every placement naming the same pane shares
  one lock, across processes.
- The root Director is never typed to; neither are self-sends (they are
  stamped on insert by the caller).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from core.broker.kick import MANAGED_PREFIX
from core.model.notice_line import managed_line as managed_line  # typed here, read by hooks
from core.model.text import typed_name
from storage.broker_schema import (
    MemberStatus,
    MessageState,
    decode_member_status,
    decode_message_state,
)
from storage.broker_store import BrokerStore

if TYPE_CHECKING:
    from core.tmux.commands import Check, TmuxCommand
    from core.tmux.runner import TmuxRunner

LOCK_TIMEOUT_S = 10.0
_MAX_PLACEMENT_RACES = 5
ENTER_MARGIN_S = 0.1
"""After the server's delayed Enter is due: a margin for its timer on a loaded machine."""
WITNESS_WAIT_S = 5.0
"""How long after an interrupted attempt its agent's prompt hook may still stamp it.

The typist's tmux client can outlive the typist by a few hundred ms, and the agent's
hook then needs a moment of its own; a loaded machine stretches both."""


@dataclass(frozen=True)
class PaneTarget:
    """A concrete pane; the lock identity is backend/session/pane (window is display only)."""

    backend: str
    session: str
    window: str
    pane: str

    @property
    def lock_name(self) -> str:
        key = "\0".join((self.backend, self.session, self.pane)).encode()
        return f"pane-{hashlib.sha256(key).hexdigest()[:32]}.lock"


@dataclass(frozen=True)
class PaneServer:
    """The tmux server the registry recorded a managed agent's pane on.

    A pane id means something only on the server process that issued it: the
    same ``%3`` exists on the person's own tmux server. A line for a
    Switchboard-launched agent is typed only on this socket, and only while its
    pid and start time still agree (checked inside the command that types).
    """

    socket_path: str
    server_pid: int
    server_start_time: int


class DeliveryFailed(Exception):
    """One typing attempt did not complete; the reason goes into the diagnostic."""


class PaneLockTimeout(DeliveryFailed):
    pass


class NothingTyped(DeliveryFailed):
    """The attempt was refused before any key reached the pane (a guard, the server's
    identity, a missing pane): nothing for the agent's witness to confirm."""


@dataclass(frozen=True)
class Attempt:
    """A line a typist began to type into a pane: which message, since when (epoch ms)."""

    message_id: int
    started_ms: int


class PaneLocks:
    """Per-pane input locks as ``flock``ed files in one directory shared by all processes."""

    def __init__(self, lock_dir: Path, *, timeout: float = LOCK_TIMEOUT_S) -> None:
        self.lock_dir = Path(lock_dir)
        self.timeout = timeout

    @classmethod
    def beside(cls, broker_path: Path) -> PaneLocks:
        """Locks live next to the broker file, so every user of that broker shares them."""
        broker_path = Path(broker_path)
        return cls(broker_path.with_name(broker_path.name + ".locks"))

    def path_for(self, target: PaneTarget) -> Path:
        return self.lock_dir / target.lock_name

    # An attempt record is the lock file's content, read and written only under the
    # lock: "<message id> <epoch ms>" while a line is on its way, empty otherwise. A
    # typist that dies between typing and stamping leaves it behind for the next one.

    def attempt_of(self, target: PaneTarget) -> Attempt | None:
        """The attempt a typist of this pane began and never finished, if any."""
        try:
            words = self.path_for(target).read_text(encoding="ascii").split()
        except (OSError, UnicodeDecodeError):
            return None
        if len(words) != 2 or not all(w.isdigit() for w in words):
            return None
        return Attempt(int(words[0]), int(words[1]))

    def begin_attempt(self, target: PaneTarget, message_id: int) -> None:
        self._write_record(target, f"{message_id} {time.time_ns() // 1_000_000}\n")

    def end_attempt(self, target: PaneTarget) -> None:
        self._write_record(target, "")

    def _write_record(self, target: PaneTarget, text: str) -> None:
        fd = os.open(self.path_for(target), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, text.encode("ascii"))
        finally:
            os.close(fd)

    @contextmanager
    def hold(self, *targets: PaneTarget) -> Iterator[None]:
        """Hold every distinct target's lock, taken in name order (no lock-order deadlock)."""
        names = sorted({t.lock_name: t for t in targets}.items())
        with ExitStack() as stack:
            for _, target in names:
                stack.enter_context(self._hold_one(target))
            yield

    @contextmanager
    def _hold_one(self, target: PaneTarget) -> Iterator[None]:
        self.lock_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(self.path_for(target), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            deadline = time.monotonic() + self.timeout
            pause = 0.001
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise PaneLockTimeout(
                            f"pane {target.pane} input lock stayed busy for "
                            f"{self.timeout:g}s") from None
                    time.sleep(pause)
                    pause = min(pause * 2, 0.02)
            yield
        finally:
            os.close(fd)  # closing the descriptor releases the flock


class Typer(Protocol):
    """Types one complete line (text then Enter) into a pane, or raises DeliveryFailed.

    ``server``: the registry's record of the pane's server (managed agents); the
    line is then typed only inside that exact server process."""

    def type_line(self, target: PaneTarget, line: str,
                  server: PaneServer | None = None) -> None: ...


class TmuxTyper:
    """tmux against an explicit socket path; one counted tmux process per line.

    The tmux modules load with the first line typed: every navigator opens the
    broker read-only for its Inbox and never types (they were ~1 MB of each).
    """

    def __init__(self, socket_path: str | os.PathLike[str] | None) -> None:
        self.socket_path = None if socket_path is None else str(socket_path)
        self._server: TmuxRunner | None = None

    def type_line(self, target: PaneTarget, line: str,
                  server: PaneServer | None = None) -> None:
        from core.tmux.commands import guarded, outcome
        from core.tmux.control_input import ENTER_AFTER_PASTE_S
        from core.tmux.errors import PaneNotFound, TmuxNotInstalled
        from core.tmux.identity import is_identity_failure, same_socket
        from core.tmux.runner import TmuxRunner

        if target.backend != "tmux":
            raise NothingTyped(f"backend {target.backend!r} is not supported")
        if self.socket_path is None:
            raise NothingTyped(
                "no tmux socket configured: run `switchboard init` (the config names the "
                "views' server) or pass --tmux-socket")
        if server is not None and not same_socket(self.socket_path, server.socket_path):
            raise NothingTyped(
                f"the agent's pane {target.pane} is on the tmux server {server.socket_path} "
                f"(as the registry recorded it), not on {self.socket_path}; nothing was typed")
        if self._server is None:
            self._server = TmuxRunner(self.socket_path)
        try:
            # One tmux command: the text and its Enter are typed together, and only
            # into a live pane that takes input. tmux drops keys sent to a fenced
            # (input-disabled, parked) pane without an error, so a plain send-keys
            # would stamp a message its agent never saw. The Enter follows a short
            # pause: keys that reach the agent in one read are a paste to Claude
            # Code, which does not submit on an Enter inside it (the line would sit
            # unsent in its input box). The server itself sends that Enter
            # (`run-shell -b -C -d`): a queue that waited for it in this client was
            # dropped with the client when the typist died in the pause, leaving the
            # text unsent in the input box for the next line to be appended to.
            # Its Enter also goes to a pane fenced in the pause (a focus that parked
            # it, a control turn): tmux drops keys sent to a fenced pane, so the fence
            # is lifted for that one key and put back in the same server command.
            command = guarded(_takes_keys(target.pane), [
                ("send-keys", "-t", target.pane, "-l", line),
                ("run-shell", "-b", "-C", "-d", str(ENTER_AFTER_PASTE_S),
                 _enter_even_if_fenced(target.pane))])
        except ValueError as exc:  # not an exact %N pane id
            raise NothingTyped(f"cannot type into {target.pane!r}: {exc}") from None
        try:  # same server process, or nothing runs
            result = self._server.run(self._pinned(server, command), check=False)
        except TmuxNotInstalled as exc:
            raise NothingTyped(str(exc)) from None
        if server is not None and is_identity_failure(result.stderr):
            raise NothingTyped(
                f"the tmux server on {server.socket_path} is no longer the one the agent's "
                "pane was recorded on (it restarted); nothing was typed")
        if result.returncode != 0 or result.stderr:
            detail = "; ".join(result.stderr) or f"exit status {result.returncode}"
            raise DeliveryFailed(f"tmux send-keys to {target.pane} failed: {detail}")
        try:
            verdict = outcome(result.stdout)
        except PaneNotFound:
            raise NothingTyped(f"pane {target.pane} no longer exists") from None
        if verdict != "ok":
            why = {"dead": "its program exited",
                   "fenced": "it is parked with input disabled"}.get(verdict or "", verdict)
            raise NothingTyped(f"pane {target.pane} was not typed into: {why}; "
                                 "the message stays pending")
        # The line is complete once the server sent its Enter; the pane lock is held
        # until then, so no other line can land between the text and its Enter.
        time.sleep(ENTER_AFTER_PASTE_S + ENTER_MARGIN_S)

    def finish_line(self, target: PaneTarget, line: str,
                    server: PaneServer | None = None) -> bool:
        """An earlier typist's line still on the agent's screen with no witness: press
        Enter once instead of typing the line again; False (nothing sent) when the line
        is not on screen or the pane takes no keys.

        Seen with Claude Code 2.1.332 on a loaded machine: the Enter that followed the
        line came in the same read and was kept as an invisible character of the input
        (the line waited unsent; its retype joined it in one prompt). A line on screen
        reached the agent: typing it again can only duplicate it."""
        from core.tmux.commands import guarded, outcome
        from core.tmux.errors import PaneNotFound, TmuxNotInstalled
        from core.tmux.runner import TmuxRunner

        if target.backend != "tmux" or self.socket_path is None:
            return False
        if self._server is None:
            self._server = TmuxRunner(self.socket_path)
        try:
            checks = _takes_keys(target.pane)
            looked = self._server.run(self._pinned(server, guarded(
                checks, [("capture-pane", "-p", "-J", "-t", target.pane)])), check=False)
            if looked.returncode != 0 or outcome(looked.stdout) != "ok":
                return False
            if " ".join(line.split()) not in " ".join(" ".join(looked.stdout).split()):
                return False
            pressed = self._server.run(self._pinned(server, guarded(
                checks, [("send-keys", "-t", target.pane, "Enter")])), check=False)
        except (ValueError, PaneNotFound, TmuxNotInstalled):
            return False
        return pressed.returncode == 0 and outcome(pressed.stdout) == "ok"

    def _pinned(self, server: PaneServer | None, command: TmuxCommand) -> list[TmuxCommand]:
        """``command``, run only inside the recorded server process when one is named."""
        from core.tmux.identity import ServerIdentity, identity_guard

        if server is None:
            return [command]
        return [identity_guard(ServerIdentity(server.socket_path, server.server_pid,
                                              server.server_start_time)), command]


def _takes_keys(pane: str) -> list[Check]:
    """The guard of every key Switchboard types into an agent's pane: alive, and taking
    input (tmux drops keys sent to a fenced pane without an error)."""
    from core.tmux.commands import Check, equals

    return [Check(pane, equals("#{pane_dead}", "0"), "dead"),
            Check(pane, equals("#{pane_input_off}", "0"), "fenced")]


def _enter_even_if_fenced(pane: str) -> str:
    """The delayed Enter as one tmux command line (``pane`` is an exact ``%N`` id).

    ``##`` survives ``run-shell``'s own format expansion when it is scheduled, so
    ``if-shell`` reads the fence when the Enter is due, not when the line was typed."""
    enter = f"send-keys -t {pane} Enter"
    return (f'if-shell -F -t {pane} "##{{pane_input_off}}" {{ select-pane -e -t {pane} ; '
            f"{enter} ; select-pane -d -t {pane} }} {{ {enter} }}")


def notification_line(message_id: int, sender_name: str, from_member_id: int,
                      to_member_id: int) -> str:
    """The one line typed per message: it carries the id and how to read it.

    Printable ASCII only, without ``'`` (no control characters can reach the
    agent's input, and the line fits one quoted token of a guarded tmux command);
    starts with ``[`` and ends with a digit, so tmux never reads it as an
    option or a ``;`` command separator.
    """
    name = typed_name(sender_name)
    return (f"[switchboard] message {message_id} from {name} (member {from_member_id}):"
            f" run `switchboard message poll --member {to_member_id}`, then ack {message_id}")


class DeliveryGate(Protocol):
    """Decides, for a Switchboard-launched member, whether its pane may be typed into now.

    ``blocked`` returns why not (the message stays pending, unstamped, and is
    typed when the reason clears: the agent's Stop, its presentation, its
    unfencing), or None when the pane is shown, takes input and the agent is
    ready with no prompt open. Members the gate does not manage keep the
    format's plain rules.
    """

    def blocked(self, frame_id: str, target: PaneTarget) -> str | None: ...

    def server_for(self, frame_id: str) -> PaneServer | None:
        """The server the frame's live pane was recorded on (None: not recorded)."""
        ...


def managed_frame(description: str | None) -> str | None:
    """The frame id a managed member stands for, or None for a hand-registered member."""
    if description and description.startswith(MANAGED_PREFIX):
        return description[len(MANAGED_PREFIX):] or None
    return None


@dataclass(frozen=True)
class NotNotified:
    """Why a pending message was not typed this time (it stays pending and unstamped)."""

    message_id: int
    to_member_id: int
    pane: str | None
    reason: str

    def diagnostic(self) -> str:
        where = f" into pane {self.pane}" if self.pane else ""
        return (f"message {self.message_id} to member {self.to_member_id} is stored but was "
                f"not typed{where}: {_without_tail(self.reason)}; it stays pending, and the "
                f"next send to that member or a wait retries it")


def _without_tail(reason: str) -> str:
    """Reasons may already say the message stays pending; say it once."""
    for tail in ("; the message stays pending", "; it stays pending"):
        if reason.endswith(tail):
            return reason[: -len(tail)]
    return reason


@dataclass(frozen=True)
class DrainReport:
    to_member_id: int
    notified: tuple[int, ...] = ()
    skipped: str | None = None  # why the recipient gets no pane notifications at all
    not_notified: NotNotified | None = None
    deferred: str | None = None  # managed recipient not ready/shown: typed later, not failed


def _eligible_target(row: sqlite3.Row | None, gate: DeliveryGate | None = None
                     ) -> tuple[PaneTarget | None, str | None]:
    """A concrete pane for an active ordinary member of a live fleet, or the reason not."""
    if row is None:
        return None, "recipient no longer exists"
    status = decode_member_status(row["status"])
    if status is not MemberStatus.ACTIVE:
        return None, "recipient is deregistered"
    if row["fleet_deleted_at"] is not None:
        return None, "recipient's fleet is deleted"
    managed = gate is not None and managed_frame(row["description"]) is not None
    if row["director_member_id"] == row["member_id"] and not managed:
        return None, "the root Director is notified through wait/poll, never its pane"
    if row["backend"] is None:
        return None, "recipient has no placement"
    if row["mux_pane_id"] is None:
        return None, "recipient's placement has no pane yet"
    return PaneTarget(row["backend"], row["mux_session"], row["mux_window_id"],
                      row["mux_pane_id"]), None


def _target_row(store: BrokerStore, member_id: int) -> sqlite3.Row | None:
    return store.conn.execute(
        "SELECT m.member_id, m.status, m.description, f.director_member_id,"
        " f.deleted_at AS fleet_deleted_at,"
        " p.backend, p.mux_session, p.mux_window_id, p.mux_pane_id"
        " FROM members m JOIN fleets f ON f.fleet_id = m.fleet_id"
        " LEFT JOIN member_placements p ON p.member_id = m.member_id"
        " WHERE m.member_id = ?", (member_id,)).fetchone()


@dataclass
class Notifier:
    """Drains one recipient's pending notifications; one instance per invocation is fine."""

    typer: Typer
    locks: PaneLocks
    # Test seam: runs after a line is submitted and before the stamp.
    after_submit: Callable[[int], None] | None = field(default=None, repr=False)
    # Switchboard-launched members: typed only when shown and ready (one line per ready turn).
    gate: DeliveryGate | None = None
    # How long an interrupted attempt waits for its agent's prompt hook (tests shorten it).
    witness_wait_s: float = WITNESS_WAIT_S

    def drain(self, store: BrokerStore, to_member_id: int, *, now: Callable[[], str],
              attempted: set[int]) -> DrainReport:
        """Type each eligible pending message oldest first; stop at the first failure."""
        notified: list[int] = []
        races = 0
        while True:
            target, why_not = _eligible_target(_target_row(store, to_member_id), self.gate)
            if target is None:
                return DrainReport(to_member_id, tuple(notified), skipped=why_not)
            candidate = store.next_notification_candidate(to_member_id, attempted)
            if candidate is None:
                return DrainReport(to_member_id, tuple(notified))
            message_id = candidate["message_id"]
            try:
                with self.locks.hold(target):
                    # Revalidate eligibility, placement and the message under the lock.
                    locked_row = _target_row(store, to_member_id)
                    locked_target, why_not = _eligible_target(locked_row, self.gate)
                    if locked_target is None or locked_row is None:  # no row has no target
                        return DrainReport(to_member_id, tuple(notified), skipped=why_not)
                    if locked_target.lock_name != target.lock_name:
                        races += 1
                        if races > _MAX_PLACEMENT_RACES:
                            return DrainReport(to_member_id, tuple(notified), not_notified=(
                                NotNotified(message_id, to_member_id, locked_target.pane,
                                            "the placement kept moving")))
                        continue  # moved meanwhile: take the new pane's lock instead
                    target = locked_target  # same pane lock (the window may have changed)
                    attempted.add(message_id)
                    row = store.get_message(message_id)
                    if (row is None
                            or decode_message_state(row["status_state"])
                            is not MessageState.INPUT_REQUIRED
                            or row["notified_at"] is not None):
                        continue  # another drain stamped it, or it was ACKed: done
                    frame_id = managed_frame(locked_row["description"]) if self.gate else None
                    server: PaneServer | None = None
                    if frame_id is not None and self.gate:
                        # A ready agent that gets a line starts working: one line per
                        # ready period; its next Stop (or presentation) types the next.
                        if notified:
                            attempted.discard(message_id)
                            return DrainReport(to_member_id, tuple(notified))
                        blocked = self.gate.blocked(frame_id, target)
                        if blocked is not None:
                            attempted.discard(message_id)
                            return DrainReport(to_member_id, tuple(notified), deferred=blocked)
                        server = self.gate.server_for(frame_id)
                        if server is None:  # a pane id alone could be any server's
                            attempted.discard(message_id)
                            return DrainReport(to_member_id, tuple(notified), deferred=(
                                "the registry records no tmux server for its pane"))
                    earlier = self.locks.attempt_of(target) if frame_id is not None else None
                    interrupted = earlier is not None and earlier.message_id == message_id
                    if frame_id is not None and self._witnessed(store, target, message_id):
                        continue  # an earlier typist's line reached the agent: not again
                    sender = store.get_member(row["from_member_id"])
                    sender_name = sender["name"] if sender else "?"
                    line = (managed_line(message_id, sender_name) if frame_id is not None
                            else notification_line(message_id, sender_name,
                                                   row["from_member_id"], to_member_id))
                    if interrupted and self._finished(target, line, server):
                        # The earlier typist's line is on screen, unsent: its Enter, not a
                        # second copy of it.
                        self._stamp(store, message_id, now)
                        self.locks.end_attempt(target)
                        notified.append(message_id)
                        continue
                    self.locks.begin_attempt(target, message_id)
                    try:
                        self.typer.type_line(target, line, server)
                    except NothingTyped:
                        self.locks.end_attempt(target)  # no witness to wait for next time
                        raise
                    if self.after_submit is not None:
                        self.after_submit(message_id)
                    self._stamp(store, message_id, now)
                    self.locks.end_attempt(target)
                    notified.append(message_id)
            except DeliveryFailed as exc:
                return DrainReport(to_member_id, tuple(notified), not_notified=NotNotified(
                    message_id, to_member_id, target.pane, str(exc)))

    @staticmethod
    def _stamp(store: BrokerStore, message_id: int, now: Callable[[], str]) -> None:
        try:
            store.stamp_notified(message_id, now())  # 0 rows: ACKed first, fine
        except sqlite3.OperationalError as exc:  # typed, but the file is locked
            raise DeliveryFailed(f"typed, but notified_at not stamped ({exc})") from exc

    def _finished(self, target: PaneTarget, line: str, server: PaneServer | None) -> bool:
        """Whether the typist could finish an earlier typist's unsent line with its Enter
        (``TmuxTyper.finish_line``; a typist without that step types the line again)."""
        finish = getattr(self.typer, "finish_line", None)
        return bool(finish is not None and finish(target, line, server))

    def _witnessed(self, store: BrokerStore, target: PaneTarget, message_id: int) -> bool:
        """Whether an interrupted attempt at this very message reached its agent.

        A typist that died after typing and before stamping (killed, or the file was
        locked) left its attempt record. The agent's own prompt hook stamps a line it
        received (``core.broker.kick.witness_notice``): within ``witness_wait_s`` of
        the attempt, wait for that stamp, or an ACK, instead of typing the line again.
        No stamp by then: the line never reached the agent, and it is typed now.
        (Hand-registered members have no such hook: they keep the plain at-least-once.)
        """
        attempt = self.locks.attempt_of(target)
        if attempt is None or attempt.message_id != message_id:
            return False
        # From the attempt's start, and never longer than the wait itself (a clock that
        # stepped back must not make this typist wait for hours).
        deadline = min(attempt.started_ms / 1000, time.time()) + self.witness_wait_s
        while True:
            row = store.get_message(message_id)
            if (row is None or row["notified_at"] is not None
                    or decode_message_state(row["status_state"])
                    is not MessageState.INPUT_REQUIRED):
                self.locks.end_attempt(target)
                return True
            if time.time() >= deadline:
                return False
            time.sleep(0.05)
