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

RAM_TEMP_ROOT = Path("/dev/shm")
"""Where ``tmp_path`` lives when this machine has a RAM file system there (Linux):
every test home is made (registry DDL, WAL, git repositories, hook files) and thrown
away, and on a disk each of those fsyncs waits for the device (measured: an engine's
home 2.1-2.9 s on ext4, 0.4 s in RAM, two loaded cores). Nothing a test asserts
depends on the device: the same files, modes, locks, sockets and processes."""
RAM_TEMP_MIN_FREE = 4 * 1024**3
"""Bytes the RAM file system must have free (pytest keeps its last 3 runs' folders)."""


def _ram_temp_root() -> Path | None:
    """``RAM_TEMP_ROOT`` when it is a writable, exec-allowed folder with room; else None
    (macOS, a container's small /dev/shm): the tests then use the system's temp folder."""
    try:
        found = os.statvfs(RAM_TEMP_ROOT)
    except OSError:
        return None
    if found.f_flag & (os.ST_RDONLY | getattr(os, "ST_NOEXEC", 0)):
        return None  # a read-only one holds no home; a noexec one runs no test script
    if found.f_bavail * found.f_frsize < RAM_TEMP_MIN_FREE:
        return None
    return RAM_TEMP_ROOT if os.access(RAM_TEMP_ROOT, os.W_OK | os.X_OK) else None


def pytest_configure(config: pytest.Config) -> None:
    """``tmp_path`` in RAM (``_ram_temp_root``) through pytest's own temp-root variable,
    so its numbered folders, keeping the last 3 runs and locking against concurrent runs
    are pytest's as ever. A ``--basetemp`` or a ``PYTEST_DEBUG_TEMPROOT`` already given
    wins (``PYTEST_DEBUG_TEMPROOT=/tmp`` runs the suite on the disk)."""
    if config.option.basetemp or os.environ.get("PYTEST_DEBUG_TEMPROOT"):
        return
    root = _ram_temp_root()
    if root is not None:
        os.environ["PYTEST_DEBUG_TEMPROOT"] = str(root)


LONG_FIRST = ("realcli", "integration", "soak", "packaging", "attacks")
"""The folders whose files take longest (real agent CLIs, real tmux journeys), handed
to pytest-xdist's workers first: a long file taken last would run alone at the end."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist (``make test``), the long folders' files first; a stable sort,
    so within a file the order is as written. One process (no worker) keeps pytest's
    own order."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return

    def rank(item: pytest.Item) -> int:
        parts = Path(item.path).relative_to(config.rootpath).parts
        folder = parts[1] if len(parts) > 2 and parts[0] == "tests" else ""
        return LONG_FIRST.index(folder) if folder in LONG_FIRST else len(LONG_FIRST)

    items.sort(key=rank)


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
def short_dir() -> Iterator[Path]:
    """A private folder with a short path, removed after the test: for a home whose
    sockets sit inside it (a Unix socket path holds at most ~100 bytes, and pytest's
    ``tmp_path`` is long, longer still under xdist's per-worker folders)."""
    folder = _short_socket_dir()
    yield folder
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
    """The home's server (started by any launch for its agent tools) runs no housekeeping
    pass within the test, not even the one at its start: tests that reconcile step by
    step, count what a pass opened, or move the engine's clock would otherwise race the
    server's own pass (real clock). The agent tools it serves are unaffected."""
    monkeypatch.setenv("SWITCHBOARD_RECONCILE_INTERVAL", "off")  # not even one at start
