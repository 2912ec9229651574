"""Shared fixtures: a temporary Switchboard home and a private tmux server.

Tests never touch the user's default tmux server or XDG dirs.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import libtmux
import pytest


@pytest.fixture
def sb_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh SWITCHBOARD_HOME (and config path) for one test."""
    home = tmp_path / "sbhome"
    home.mkdir()
    monkeypatch.setenv("SWITCHBOARD_HOME", str(home))
    monkeypatch.setenv("SWITCHBOARD_CONFIG", str(home / "config.toml"))
    monkeypatch.delenv("TMUX", raising=False)
    monkeypatch.delenv("TMUX_PANE", raising=False)
    return home


def _short_socket_dir() -> Path:
    # Unix socket paths are limited to ~100 bytes; pytest tmp paths can be long.
    return Path(tempfile.mkdtemp(prefix="sbtmux-", dir="/tmp"))


@pytest.fixture
def tmux_socket() -> Iterator[Path]:
    """A socket path for a private tmux server, killed after the test."""
    if shutil.which("tmux") is None:
        pytest.fail("tmux is not installed; `make test` installs it")
    folder = _short_socket_dir()
    socket = folder / "tmux.sock"
    yield socket
    subprocess.run(["tmux", "-S", str(socket), "kill-server"], capture_output=True)
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def tmux_server(tmux_socket: Path) -> Iterator[libtmux.Server]:
    """A running private tmux server with one scratch session."""
    env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}
    subprocess.run(
        ["tmux", "-S", str(tmux_socket), "-f", "/dev/null", "new-session", "-d",
         "-s", "scratch", "-x", "200", "-y", "50"],
        check=True, env=env,
    )
    yield libtmux.Server(socket_path=str(tmux_socket))


@pytest.fixture
def no_server_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    """The home's server (started by any launch for its agent tools) runs no periodic
    pass within the test: tests that reconcile step by step and count what a pass
    opened would otherwise race the server's own pass every 10 s. The agent tools it
    serves are unaffected."""
    monkeypatch.setenv("SWITCHBOARD_RECONCILE_INTERVAL", "3600")
