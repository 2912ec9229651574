"""The ``switchboard server`` process: one per home, by an ``flock`` in its run folder.

``serve`` takes the lock (a second server refuses in one line), listens on
127.0.0.1:<ephemeral port>, writes ``server.json`` (0600: pid, port, start time) with
only the endpoint's modules loaded, and, once the endpoint has answered its first
requests (see ``serve``), runs the housekeeping pass (``core.server.housekeeping``:
reconcile, checkpoint, attention segment, parking, remote followers) on a thread every
interval, drains the hooks' turn-end work (``core.server.turn_end``: usage, changes,
nudges, kicks, a Stop's waiting push) on another, parks the views a person leaves
(``core.memory.leave``) on a third, and serves until SIGTERM/SIGINT or its exit rule
(``core.server.lifetime``: the home's tmux server gone for a while, or its lock file
removed). Killed with -9 it leaves a stale ``server.json`` and no lock holder:
``core.providers.agent_http.running`` reads "not running", and the next front end
starts a new one. ``status`` and ``stop`` are what the command's ``--status`` and
``--stop`` do.

Started detached (``core.server.start``, or a launch) as ``python -m core.server.main``
with only the home's variables of Switchboard and its tuning knobs (no capability in
its environment: each call's child gets its own launch's).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from core.config.home import Home
from core.model.errors import SwitchboardError
from core.model.files import write_private
from core.providers.agent_http import (
    INFO_NAME,
    LOCK_NAME,
    LOG_NAME,
    PORT_HINT_NAME,
    SERVER_KNOBS,
    ServerInfo,
    read_info,
    read_port_hint,
    running,
    server_dir,
    tokens_dir,
)
from core.server.housekeeping import (
    Housekeeper,
    PassReport,
    interval_from_env,
    run_loop,
)
from core.server.lifetime import TMUX_GONE_EXIT_S, ExitRule

if TYPE_CHECKING:
    from core.server.http import AgentToolServer

STOP_WAIT_S = 5.0
NOT_RUNNING = 3
"""``--status``'s exit code when no server runs (a script can tell it from an error)."""


class AlreadyRunning(SwitchboardError):
    code = "server_running"


@dataclass(frozen=True)
class Status:
    """What ``--status`` reports."""

    info: ServerInfo | None

    def line(self, now: float) -> str:
        if self.info is None:
            return "switchboard server: not running"
        uptime = max(0, int(now - self.info.started_at))
        return (f"switchboard server: running, pid {self.info.pid}, port {self.info.port}, "
                f"up {uptime} s ({self.info.url})")


LOCK_TRY_S = 0.5
"""How long a starting server keeps trying for the home's lock. Front ends probe the lock
with a shared lock they drop at once (``core.model.flocks.lock_is_held``), every few ms
while they wait for a server they started: a probe that held it at the very moment the
new server asked made that server exit as if another one ran (seen under load: "did not
start within 10 s"). A running server holds it for good, so a second one still leaves."""
LOCK_RETRY_S = 0.01


def _take_lock(folder: Path, try_s: float = LOCK_TRY_S) -> int | None:
    fd = os.open(folder / LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW,
                 0o600)
    deadline = time.monotonic() + try_s
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if time.monotonic() < deadline:
                time.sleep(LOCK_RETRY_S)
                continue
            os.close(fd)
            return None
        return fd


BACKGROUND_QUIET_S = 0.25
"""The background work starts once the endpoint has served nothing for this long ..."""
BACKGROUND_WAIT_MAX_S = 2.0
"""... or this long after the server began listening, busy or not (so agents that keep
it busy delay the first pass by this at most)."""
BACKGROUND_POLL_S = 0.05
HOUSEKEEPING_JOIN_S = 5.0
"""How long a stopping server lets a pass in progress finish (a kill loses nothing
either: the pass's writes are transactions)."""


def serve(run_dir: Path, ready: threading.Event | None = None,
          stop: threading.Event | None = None, *, home: Home | None = None,
          interval: float | None = None, tmux_gone_s: float = TMUX_GONE_EXIT_S,
          on_pass: Callable[[PassReport], None] | None = None,
          libtmux: bool = True) -> int:
    """Run the server until ``stop`` (or SIGTERM/SIGINT in the main thread), or until
    its exit rule says so. ``interval``: seconds between housekeeping passes (None:
    ``interval_from_env``). ``libtmux`` False: the background work's tmux batches are
    spawned (``TmuxRunner.acts_through_libtmux``), as the detached server does.

    The endpoint answers first. Only what the agent tools need is imported before the
    port file is written: a launch waits for that file, and it used to wait for the
    background machinery's imports too (the tmux layer, parking, turn-end: ~50 ms of
    CPU, 217 modules where the endpoint needs 178).
    The background work (housekeeping passes, parking on leave, the turn-end drain)
    starts, each part in its own thread importing its own modules, once the endpoint
    has served nothing for ``BACKGROUND_QUIET_S`` (or ``BACKGROUND_WAIT_MAX_S`` after
    listening, busy or not): its start (the imports, the first pass with its tmux
    processes) took a core for half a second or more and made the requests of a
    launch that started the server wait behind it on a loaded machine (issue 38: the
    first tool call after a launch with no server running)."""
    home = home or Home.from_env()
    folder = server_dir(run_dir)
    lock = _take_lock(folder)
    if lock is None:
        found = read_info(run_dir)
        where = f" (pid {found.pid}, port {found.port})" if found else ""
        raise AlreadyRunning(f"a switchboard server already runs for this home{where}; "
                             "use `switchboard server --status` or `--stop`")
    stop = stop or threading.Event()
    try:
        # A killed predecessor's port file goes now; its port is tried first.
        with contextlib.suppress(FileNotFoundError):
            (folder / INFO_NAME).unlink()
        server = _listen(run_dir, folder)
        write_private(folder / PORT_HINT_NAME, f"{server.port}\n")
        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
                signal.signal(signum, lambda *_: stop.set())
        loop = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2},
                                name="agent-tools-http", daemon=True)
        loop.start()
        write_private(folder / INFO_NAME, json.dumps(
            {"pid": os.getpid(), "port": server.port, "started_at": time.time()}))
        server.log(f"listening on 127.0.0.1:{server.port} (pid {os.getpid()})")
        if ready is not None:
            ready.set()
        keeper = Housekeeper(home, server.log)
        rule = ExitRule(folder / LOCK_NAME, os.fstat(lock).st_ino, keeper.tmux_socket,
                        gone_after=tmux_gone_s)
        background: list[threading.Thread] = []
        listening = time.monotonic()
        while not stop.wait(0.5 if background else BACKGROUND_POLL_S):
            if not background and (server.quiet_for() >= BACKGROUND_QUIET_S or
                                   time.monotonic() - listening >= BACKGROUND_WAIT_MAX_S):
                background = _start_background(
                    keeper, interval or interval_from_env(), stop, on_pass, libtmux=libtmux)
            reason = rule.reason()
            if reason is not None:
                server.log(f"{reason}: exiting")
                stop.set()
        for thread in background:
            thread.join(HOUSEKEEPING_JOIN_S)
        server.shutdown()
        server.server_close()
        server.log("stopped")
        info = read_info(run_dir)
        if info is not None and info.pid == os.getpid():
            with contextlib.suppress(OSError):
                (folder / INFO_NAME).unlink()
    finally:
        os.close(lock)
    return 0


def _start_background(keeper: Housekeeper, interval: float, stop: threading.Event,
                      on_pass: Callable[[PassReport], None] | None, *,
                      libtmux: bool) -> list[threading.Thread]:
    """The housekeeping, leave-parking and turn-end threads, started; the ones a stop
    waits for (``HOUSEKEEPING_JOIN_S``) are returned."""
    if not libtmux:
        from core.tmux.runner import TmuxRunner

        TmuxRunner.acts_through_libtmux = False  # before any background thread runs
    home, log = keeper.home, keeper.log
    housekeeping = threading.Thread(target=run_loop, args=(keeper, interval, stop, on_pass),
                                    name="housekeeping", daemon=True)
    leaving = threading.Thread(target=_park_on_leave,
                               args=(home, keeper.tmux_socket, log, stop),
                               name="leave-parking", daemon=True)
    drain = threading.Thread(target=_drain_turn_ends, args=(home, log, stop),
                             name="turn-end", daemon=True)
    for thread in (housekeeping, leaving, drain):
        thread.start()
    return [housekeeping, drain]


def _park_on_leave(home: Home, tmux_socket: Callable[[], str | None],
                   log: Callable[[str], None], stop: threading.Event) -> None:
    """The leave-parking thread; its machinery (the tmux layer, ``core.memory.parking``)
    is imported here, after the endpoint answers."""
    from core.memory.leave import watch_leaves

    watch_leaves(home, tmux_socket, log, stop)


def _drain_turn_ends(home: Home, log: Callable[[str], None], stop: threading.Event) -> None:
    """The turn-end thread, its module imported here (after the endpoint answers)."""
    from core.server.turn_end import TurnEndDrain

    TurnEndDrain(home, log).run(stop)


def _listen(run_dir: Path, folder: Path) -> AgentToolServer:
    """On the last server's port when it is free (agents launched before keep their URL),
    else on a fresh ephemeral one."""
    from core.server.http import AgentToolServer

    hint = read_port_hint(run_dir)
    if hint:
        try:
            return AgentToolServer(tokens_dir(run_dir), folder / LOG_NAME, hint)
        except OSError:
            pass
    return AgentToolServer(tokens_dir(run_dir), folder / LOG_NAME)


def status(run_dir: Path) -> Status:
    return Status(running(run_dir))


def stop_server(run_dir: Path, wait_s: float = STOP_WAIT_S) -> ServerInfo | None:
    """SIGTERM to the running server and wait for its lock to go; None: none ran."""
    info = running(run_dir)
    if info is None:
        return None
    with contextlib.suppress(ProcessLookupError):
        os.kill(info.pid, signal.SIGTERM)
    deadline = time.monotonic() + wait_s
    while running(run_dir) is not None:
        if time.monotonic() > deadline:
            raise SwitchboardError(f"the switchboard server (pid {info.pid}) did not stop "
                                   f"within {wait_s:g} s; end it with `kill {info.pid}`",
                                   code="server_stuck")
        time.sleep(0.05)
    return info


def main() -> int:
    """``python -m core.server.main``: the detached start a launch makes."""
    os.umask(0o077)
    home = Home.from_env()
    for name in [n for n in os.environ if n.startswith("SWITCHBOARD_")
                 and n not in ("SWITCHBOARD_HOME", "SWITCHBOARD_CONFIG", *SERVER_KNOBS)]:
        del os.environ[name]
    try:  # libtmux would stay ~3 MB in here (``TmuxRunner.acts_through_libtmux``)
        return serve(home.run_dir, home=home, libtmux=False)
    except SwitchboardError as exc:
        print(f"switchboard server: {exc.message}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
