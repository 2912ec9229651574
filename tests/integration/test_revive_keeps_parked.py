"""Reconcile's revive never wakes a navigator parked after its reading (issue 25).

The soak found views whose navigator ran again, cold, right after it was parked:
a reconcile pass (another navigator's host turn) had read the pane dead (killed),
someone else brought it back and parked it, and then the pass respawned it from
its old reading, because the respawn's gate asked only "dead?", which a parked
pane also is. The revive's gate now also asks "not asleep" (parking's status);
waking stays the parking code's and a request's (``restore_navigator``) to do.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from core.context.requests import new_request_id
from core.engine.engine import Engine
from core.memory import parking
from core.memory.parking import fleet_panes, keeper_command, park_view
from core.tmux.navigator_pane import ASLEEP_STATUS
from tests.integration.journey_env import tmux
from tests.integration.transitions_env import make_engine
from tests.waiting import retry_until

pytestmark = pytest.mark.tmux


def _state(socket: Path, pane: str) -> tuple[str, str]:
    dead, _, status = tmux(socket, "display-message", "-p", "-t", pane,
                        "#{pane_dead} #{pane_dead_status}").strip().partition(" ")
    return dead, status


def _asleep(stage: object, view: str) -> bool:
    """Parked, as reconcile's reading sees it (tmux's status, or the keeper's command when
    tmux recorded none: see the next test)."""
    pane = stage.snapshot().view(view).navigator  # type: ignore[attr-defined]
    return bool(pane.dead and pane.dead_status == ASLEEP_STATUS)



def _one_view(tmp_path: Path, tmux_socket: Path) -> tuple[Engine, str, str, str]:
    """A project's view on a real server: (engine, view id, its server id, navigator pane)."""
    engine = make_engine(tmp_path, tmux_socket)
    view = engine.project_enter(new_request_id(), "alpha").view_id
    server_id = engine.conn.execute("SELECT tmux_server_id FROM user_views WHERE view_id = ?",
                                    (view,)).fetchone()[0]
    nav = engine.stage.snapshot().view(view).navigator.pane_id  # type: ignore[union-attr]
    return engine, view, server_id, nav

def test_a_stale_revive_leaves_a_parked_navigator_asleep(tmp_path: Path,
                                                         tmux_socket: Path) -> None:
    engine, view, server_id, nav = _one_view(tmp_path, tmux_socket)
    stage = engine.stage
    pid = int(tmux(tmux_socket, "display-message", "-p", "-t", nav, "#{pane_pid}"))
    os.kill(pid, signal.SIGKILL)  # the navigator crashed
    assert retry_until(lambda: _state(tmux_socket, nav)[0] == "1", 10)
    stale = stage.snapshot()  # a reconcile pass reads it dead ...

    # ... meanwhile it is brought back and parked (a wake, then the sweep or a park) ...
    assert stage.revive_navigators(stage.snapshot(), server_id, {view}) == 1
    assert retry_until(lambda: _state(tmux_socket, nav)[0] == "0", 10)
    assert park_view(stage.runner, engine.home.run_dir, view,
                     spawn=stage.navigator_spawn(view))
    assert retry_until(lambda: _asleep(stage, view), 10)

    # ... and the pass goes on from its old reading: the parked pane is left asleep.
    assert stage.revive_navigators(stale, server_id, {view}) == 0
    assert _asleep(stage, view) and _state(tmux_socket, nav)[0] == "1"
    # A crashed one is still revived from the same kind of reading.
    assert stage.revive_navigators(stale, server_id, {view}) == 0
    tmux(tmux_socket, "respawn-pane", "-t", nav, "sh", "-c", "exit 3")
    assert retry_until(lambda: _state(tmux_socket, nav)[0] == "1", 10)
    assert stage.revive_navigators(stale, server_id, {view}) == 1


def test_a_parked_pane_reads_asleep_even_when_tmux_lost_its_exit_status(
        tmp_path: Path, tmux_socket: Path) -> None:
    """tmux 3.3a records no exit status for a respawned pane's process now and then (in
    this loop, `respawn-pane -k` then the keeper's quick exit, ~15 % of the rounds): both
    readings (reconcile's snapshot, parking's fleet) still see the keeper's pane asleep,
    and reconcile leaves it so."""
    engine, view, server_id, nav = _one_view(tmp_path, tmux_socket)
    stage = engine.stage
    screen = tmp_path / "kept.screen"
    screen.write_text("kept")
    raw: set[str] = set()
    for _round in range(20):
        tmux(tmux_socket, "respawn-pane", "-k", "-t", nav, "sleep", "600")
        tmux(tmux_socket, "respawn-pane", "-k", "-t", nav, *keeper_command(screen))
        assert retry_until(lambda: _state(tmux_socket, nav)[0] == "1", 10)
        assert retry_until(lambda: stage.snapshot().view(view).navigator.dead_status
                           == ASLEEP_STATUS, 2)
        assert fleet_panes(stage.runner).of_view(view).asleep
        assert stage.revive_navigators(stage.snapshot(), server_id, {view}) == 0
        raw.add(_state(tmux_socket, nav)[1])
    assert raw <= {str(ASLEEP_STATUS), ""}, raw  # what tmux itself said, each round


def test_a_parked_screen_that_tmux_dropped_is_printed_again(
        tmp_path: Path, tmux_socket: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """tmux before 3.7 may close a pane whose process exited without reading what it
    printed last (no FIONREAD check unless the pane is piped): a parked navigator then
    showed a blank pane (CI, about one park in ten on a loaded machine). Here the first
    keeper prints nothing, as if tmux had dropped its screen: the park prints it again."""
    engine = make_engine(tmp_path, tmux_socket)
    engine.stage.navigator_command = ["sh", "-c", "echo navigator of alpha; exec sleep 600"]
    view = engine.project_enter(new_request_id(), "alpha").view_id
    stage = engine.stage
    nav = stage.snapshot().view(view).navigator.pane_id  # type: ignore[union-attr]
    assert retry_until(lambda: "navigator of alpha" in tmux(
        tmux_socket, "capture-pane", "-p", "-t", nav), 10)
    keepers: list[tuple[str, ...]] = []

    def dropping_keeper(screen: Path) -> tuple[str, ...]:
        kept = keeper_command(screen)
        keepers.append(kept)
        return kept if len(keepers) > 1 else ("/bin/sh", "-c", f"exit {ASLEEP_STATUS}")

    monkeypatch.setattr(parking, "keeper_command", dropping_keeper)
    assert park_view(stage.runner, engine.home.run_dir, view, spawn=stage.navigator_spawn(view))
    assert len(keepers) >= 2  # the silent one, then the screen printed again
    assert _asleep(stage, view)
    assert "navigator of alpha" in tmux(tmux_socket, "capture-pane", "-p", "-t", nav)
