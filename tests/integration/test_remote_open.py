"""Entering a remote host's project through a real sshd on loopback.

A second Switchboard home stands in for the remote machine; sshd (Debian's
openssh-server, `make test` installs it) listens on 127.0.0.1 with keys made
here, and its SetEnv points the remote `switchboard` at that home. The local
side opens a tmux window running `ssh -t far switchboard open gamma`: the remote
engine builds and shows its own view; nothing local mutates.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from core.config.config import RemoteConfig
from core.config.home import Home
from core.config.registry import init_registry
from core.state.remote_open import open_remote
from core.state.remotes import refresh
from tests.factories import project_config
from tests.integration.journey_env import make_live_engine, tmux
from tests.waiting import retry_until

REMOTE_HOST = "44444444-4444-4444-8444-444444444444"
REMOTE_PROJECT = "66666666-6666-4666-8666-666666666666"
REPO_ROOT = Path(__file__).resolve().parents[2]
SSHD = "/usr/sbin/sshd"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def far() -> Iterator[tuple[Path, Path]]:
    """(remote home, ssh wrapper): a real sshd on loopback serving a second home."""
    if not Path(SSHD).exists():
        pytest.fail("sshd is not installed; `make test` installs openssh-server")
    folder = Path(tempfile.mkdtemp(prefix="sbr-", dir="/tmp"))  # short: tmux socket paths
    home = folder / "home"
    template = project_config(home / "src", names=("gamma",))
    template = replace(template, host=replace(template.host, host_id=REMOTE_HOST,
                                              display_name="far-away"),
                       projects=tuple(replace(p, project_id=REMOTE_PROJECT)
                                      for p in template.projects))
    init_registry(Home(root=home, config_path=home / "config.toml"), template=template)
    for name in ("host_key", "user_key"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f",
                        str(folder / name)], check=True)
    shutil.copy(folder / "user_key.pub", folder / "authorized_keys")
    port = _free_port()
    bin_dir = Path(sys.executable).parent
    (folder / "sshd_config").write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {folder / 'host_key'}\n"
        f"AuthorizedKeysFile {folder / 'authorized_keys'}\nStrictModes no\n"
        "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n"
        "PermitRootLogin prohibit-password\n"
        f"PidFile {folder / 'sshd.pid'}\n"
        f"SetEnv PATH={bin_dir}:/usr/local/bin:/usr/bin:/bin SWITCHBOARD_HOME={home} "
        f"SWITCHBOARD_CONFIG={home / 'config.toml'} PYTHONPATH={REPO_ROOT} "
        # the remote account's own shell start-up files are not this test's business
        f"HOME={folder / 'remote-user'} TERM=xterm-256color\n")
    (folder / "remote-user").mkdir()
    Path("/run/sshd").mkdir(exist_ok=True)  # sshd's privilege separation directory
    user = os.environ.get("USER") or "root"
    (folder / "ssh_config").write_text(
        f"Host far\n  HostName 127.0.0.1\n  Port {port}\n  User {user}\n"
        f"  IdentityFile {folder / 'user_key'}\n  IdentitiesOnly yes\n"
        "  StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n  LogLevel ERROR\n")
    wrapper = folder / "ssh"
    wrapper.write_text(f"#!/bin/sh\nexec ssh -F {folder / 'ssh_config'} \"$@\"\n")
    wrapper.chmod(0o755)
    server = subprocess.Popen([SSHD, "-D", "-e", "-f", str(folder / "sshd_config")],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if server.poll() is not None:
                    pytest.fail(f"sshd exited: {server.stderr.read().decode()[-500:]}")
                time.sleep(0.05)
        yield home, wrapper
    finally:
        server.terminate()
        server.wait(timeout=10)
        subprocess.run(["tmux", "-S", str(home / "tmux.sock"), "kill-server"],
                       capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)


def test_entering_a_remote_project_opens_its_view_over_ssh(
        far: tuple[Path, Path], tmp_path: Path, tmux_socket: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    remote_home, wrapper = far
    monkeypatch.setenv("SWITCHBOARD_SSH", str(wrapper))
    engine = make_live_engine(tmp_path / "local", tmux_socket, remotes=(
        RemoteConfig(name="far", host_id=REMOTE_HOST, ssh_target="far"),))
    # the cached state arrives through the same real sshd
    result = refresh(engine, "far")
    assert (result.reachability, result.error) == ("online", None)
    local_rows_before = engine.conn.execute("SELECT COUNT(*) FROM user_views").fetchone()[0]

    opened = open_remote(engine, engine.config.remotes[0], "gamma")
    assert opened.created and opened.argv[-3:] == ("switchboard", "open", "gamma")

    def remote_view_shown() -> bool:
        screen = tmux(tmux_socket, "capture-pane", "-p", "-t", opened.window_id)
        # the remote view's main pane: its placeholder, drawn by the remote host
        return "No agent is running in this frame" in screen
    assert retry_until(remote_view_shown, 60), tmux(tmux_socket, "capture-pane", "-p", "-t",
                                                 opened.window_id)
    import sqlite3
    remote_db = next((remote_home / "state").glob("*/registry.sqlite3"))
    with sqlite3.connect(f"file:{remote_db}?mode=ro", uri=True) as conn:
        assert conn.execute("SELECT COUNT(*) FROM user_views").fetchone()[0] == 1
    # nothing local changed; a second entry selects the same window
    assert engine.conn.execute("SELECT COUNT(*) FROM user_views").fetchone()[0] == \
        local_rows_before
    again = open_remote(engine, engine.config.remotes[0], "gamma")
    assert (again.created, again.window_id) == (False, opened.window_id)


def test_a_remote_project_name_is_data_on_the_remote_shell(
        far: tuple[Path, Path], tmp_path: Path, tmux_socket: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    remote_home, wrapper = far
    monkeypatch.setenv("SWITCHBOARD_SSH", str(wrapper))
    engine = make_live_engine(tmp_path / "local", tmux_socket, remotes=(
        RemoteConfig(name="far", host_id=REMOTE_HOST, ssh_target="far"),))
    canary = tmp_path / "pwned"
    opened = open_remote(engine, engine.config.remotes[0], f"gamma; touch {canary}")

    def refused() -> bool:  # -J: the long refusal wraps in the pane
        screen = tmux(tmux_socket, "capture-pane", "-p", "-J", "-S", "-", "-t",
                      opened.window_id)
        return "unknown project" in screen and "(known: gamma)" in screen
    assert retry_until(refused, 60), tmux(tmux_socket, "capture-pane", "-p", "-t",
                                       opened.window_id)
    assert not canary.exists()
