"""The local follower of one remote host: one long-lived ssh, every document validated.

``python -m core.remote.follower NAME`` (or ``switchboard remote follow NAME``)
runs ``ssh -M TARGET switchboard state host --follow --json``
(``core.remote.channel``) and stores each HostState document the remote sends in
``host_state_cache``, exactly as a manual refresh does: it is decoded with every
ceiling and reference rule (``core.state.envelope``), must name the configured
host id and never the local one, and is then projection evidence only: no engine
operation reads it. A refused document changes nothing shown; it is noted as the
host's bounded error and the stream goes on (the next good document clears it).

Liveness: the remote sends an empty line every couple of seconds while nothing
changes. Only a heartbeat or a complete document that validates and is stored
counts as life: bytes of a document still arriving, or a refused one, do not (a
stream stuck mid-document, or dripping a byte a second, would otherwise stay
online for ever). ``OFFLINE_AFTER_S`` without life (or ssh ending) marks the host
offline (the last good state stays, badged offline) and the follower reconnects
with backoff (``BACKOFF_S``), for as long as anyone wants the host followed.

Rate: what a host may send is metered (``_Allowance``): bytes read from its ssh
(documents, heartbeats and its stderr alike) and documents decoded per second,
each with a burst an honest host never exceeds (it builds at most four documents
a second, ``core.remote.publish.MIN_GAP_S``). Beyond that the follower simply
stops reading the pipe until the allowance refills, so a flood fills the pipe and
blocks the sender instead of holding this process on a core.

Who owns it: exactly one follower per host and home, held by an exclusive
``flock`` on its lock file (a second one exits at once), started by the home's
server (``core.server.housekeeping``: ``ensure_followers`` on every pass, so a
killed follower is back within a pass). The server holds a shared lock on the
interest file for its lifetime (``interest``); the follower exits once no process
has held it for ``IDLE_EXIT_S`` (the server ended: the home's tmux server is gone,
or it was stopped), marking its host offline as "not followed". Its ssh is killed
with it (and, should the follower itself be killed, by the kernel: the ssh child
gets SIGTERM when its parent dies), and the remote's follow process exits on the
broken pipe at its next heartbeat. No orphans on either side.

Attention: when a stored document changes the remote's live agents, the tmux
status segment is republished with every host's counts, and a remote agent that
starts to need input (or finishes its turn) nudges the person's tmux clients
like a local one does, with the host's name in the message.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import select
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from core.config.config import RemoteConfig
from core.config.home import Home
from core.model.errors import EnvelopeError, SwitchboardError
from core.model.text import shown
from core.remote.channel import control_path, follow_argv
from core.remote.interest import anyone_interested, lock_path, open_lock
from core.state.envelope import decode_checked, encode_canonical
from core.state.remotes import prune_unconfigured
from core.state.state_types import HostState
from storage.connection import write_transaction
from storage.operations import remote_follow as follow_ops
from storage.operations import remotes as remotes_ops

if TYPE_CHECKING:
    from core.context.reader import RegistryReader

#: Seconds without a line (document or heartbeat) after which the host is offline.
OFFLINE_AFTER_S = 6.0
#: Seconds a new connection may take to deliver its first document.
CONNECT_TIMEOUT_S = 10.0
#: Waits between reconnects; the last repeats. Reset by a connection that delivered.
BACKOFF_S = (0.5, 1.0, 2.0, 4.0, 8.0)
#: Seconds without any interested process after which the follower exits.
IDLE_EXIT_S = 5.0
#: How often the follower checks for interest while the stream is quiet.
INTEREST_CHECK_S = 2.0
#: The longest line read: a document larger than the envelope ceiling is refused.
MAX_LINE_BYTES = 8 * 1024 * 1024 + 1
#: Bytes a host may send per second, sustained (its documents, heartbeats and ssh's
#: stderr together); up to one largest document at once after a quiet spell.
BYTES_PER_S = 1024 * 1024
#: Documents decoded per second, sustained, and the most at once (an honest host
#: sends at most four a second: ``core.remote.publish.MIN_GAP_S``).
DOCUMENTS_PER_S = 5.0
DOCUMENT_BURST = 10.0
#: The most read from a pipe in one call, and the least once the allowance is short
#: (so a host held at its rate costs a few reads a second, not one per byte).
READ_CHUNK = 1 << 20
MIN_READ = 64 * 1024
NOT_FOLLOWED = "not followed: no switchboard server runs for this home"


# --------------------------------------------------------------------------- rate


@dataclass
class _Bucket:
    """A token bucket: ``rate`` tokens a second, at most ``capacity`` saved up."""

    rate: float
    capacity: float
    tokens: float
    at: float

    @classmethod
    def full(cls, rate: float, capacity: float, now: float) -> _Bucket:
        return cls(rate, capacity, capacity, now)

    def available(self, now: float) -> float:
        self.tokens = min(self.capacity, self.tokens + (now - self.at) * self.rate)
        self.at = now
        return self.tokens

    def take(self, amount: float, now: float) -> None:
        self.available(now)
        self.tokens -= amount

    def wait_for(self, amount: float, now: float) -> float:
        """Seconds until ``amount`` tokens are there (0 when they are)."""
        return max(0.0, (amount - self.available(now)) / self.rate)


@dataclass
class _Allowance:
    """What one connection's host may still send: bytes and documents (see the module
    docstring); the follower reads and decodes only within it."""

    read: _Bucket
    documents: _Bucket

    @classmethod
    def start(cls, now: float) -> _Allowance:
        return cls(_Bucket.full(BYTES_PER_S, MAX_LINE_BYTES, now),
                   _Bucket.full(DOCUMENTS_PER_S, DOCUMENT_BURST, now))

    def readable(self, now: float) -> int:
        """How many bytes may be read now (0: wait for ``MIN_READ`` to refill)."""
        tokens = int(self.read.available(now))
        return min(READ_CHUNK, tokens) if tokens >= MIN_READ else 0


# --------------------------------------------------------------------------- the follower


def _die_with_parent() -> None:
    """ssh gets SIGTERM when the follower dies, however it dies (``core.platform``;
    on macOS ssh ends with its stdin, a pipe from the follower)."""
    from core.platform.lifetime import die_with_parent

    die_with_parent(signal.SIGTERM)


@dataclass
class _Frames:
    """Per open frame with a live agent: (activity, project name, title)."""

    by_id: dict[str, tuple[str, str, str]] = field(default_factory=dict)

    @classmethod
    def of(cls, state: HostState | None) -> _Frames:
        if state is None:
            return cls()
        sessions = {s.session_key: s for s in state.sessions}
        projects = {p.project_id: p.name for p in state.projects}
        out = {}
        for frame in state.frames:
            session = sessions.get(frame.current_session_key or "")
            if frame.lifecycle_state != "open" or session is None \
                    or session.runtime_presence != "live":
                continue
            out[frame.frame_id] = (session.activity.value,
                                   projects.get(frame.project_id, "?"), frame.title)
        return cls(out)


class Follower:
    """Follows one remote for as long as anyone is interested (or forever: ``keep``)."""

    def __init__(self, home: Home, remote_name: str, *, keep: bool = False) -> None:
        self.home = home
        self.remote_name = remote_name
        self.keep = keep
        self.proc: subprocess.Popen[bytes] | None = None
        self.last_segment: str | None = None
        self.frames = _Frames()
        self.seeded = False

    # ---- registry

    def _open(self) -> tuple[RegistryReader, RemoteConfig | None]:
        """The registry, and the remote (None once it is no longer configured)."""
        from core.context.session import open_reader

        reader = open_reader(self.home)
        remote = next((r for r in reader.config.remotes if r.name == self.remote_name), None)
        if remote is None:
            return reader, None
        return reader, remote

    def run(self) -> int:
        lock_fd = open_lock(lock_path(self.home, self._remote_for_lock()))
        try:
            fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(lock_fd)
            return 0  # another follower has this host
        signal.signal(signal.SIGTERM, _exit_on_signal)
        attempt = 0
        reader: RegistryReader | None = None
        try:
            while True:
                reader, remote = self._open()
                if remote is None:
                    prune_unconfigured(reader.conn, reader.config.remotes)
                    return 0
                if not self.seeded:
                    self.frames = _Frames.of(self._cached_state(reader))
                    self.seeded = True
                delivered = self._connect(reader, remote)
                if not self._wanted():
                    self._mark(reader, remote, NOT_FOLLOWED)
                    return 0
                reader.conn.close()
                reader = None
                attempt = 0 if delivered else attempt + 1
                if not self._sleep(BACKOFF_S[min(attempt, len(BACKOFF_S) - 1)]):
                    reader, remote = self._open()
                    if remote is not None:
                        self._mark(reader, remote, NOT_FOLLOWED)
                    return 0
        finally:
            self._kill()
            if reader is not None:
                reader.conn.close()
            os.close(lock_fd)

    def _remote_for_lock(self) -> RemoteConfig:
        reader, remote = self._open()
        reader.conn.close()
        if remote is None:
            raise SwitchboardError(f"unknown remote {self.remote_name!r}; add it under "
                                   "[[remotes]]", code="remote_unknown")
        return remote

    def _wanted(self) -> bool:
        if self.keep:
            return True
        deadline = time.monotonic() + IDLE_EXIT_S
        while not anyone_interested(self.home):
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.25)
        return True

    def _sleep(self, seconds: float) -> bool:
        """Sleep between attempts; False when nobody wants the host followed any more."""
        end = time.monotonic() + seconds
        while (left := end - time.monotonic()) > 0:
            time.sleep(min(left, INTEREST_CHECK_S))
            if not self._wanted():
                return False
        return True

    def _cached_state(self, reader: RegistryReader) -> HostState | None:
        row = reader.conn.execute("SELECT state_json FROM host_state_cache WHERE"
                                  " remote_name = ?", (self.remote_name,)).fetchone()
        if row is None:
            return None
        try:
            return decode_checked(row[0].encode("utf-8"), schema=HostState)
        except EnvelopeError:
            return None

    # ---- one connection

    def _connect(self, reader: RegistryReader, remote: RemoteConfig) -> bool:
        """One ssh session until it shows no life, ends, or nobody is interested; True
        when it delivered at least one good document.

        Life is a heartbeat or a stored document (never a partial or refused one);
        the first document must come within ``CONNECT_TIMEOUT_S`` of the start, then
        life within every ``OFFLINE_AFTER_S``. Reads and decodes stay within the
        host's ``_Allowance``: past it, the pipe is left full until it refills."""
        with contextlib.suppress(FileNotFoundError):
            os.unlink(control_path(self.home, remote))  # ours (we hold the lock)
        try:
            self.proc = subprocess.Popen(
                follow_argv(remote, self.home), stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=_die_with_parent)
        except OSError as exc:
            self._mark(reader, remote, f"cannot run ssh: {exc}")
            return False
        assert self.proc.stdout is not None and self.proc.stderr is not None
        out_fd, err_fd = self.proc.stdout.fileno(), self.proc.stderr.fileno()
        os.set_blocking(out_fd, False)
        os.set_blocking(err_fd, False)
        buffer = b""
        errors = b""
        delivered = False
        alive_at = time.monotonic()
        last_interest = alive_at
        allowance = _Allowance.start(alive_at)
        err_open = True
        try:
            while True:
                now = time.monotonic()
                silence = OFFLINE_AFTER_S if delivered else CONNECT_TIMEOUT_S
                if now - alive_at >= silence:
                    what = "a heartbeat or a valid document" if delivered else "a valid document"
                    self._mark(reader, remote, f"no word from {remote.name} for "
                                               f"{silence:.0f} s ({what})")
                    return delivered
                if now - last_interest >= INTEREST_CHECK_S:
                    last_interest = now
                    if not self.keep and not anyone_interested(self.home) \
                            and not self._wanted():
                        return delivered
                buffer, heard, stored = self._lines(reader, remote, buffer, allowance, now)
                delivered = delivered or stored
                if heard and delivered:  # before the first document, only one counts
                    alive_at = time.monotonic()
                pending = b"\n" in buffer  # a line waits for the document allowance
                readable = allowance.readable(now)
                fds = [fd for fd, want in ((out_fd, not pending), (err_fd, err_open))
                       if want and readable > 0]
                wait = min(silence - (now - alive_at), INTEREST_CHECK_S)
                if pending:
                    wait = min(wait, allowance.documents.wait_for(1.0, now))
                if readable <= 0:
                    wait = min(wait, allowance.read.wait_for(MIN_READ, now))
                ready, _, _ = select.select(fds, [], [], max(wait, 0.0))
                if err_fd in ready:
                    chunk = _read(err_fd, readable)
                    if chunk:
                        allowance.read.take(len(chunk), time.monotonic())
                        errors = (errors + chunk)[-4096:]
                        readable = allowance.readable(time.monotonic())
                    elif chunk == b"":
                        err_open = False
                if out_fd not in ready or readable <= 0:
                    continue
                chunk = _read(out_fd, readable)
                if chunk is None:
                    continue
                if not chunk:
                    tail = errors.decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
                    code = self.proc.wait()
                    self._mark(reader, remote, f"ssh to {remote.name} ended ({code})"
                                               + (f": {tail[0][:200]}" if tail[0] else ""))
                    return delivered
                allowance.read.take(len(chunk), time.monotonic())
                buffer += chunk
                if len(buffer) > MAX_LINE_BYTES and b"\n" not in buffer:
                    self._refuse(reader, remote, "a document larger than 8 MiB; "
                                                 "reconnecting")
                    return delivered
        finally:
            self._kill()

    def _lines(self, reader: RegistryReader, remote: RemoteConfig, buffer: bytes,
               allowance: _Allowance, now: float) -> tuple[bytes, bool, bool]:
        """Take the complete lines of ``buffer`` the allowance permits: (what is left,
        whether a heartbeat or a stored document came, whether a document was stored).
        Blank lines are heartbeats, consumed together however many arrive at once."""
        heard = stored = False
        while buffer:
            head = buffer.lstrip(b" \t\r\n")
            if len(head) != len(buffer):
                heard = heard or b"\n" in buffer[:len(buffer) - len(head)]
                buffer = head
            end = buffer.find(b"\n")
            if end < 0 or allowance.documents.available(now) < 1.0:
                break
            allowance.documents.take(1.0, now)
            line, buffer = buffer[:end].strip(), buffer[end + 1:]
            if self._document(reader, remote, line):
                heard = stored = True
        return buffer, heard, stored

    def _kill(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=3)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()

    # ---- documents

    def _document(self, reader: RegistryReader, remote: RemoteConfig, data: bytes) -> bool:
        """Validate and store one document; False (and nothing stored) when refused."""
        try:
            state = decode_checked(data, schema=HostState)
            if state.host.host_id != remote.host_id:
                raise SwitchboardError(
                    f"answered as host {state.host.host_id}, not the configured "
                    f"{remote.host_id}", code="remote_identity_mismatch")
            if state.host.host_id == reader.host_id:
                raise SwitchboardError("claims to be this host", code="remote_identity_mismatch")
            canonical = encode_canonical(state)
        except (SwitchboardError, EnvelopeError) as exc:
            self._refuse(reader, remote, f"{exc.code}: {exc.message}")
            return False
        with write_transaction(reader.conn) as conn:
            remotes_ops.store_state(conn, remote_name=remote.name, host_id=remote.host_id,
                                    canonical=canonical, observed_at=state.generated_at,
                                    now=reader.now())
        self._attention(reader, remote, _Frames.of(state))
        return True

    def _refuse(self, reader: RegistryReader, remote: RemoteConfig, error: str) -> None:
        print(f"switchboard: refused a document from {remote.name}: {shown(error)[:300]}",
              file=sys.stderr, flush=True)
        with write_transaction(reader.conn) as conn:
            follow_ops.note_refused(conn, remote.name, f"refused: {error}", reader.now())

    def _mark(self, reader: RegistryReader, remote: RemoteConfig, error: str) -> None:
        print(f"switchboard: {remote.name} offline: {shown(error)[:300]}", file=sys.stderr,
              flush=True)
        with write_transaction(reader.conn) as conn:
            marked = remotes_ops.mark_offline(conn, remote.name, error, reader.now())
        if marked:
            self._attention(reader, remote, _Frames())

    # ---- attention

    def _attention(self, reader: RegistryReader, remote: RemoteConfig, frames: _Frames) -> None:
        """Republish the status segment when any count moved; nudge for a remote agent
        that now needs input or just finished its turn."""
        from core.hooks import attention

        before, self.frames = self.frames, frames
        events = []
        for frame_id, (activity, project, title) in frames.by_id.items():
            was = before.by_id.get(frame_id, ("", "", ""))[0]
            if activity == attention.NEEDS_INPUT and was != attention.NEEDS_INPUT:
                events.append((frame_id, attention.AttentionKind.NEEDS_INPUT, project, title))
            elif activity == "ready" and was == "working":
                events.append((frame_id, attention.AttentionKind.TURN_FINISHED, project,
                               title))
        counts = attention.read_counts(reader.conn)
        segment = counts.segment()
        if segment == self.last_segment and not events:
            return
        self.last_segment = segment
        settings = reader.config.attention
        socket = reader.config.tmux.socket_path or str(self.home.root / "tmux.sock")
        if not os.path.exists(socket):
            return  # no tmux server here: nobody to show it to
        if settings.status_line:
            attention.ensure_segment(socket)
        sent: list[attention.Notice] = []
        if events:
            clients = attention.list_clients(socket)
            for frame_id, kind, project, title in events:
                subject = attention.Subject(frame_id=frame_id, title=title,
                                            project=f"{remote.name}: {project}",
                                            view_window=None, is_active=False)
                sent += attention.coalesce(attention.notices(subject, kind, clients),
                                           frame_id, kind, self.home.run_dir / "attention",
                                           time.time())
        attention.publish(socket, settings, counts, sent)


def _exit_on_signal(signum: int, frame: object) -> None:
    """SIGTERM unwinds through ``run``'s finally: its ssh is ended, its lock released."""
    raise SystemExit(0)


def _read(fd: int, limit: int = READ_CHUNK) -> bytes | None:
    """What the pipe holds, at most ``limit`` bytes: bytes, b"" at its end, None when
    nothing is there yet."""
    try:
        return os.read(fd, max(1, limit))
    except BlockingIOError:
        return None
    except OSError:
        return b""


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m core.remote.follower REMOTE_NAME", file=sys.stderr)
        return 2
    try:
        return Follower(Home.from_env(), argv[0]).run()
    except SwitchboardError as exc:
        print(f"switchboard: {shown(exc.message)}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
