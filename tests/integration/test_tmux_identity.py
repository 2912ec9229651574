"""Server identity: read from tmux in one call; a restart invalidates every locator."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import libtmux
import pytest

from core.tmux import (
    ServerIdentity,
    ServerIdentityMismatch,
    TmuxAdapter,
    TmuxRunner,
    check_identity,
    read_identity,
    snapshot,
    verify_identity,
)
from core.tmux.panes import OPT_SURFACE
from tests.waiting import retry_until

SURFACE = "11111111-1111-4111-8111-111111111111"


def _start_server(socket: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}
    subprocess.run(
        ["tmux", "-S", str(socket), "-f", "/dev/null", "new-session", "-d", "-s", "scratch"],
        check=True, env=env,
    )


def _restart(socket: Path, old_pid: int) -> None:
    """kill-server returns before the server exits; wait for it, or the new client races it."""
    subprocess.run(["tmux", "-S", str(socket), "kill-server"], check=True)
    retry_until(lambda: not _alive(old_pid), 5, interval=0.01)
    _start_server(socket)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_identity_is_read_from_tmux_in_one_process(
    runner: TmuxRunner, tmux_server: libtmux.Server, tmux_socket: Path
) -> None:
    before = runner.invocations
    identity = read_identity(runner)
    assert runner.invocations - before == 1
    assert identity.socket_path == str(tmux_socket)
    assert identity.server_pid == int(tmux_server.cmd("display-message", "-p", "#{pid}").stdout[0])
    assert identity.server_start_time > 1_600_000_000
    verify_identity(runner, identity)  # the live server is the recorded one


def test_parse_keeps_spaces_in_the_socket_path() -> None:
    parsed = ServerIdentity.parse("42 1700000000 /tmp/with space/tmux.sock")
    assert parsed == ServerIdentity("/tmp/with space/tmux.sock", 42, 1700000000)


def test_any_differing_field_is_a_mismatch() -> None:
    base = ServerIdentity("/tmp/s", 10, 1000)
    for other in (ServerIdentity("/tmp/t", 10, 1000), ServerIdentity("/tmp/s", 11, 1000),
                  ServerIdentity("/tmp/s", 10, 1001)):
        with pytest.raises(ServerIdentityMismatch):
            check_identity(base, other)


def test_a_restarted_server_rejects_a_reused_pane_id(
    runner: TmuxRunner, tmux_socket: Path
) -> None:
    old = read_identity(runner)
    old_first_pane = snapshot(runner).panes[0].pane_id
    _restart(tmux_socket, old.server_pid)
    new_panes = snapshot(runner).panes
    assert new_panes[0].pane_id == old_first_pane == "%0"  # the locator is reused...

    with pytest.raises(ServerIdentityMismatch):
        verify_identity(runner, old)

    # ...and even a pane carrying the very same tag on the new server is untouchable
    # through the old identity: the guard runs inside tmux before the mutation.
    runner.run([("set-option", "-p", "-t", "%0", OPT_SURFACE, SURFACE)])
    stale = TmuxAdapter(runner, old)
    with pytest.raises(ServerIdentityMismatch):
        stale.kill_surface_pane(pane_id="%0", surface_id=SURFACE)
    with pytest.raises(ServerIdentityMismatch):
        stale.enable_input(pane_id="%0", surface_id=SURFACE)
    with pytest.raises(ServerIdentityMismatch):
        stale.launch_staged_pane(surface_id=SURFACE, command=["sleep", "30"])
    after = snapshot(runner)
    assert [p.pane_id for p in after.panes] == ["%0"]
    assert after.panes[0].surface_id == SURFACE


def test_a_runner_on_another_socket_is_refused(runner: TmuxRunner, tmp_path: Path) -> None:
    identity = read_identity(runner)
    elsewhere = TmuxRunner(tmp_path / "other.sock")
    with pytest.raises(ServerIdentityMismatch):
        TmuxAdapter(elsewhere, identity).enable_input(pane_id="%0", surface_id=SURFACE)
    assert elsewhere.invocations == 0
