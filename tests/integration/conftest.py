"""Fixtures for the tmux adapter tests: a bound adapter on a private server and a byte recorder.

The recorder stands in for a provider at the terminal edge: it enables
bracketed paste like Claude Code and Codex do, puts its tty in raw mode and
appends every byte it receives to a log, so tests can assert exactly what
tmux delivered (and what it dropped).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import libtmux
import pytest

from core.tmux import TmuxAdapter, TmuxRunner, ensure_holding_session, read_identity
from tests.waiting import assert_until

READY = b"READY\n"

RECORDER_SOURCE = r'''
import os, sys, time, tty
log = open(sys.argv[1], "ab", buffering=0)
fd = sys.stdin.fileno()
tty.setraw(fd)
os.write(sys.stdout.fileno(), b"\x1b[?2004h")  # ask for bracketed paste
time.sleep(0.05)  # let tmux parse the mode switch before anyone pastes
log.write(b"READY\n")
while True:
    data = os.read(fd, 4096)
    if not data:
        break
    log.write(data)
'''


@pytest.fixture
def runner(tmux_server: libtmux.Server, tmux_socket: Path) -> TmuxRunner:
    return TmuxRunner(tmux_socket)


@pytest.fixture
def adapter(runner: TmuxRunner) -> TmuxAdapter:
    """Bound to the private server's identity, with the holding session in place."""
    ensure_holding_session(runner)
    return TmuxAdapter(runner, read_identity(runner))


@pytest.fixture
def recorder(tmp_path: Path) -> Callable[[str], tuple[list[str], Path]]:
    """`recorder(name)` -> (argv that records into a log, log path)."""
    script = tmp_path / "recorder.py"
    script.write_text(RECORDER_SOURCE)

    def make(name: str) -> tuple[list[str], Path]:
        log = tmp_path / f"{name}.log"
        return [sys.executable, str(script), str(log)], log

    return make


def wait_ready(log: Path) -> None:
    assert_until(lambda: log.exists() and log.read_bytes().startswith(READY), 5.0, interval=0.02)


def received(log: Path) -> bytes:
    return log.read_bytes()[len(READY):]
