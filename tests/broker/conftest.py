"""Broker fixtures: a real broker file per test and fake agent panes on a private tmux server."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import libtmux
import pytest

from core.broker.broker import Broker, PlacementSpec, open_broker
from core.broker.delivery import Notifier, PaneLocks, TmuxTyper
from core.model.ports import Clock, FixedClock
from tests.waiting import assert_until, retry_value


@pytest.fixture
def broker_path(tmp_path: Path) -> Path:
    return tmp_path / "broker.sqlite3"


@pytest.fixture
def clock() -> FixedClock:
    return FixedClock()


@pytest.fixture
def broker(broker_path: Path, clock: FixedClock) -> Iterator[Broker]:
    """A broker without a pane notifier (behaviour tests that need no tmux)."""
    with Broker(open_broker(broker_path), clock=clock) as opened:
        yield opened


def make_broker(path: Path, socket: Path | None, *, clock: Clock | None = None,
                notifier: Notifier | None = None) -> Broker:
    """A broker whose notifier types into the private tmux server at ``socket``."""
    store = open_broker(path)
    notifier = notifier or Notifier(TmuxTyper(socket), PaneLocks.beside(path))
    return Broker(store, clock=clock, notifier=notifier)


def fleet_with_worker(broker: Broker, director: PlacementSpec, worker: PlacementSpec
                      ) -> tuple[int, int, int]:
    """(fleet id, Director id, worker id)."""
    created = broker.create_fleet("crew", director_name="boss", director_description="d",
                                  placement=director)
    fleet_id = created.fleet.fleet_id
    worker_id = broker.register_member(fleet_id, "worker", description="w",
                                       placement=worker).member.member_id
    return fleet_id, created.director.member.member_id, worker_id


def placeholder(pane: str | None = "%900") -> PlacementSpec:
    """A placement naming a pane that is never typed into (tests without tmux)."""
    return PlacementSpec("nowhere", "@900", pane, "claude")


@pytest.fixture
def fake_pane(tmux_server: libtmux.Server) -> Callable[[], PlacementSpec]:
    """Start a fake agent (``cat`` with echo off) in a new window; return its placement.

    With echo off every typed line appears in the pane exactly once (cat's
    output), so captured lines are exactly what was submitted.
    """

    def start() -> PlacementSpec:
        out = tmux_server.cmd(
            "new-window", "-d", "-t", "scratch:", "-P", "-F",
            "#{session_name}\t#{window_id}\t#{pane_id}", "stty -echo; exec cat").stdout
        session, window, pane = out[0].split("\t")
        assert_until(lambda: tmux_server.cmd("display-message", "-p", "-t", pane,
                                             "#{pane_current_command}").stdout[:1] == ["cat"],
                     5, f"fake agent in {pane} did not start", interval=0.01)
        return PlacementSpec(session, window, pane, "claude")

    return start


def pane_lines(server: libtmux.Server, pane: str) -> list[str]:
    """Every non-empty line in the pane, scrollback included, wrapped lines joined."""
    result = server.cmd("capture-pane", "-p", "-J", "-S", "-", "-t", pane)
    return [line.rstrip() for line in result.stdout if line.strip()]


def wait_for_lines(server: libtmux.Server, pane: str, count: int,
                   timeout: float = 5.0) -> list[str]:
    return retry_value(lambda: pane_lines(server, pane), lambda lines: len(lines) >= count,
                       timeout, interval=0.01)


def notified_at(broker: Broker, message_id: int) -> str | None:
    row = broker.store.get_message(message_id)
    assert row is not None
    return row["notified_at"]
