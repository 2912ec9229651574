"""An idle navigator costs a few stats per tick: no worker, no SQL, no rebuild until a
registry file moves; then the change reaches the screen as before."""

from __future__ import annotations

import sqlite3
from typing import Any

from core.model.enums import Activity, ActivityReason
from navigator.app import FULL_CHECK_TICKS, SwitchboardApp
from navigator.widgets.badges import BadgeKind
from navigator.widgets.frames import frame_key
from storage.connection import write_transaction
from storage.operations import sessions as sessions_ops
from tests.navigator.helpers import settle, tree, wait_until
from tests.navigator.scenario import Scenario


class _CountingClient:
    """The real client, counting data_version reads (each one is a load worker)."""

    def __init__(self, scenario: Scenario) -> None:
        self._client = scenario.client
        self.version_reads = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def data_version(self) -> int:
        self.version_reads += 1
        return self._client.data_version()


async def test_idle_ticks_start_no_load_until_a_write(demo: Scenario) -> None:
    client = _CountingClient(demo)
    app = SwitchboardApp(client, poll_interval=0.02)  # type: ignore[arg-type]
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        start_ticks, start_reads = app.refresher.ticks, client.version_reads
        await wait_until(pilot, lambda: app.refresher.ticks >= start_ticks + 3 * FULL_CHECK_TICKS)
        ticks = app.refresher.ticks - start_ticks
        reads = client.version_reads - start_reads
        assert reads <= ticks // FULL_CHECK_TICKS + 1, (ticks, reads)  # backstop only

        _hook_commits_needs_input(demo)
        fix_login = frame_key(demo.frames["Fix login"])
        await wait_until(
            pilot, lambda: tree(app).frame_nodes()[fix_login].data.badge is BadgeKind.NEEDS_INPUT)


def _hook_commits_needs_input(demo: Scenario) -> None:
    """"Fix login" needs input, committed on another connection, as a hook's process does."""
    key = demo.frame_row("Fix login")["current_session_key"]
    hook = sqlite3.connect(demo.client.home.registry_path(demo.engine.generation_id))
    hook.row_factory = sqlite3.Row
    try:
        with write_transaction(hook) as tx:
            sessions_ops.record_activity(
                tx, key, activity=Activity.NEEDS_INPUT, reason=ActivityReason.PERMISSION,
                runtime_presence=None, turn_id=None, provider_version=None,
                now=demo.engine.now())
    finally:
        hook.close()


async def test_a_watching_navigator_wakes_on_a_commit_without_ticking(demo: Scenario) -> None:
    """With the kernel's wake (the ``ui`` command's way) no tick is needed to see a hook."""
    client = _CountingClient(demo)
    app = SwitchboardApp(client, poll_interval=3600,  # type: ignore[arg-type]
                         wake_on_change=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert app.refresher.watching
        ticks, loads = app.refresher.ticks, app.refresher.loads
        _hook_commits_needs_input(demo)
        fix_login = frame_key(demo.frames["Fix login"])
        await wait_until(
            pilot, lambda: tree(app).frame_nodes()[fix_login].data.badge is BadgeKind.NEEDS_INPUT)
        assert app.refresher.ticks == ticks  # woken, not polled
        assert app.refresher.loads > loads
    assert not app.refresher.watching  # the watch is closed with the app
