"""The navigator reconciles periodically, quietly, one run at a time.

Against a real registry: a crashed request's expired lease and a stale
``working`` are settled by the periodic reconcile (not only at start), and
what it writes reaches the screen through the ordinary data_version poll.
"""

from __future__ import annotations

import threading
import time
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from core.context.requests import new_request_id
from core.providers.checks import STALE_WORKING_AFTER_MS
from core.runtime.sagas import LEASE_MS
from navigator.app import RECONCILE_INTERVAL, SwitchboardApp
from navigator.widgets.badges import BadgeKind
from navigator.widgets.frames import frame_key
from navigator.widgets.recoveries import RecoveryList
from navigator.widgets.views import ViewList
from tests.navigator.helpers import notices, settle, tree, wait_until
from tests.navigator.scenario import Scenario, new_scenario

SIZE = (80, 24)


def _crash_a_focus(demo: Scenario) -> None:
    """A CLI claims a focus transition and dies before touching anything (lease kept)."""

    def crash(point: str) -> None:
        if point == "after_claim":
            raise RuntimeError("the CLI process died here")

    demo.engine.fault = crash
    try:
        demo.engine.view_focus(new_request_id(), demo.views["alpha"], demo.frames["Fix login"])
    except RuntimeError:
        pass
    finally:
        demo.engine.fault = None


async def test_expired_lease_is_settled_by_a_later_reconcile(demo: Scenario) -> None:
    _crash_a_focus(demo)
    app = SwitchboardApp(demo.client, poll_interval=0.05, reconcile_interval=0.1)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.pause(0.3)  # several reconciles ran: the lease is still valid
        alpha = app.query_one(ViewList).view(demo.views["alpha"])
        assert alpha is not None and alpha.transition_state == "executing"
        assert len(app.query_one(RecoveryList).open_recoveries) == 1
        assert not [m for s, m in notices(app) if s == "warning"]  # quiet while nothing opens

        demo.clock.advance(LEASE_MS + 1_000)  # the dead CLI's lease runs out
        await wait_until(pilot, lambda: len(app.query_one(RecoveryList).open_recoveries) == 2)
        opened = next(r for r in app.query_one(RecoveryList).open_recoveries
                      if r.kind == "transition_interrupted")
        assert opened.actionability == "open_view" and opened.subject_id == demo.views["alpha"]
        alpha = app.query_one(ViewList).view(demo.views["alpha"])
        assert alpha is not None and alpha.transition_state is None  # keys work again
        await pilot.pause(0.3)  # more reconciles: nothing new, nothing said
        warnings = [m for s, m in notices(app) if s == "warning"]
        assert warnings == ["1 recovery needs attention: ctrl+p › Open recovery says what "
                            "to do."]
    state = demo.engine.conn.execute(
        "SELECT state FROM view_transitions WHERE kind = 'focus' ORDER BY created_at DESC"
    ).fetchone()[0]
    assert state == "failed"
    assert demo.view_row("alpha")["active_frame_id"] == demo.frames["alpha"]  # nothing moved


async def test_stale_working_ages_to_unknown_and_the_badge_redraws(demo: Scenario) -> None:
    app = SwitchboardApp(demo.client, poll_interval=0.05, reconcile_interval=0.1)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        fix_login = frame_key(demo.frames["Fix login"])
        assert tree(app).frame_nodes()[fix_login].data.badge is BadgeKind.WORKING
        version = demo.client.data_version()
        demo.clock.advance(STALE_WORKING_AFTER_MS + 1_000)  # no hook evidence since
        assert demo.client.data_version() == version  # time alone changes no data_version
        await wait_until(
            pilot, lambda: tree(app).frame_nodes()[fix_login].data.badge is BadgeKind.UNKNOWN)
        write_docs = tree(app).frame_nodes()[frame_key(demo.frames["Write docs"])]
        assert write_docs.data.badge is BadgeKind.NEEDS_INPUT  # only working ages
    key = demo.frame_row("Fix login")["current_session_key"]
    activity = demo.engine.conn.execute(
        "SELECT activity FROM provider_sessions WHERE session_key = ?", (key,)).fetchone()[0]
    assert activity == "unknown"  # the reconcile wrote it; that write redrew the tree


class _FlakyReconcile:
    """The real client whose reconcile fails while ``failing`` and records overlaps."""

    def __init__(self, scenario: Scenario, *, seconds: float = 0.0) -> None:
        self._client = scenario.client
        self.failing = True
        self.seconds = seconds
        self.calls = 0
        self.running = 0
        self.most_at_once = 0
        self._count = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def reconcile_if_due(self, interval: float) -> Any:
        """The real client's turn-taking, around this stand-in's reconcile."""
        from core.reconcile.reconcile_turn import host_turn

        with host_turn(self._client.home.run_dir, interval) as mine:
            return self.reconcile() if mine else None

    def reconcile(self) -> Any:
        with self._count:
            self.calls += 1
            self.running += 1
            self.most_at_once = max(self.most_at_once, self.running)
        try:
            time.sleep(self.seconds)
            if self.failing:
                raise RuntimeError("tmux did not answer")
            return self._client.reconcile()
        finally:
            with self._count:
                self.running -= 1


async def test_reconcile_failures_warn_once_not_every_tick(demo: Scenario) -> None:
    client = _FlakyReconcile(demo)
    app = SwitchboardApp(client, poll_interval=0.05, reconcile_interval=0.05)  # type: ignore[arg-type]
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: client.calls >= 4)
        failed = [n for n in app._notifications if n.title == "Reconcile failed"]
        assert len(failed) == 1 and failed[0].severity == "warning"
        assert "tmux did not answer" in failed[0].message
        client.failing = False
        calls = client.calls
        await wait_until(pilot, lambda: client.calls >= calls + 3)
        assert len(list(app._notifications)) == 1  # successes that open nothing are silent
        assert app.is_running


async def test_reconciles_never_overlap(demo: Scenario) -> None:
    client = _FlakyReconcile(demo, seconds=0.25)
    client.failing = False
    app = SwitchboardApp(client, poll_interval=0.05, reconcile_interval=0.02)  # type: ignore[arg-type]
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: client.calls >= 3)
    assert client.most_at_once == 1


def test_reconcile_interval_defaults_to_the_stage(demo: Scenario) -> None:
    """A client that drives tmux reconciles every RECONCILE_INTERVAL; without a stage
    (test and demo registries) only when asked; 0 turns it off."""
    assert SwitchboardApp(demo.client).reconcile_interval == 0
    assert SwitchboardApp(demo.client, reconcile_interval=2).reconcile_interval == 2
    demo.engine.stage = object()
    try:
        assert SwitchboardApp(demo.client).reconcile_interval == RECONCILE_INTERVAL
        assert SwitchboardApp(demo.client, reconcile_interval=0).reconcile_interval == 0
    finally:
        demo.engine.stage = None


def test_the_reconcile_holder_checkpoints_the_registry(tmp_path: Path) -> None:
    """Hooks leave checkpoints to the holder: after its turn, what was committed is in
    the database file itself (a copy of the file without its WAL shows it)."""
    import shutil
    import sqlite3

    scenario = new_scenario(tmp_path / "home")
    conn = scenario.engine.conn
    conn.execute("PRAGMA wal_autocheckpoint = 0")  # as a hook's connection leaves it
    scenario.client.enter_project("alpha")
    path = scenario.home.registry_path(scenario.engine.generation_id)

    def views_in_file_alone() -> int:
        alone = tmp_path / f"alone-{len(list(tmp_path.iterdir()))}.sqlite3"
        shutil.copyfile(path, alone)
        with closing(sqlite3.connect(alone)) as copy:
            return int(copy.execute("SELECT COUNT(*) FROM user_views").fetchone()[0])

    assert views_in_file_alone() == 0  # committed, but only in the WAL
    assert scenario.client.reconcile_if_due(10.0) is not None  # this process's turn
    assert views_in_file_alone() == 1
    # a turn whose reconcile fails (tmux gone) still checkpoints
    scenario.client.enter_project("beta")
    assert views_in_file_alone() == 1

    def failing() -> None:
        raise RuntimeError("tmux did not answer")

    scenario.client.reconcile = failing  # type: ignore[method-assign]
    (scenario.home.run_dir / "reconcile.stamp").unlink()
    with pytest.raises(RuntimeError):
        scenario.client.reconcile_if_due(10.0)
    assert views_in_file_alone() == 2
