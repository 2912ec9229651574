"""The navigator never reconciles: it shows what the home's server wrote.

Against a real registry: reconcile runs elsewhere (here, the test calls it as the
server's pass would); what it writes reaches the screen through the ordinary
data_version poll, and new open recoveries are said once, from the data. A
navigator started by ``switchboard ui`` makes sure the server runs, and says so
once when it cannot start.
"""

from __future__ import annotations

from typing import Any

from core.context.requests import new_request_id
from core.providers.checks import STALE_WORKING_AFTER_MS
from core.reconcile.reconcile import reconcile
from core.runtime.sagas import LEASE_MS
from navigator.app import SwitchboardApp
from navigator.widgets.badges import BadgeKind
from navigator.widgets.frames import frame_key
from navigator.widgets.recoveries import RecoveryList
from navigator.widgets.views import ViewList
from tests.navigator.helpers import notices, settle, tree, wait_until
from tests.navigator.scenario import Scenario

SIZE = (80, 24)
SAID = "1 recovery needs attention: ctrl+p › Open recovery says what to do."


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


class _NoReconcile:
    """The real client, counting any reconcile or server start a navigator would make."""

    def __init__(self, scenario: Scenario, *, start_fails: bool = False) -> None:
        self._client = scenario.client
        self.reconciles = 0
        self.starts = 0
        self.start_fails = start_fails

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def reconcile(self) -> Any:
        self.reconciles += 1
        return self._client.reconcile()

    def ensure_server(self) -> None:
        self.starts += 1
        if self.start_fails:
            raise OSError("no room left on the run folder's disk")


async def test_a_new_recovery_is_said_once_from_the_data(demo: Scenario) -> None:
    """The demo's recovery, there at the first state, is not said; one that the
    server's reconcile opens later is, once, and more passes say nothing."""
    _crash_a_focus(demo)
    client = _NoReconcile(demo)
    app = SwitchboardApp(client, poll_interval=0.05)  # type: ignore[arg-type]
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        reconcile(demo.engine)  # the lease is still valid: nothing opens
        await pilot.pause(0.3)
        alpha = app.query_one(ViewList).view(demo.views["alpha"])
        assert alpha is not None and alpha.transition_state == "executing"
        assert len(app.query_one(RecoveryList).open_recoveries) == 1
        assert not [m for s, m in notices(app) if s == "warning"]

        demo.clock.advance(LEASE_MS + 1_000)  # the dead CLI's lease runs out
        reconcile(demo.engine)  # the server's next pass
        await wait_until(pilot, lambda: len(app.query_one(RecoveryList).open_recoveries) == 2)
        opened = next(r for r in app.query_one(RecoveryList).open_recoveries
                      if r.kind == "transition_interrupted")
        assert opened.actionability == "open_view" and opened.subject_id == demo.views["alpha"]
        await wait_until(pilot, lambda: SAID in [m for s, m in notices(app) if s == "warning"])
        reconcile(demo.engine)
        demo.client.enter_project("beta")  # a change: another load, nothing new opened
        await pilot.pause(0.4)
        assert [m for s, m in notices(app) if s == "warning"] == [SAID]
    assert client.reconciles == 0 and client.starts == 0  # not asked to start one


async def test_stale_working_ages_to_unknown_and_the_badge_redraws(demo: Scenario) -> None:
    app = SwitchboardApp(demo.client, poll_interval=0.05)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        fix_login = frame_key(demo.frames["Fix login"])
        assert tree(app).frame_nodes()[fix_login].data.badge is BadgeKind.WORKING
        version = demo.client.data_version()
        demo.clock.advance(STALE_WORKING_AFTER_MS + 1_000)  # no hook evidence since
        await pilot.pause(0.3)
        assert demo.client.data_version() == version  # time alone changes nothing shown
        assert tree(app).frame_nodes()[fix_login].data.badge is BadgeKind.WORKING
        reconcile(demo.engine)  # the server's pass ages it
        await wait_until(
            pilot, lambda: tree(app).frame_nodes()[fix_login].data.badge is BadgeKind.UNKNOWN)
        write_docs = tree(app).frame_nodes()[frame_key(demo.frames["Write docs"])]
        assert write_docs.data.badge is BadgeKind.NEEDS_INPUT  # only working ages


async def test_the_ui_navigator_starts_the_server_and_says_once_when_it_cannot(
        demo: Scenario, monkeypatch: Any) -> None:
    import navigator.app as app_module

    monkeypatch.setattr(app_module, "SERVER_PROBE_INTERVAL", 0.05)
    client = _NoReconcile(demo, start_fails=True)
    app = SwitchboardApp(client, poll_interval=0.05, start_server=True)  # type: ignore[arg-type]
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: client.starts >= 4)  # probed again and again
        failed = [n for n in app._notifications if n.title == "Server not running"]
        assert len(failed) == 1 and failed[0].severity == "error"
        assert "no room left" in failed[0].message and "`switchboard server`" in failed[0].message
        client.start_fails = False
        starts = client.starts
        await wait_until(pilot, lambda: client.starts >= starts + 2)
        assert app.is_running
    assert client.reconciles == 0


def test_the_navigator_has_no_reconcile_of_its_own() -> None:
    """No reconcile interval, no reconcile job: the server is the only reconciler."""
    import navigator.loading as loading

    assert not hasattr(loading.Refresher, "reconcile_tick")
    assert not hasattr(SwitchboardApp, "reconcile_interval")
