"""A realistic registry for navigator tests, snapshots, screenshots and the benchmark.

Everything goes through the engine's named operations (enter, push, claim,
back, complete) on a real SQLite registry with a fixed clock and sequential
ids, so the same calls always produce the same rows and the same pixels.
Hook evidence (activity) and a recovery are written with the storage layer's
named operations, which is what the hook handler and reconciler do.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field, replace
from pathlib import Path

from core.apps.client import EngineClient
from core.config.home import Home
from core.config.registry import open_current
from core.context.requests import new_request_id
from core.engine.engine import Engine
from core.model.enums import Actionability, Activity, ActivityReason, RecoveryKind
from core.model.ports import FixedClock, SequentialIds
from core.runtime.claims import claim_for_frame, settle_after_stop
from storage.connection import write_transaction
from storage.operations import recoveries as recoveries_ops
from storage.operations import sessions as sessions_ops
from tests.factories import make_engine


@dataclass
class Scenario:
    """Ids of what was built, so tests can assert on exact rows."""

    engine: Engine
    client: EngineClient
    home: Home
    clock: FixedClock
    frames: dict[str, str] = field(default_factory=dict)  # title -> frame_id
    views: dict[str, str] = field(default_factory=dict)  # project -> view_id
    recoveries: list[str] = field(default_factory=list)

    def frame_row(self, title: str) -> dict:
        row = self.engine.conn.execute("SELECT * FROM frames WHERE frame_id = ?",
                                       (self.frames[title],)).fetchone()
        return dict(row)

    def view_row(self, project: str) -> dict:
        row = self.engine.conn.execute("SELECT * FROM user_views WHERE view_id = ?",
                                       (self.views[project],)).fetchone()
        return dict(row)

    def tick(self) -> None:
        self.clock.advance(1_000)

    def freeze(self) -> None:
        """Close the connection (checkpointing the WAL) so the home can be copied."""
        self.engine.conn.close()

    def clone(self, home_root: Path) -> Scenario:
        """The same registry in another home, continuing the same clock and ids.

        Creating a registry takes most of a second (schema + triggers); tests copy
        a frozen one instead of building their own.
        """
        shutil.copytree(self.home.root, home_root, dirs_exist_ok=True)
        home = Home(root=home_root, config_path=home_root / "config.toml")
        opened = open_current(home)
        ids = self.engine.ids
        assert isinstance(ids, SequentialIds)
        clock = FixedClock(self.clock.current_ms)
        engine = Engine(conn=opened.conn, config=opened.config, clock=clock,
                        ids=SequentialIds(counter=ids.counter))
        return replace(self, engine=engine, client=EngineClient(engine=engine, home=home),
                       home=home, clock=clock, frames=dict(self.frames),
                       views=dict(self.views), recoveries=list(self.recoveries))


def new_scenario(home_root: Path) -> Scenario:
    """A fresh registry with projects alpha and beta configured, nothing entered."""
    clock = FixedClock()
    engine = make_engine(home_root, clock=clock, ids=SequentialIds())
    home = Home(root=home_root, config_path=home_root / "config.toml")
    return Scenario(engine, EngineClient(engine=engine, home=home), home, clock)


def push_and_claim(scenario: Scenario, parent: str, title: str) -> str:
    """An agent pushes a task and the child claims its brief (the push settles)."""
    engine = scenario.engine
    result = engine.frame_push(new_request_id(), scenario.frames[parent], title,
                               f"brief for {title}")
    scenario.frames[title] = result.target_frame_id
    scenario.tick()
    claim_for_frame(engine, result.target_frame_id, None)
    scenario.tick()
    return result.target_frame_id


def back(scenario: Scenario, project: str) -> None:
    scenario.engine.frame_back(new_request_id(), scenario.views[project])
    scenario.tick()


def set_activity(scenario: Scenario, title: str, activity: Activity, presence: str) -> None:
    """Hook evidence for a frame's current session (what a provider hook records)."""
    engine = scenario.engine
    key = scenario.frame_row(title)["current_session_key"]
    assert key is not None, f"{title} has no session"
    reason = {Activity.NEEDS_INPUT: ActivityReason.PERMISSION,
              Activity.READY: ActivityReason.TURN_COMPLETE}.get(activity, ActivityReason.UNKNOWN)
    with write_transaction(engine.conn) as conn:
        sessions_ops.record_activity(conn, key, activity=activity, reason=reason,
                                     runtime_presence=presence, turn_id=None,
                                     provider_version=None, now=engine.now())
    scenario.tick()


def add_recovery(scenario: Scenario, subject_title: str, kind: RecoveryKind,
                 actionability: Actionability, explanation: str, *,
                 subject: tuple[str, str] | None = None) -> str:
    """A recovery about a frame (by title), or about ``subject`` = (type, id) when given."""
    engine = scenario.engine
    subject_type, subject_id = subject or ("frame", scenario.frames[subject_title])
    with write_transaction(engine.conn) as conn:
        recovery_id = recoveries_ops.open_recovery(
            conn, recovery_id=engine.ids.new_id(), host_id=engine.host_id, kind=kind,
            subject_type=subject_type, subject_id=subject_id,
            actionability=actionability, explanation=explanation, now=engine.now())
    scenario.recoveries.append(recovery_id)
    scenario.tick()
    return recovery_id


def build_demo(home_root: Path, *, with_recovery: bool = True) -> Scenario:
    """alpha: workspace + two open tasks + one completed task in History; beta: entered.

    The alpha view ends on its workspace; "Fix login" is working, "Write docs"
    waits for input, and one recovery is open.
    """
    scenario = new_scenario(home_root)
    engine = scenario.engine
    route = engine.project_enter(new_request_id(), "alpha")
    scenario.frames["alpha"] = route.frame_id
    scenario.views["alpha"] = route.view_id
    scenario.tick()

    push_and_claim(scenario, "alpha", "Old spike")
    engine.frame_complete(new_request_id(), scenario.frames["Old spike"], "spike done",
                          "adopt approach B")
    scenario.tick()
    claim_for_frame(engine, scenario.frames["alpha"], None)
    settle_after_stop(engine, scenario.frames["alpha"])
    scenario.tick()

    push_and_claim(scenario, "alpha", "Fix login")
    back(scenario, "alpha")
    push_and_claim(scenario, "alpha", "Write docs")
    back(scenario, "alpha")
    set_activity(scenario, "Fix login", Activity.WORKING, "live")
    set_activity(scenario, "Write docs", Activity.NEEDS_INPUT, "live")

    route = engine.project_enter(new_request_id(), "beta")
    scenario.frames["beta"] = route.frame_id
    scenario.views["beta"] = route.view_id
    scenario.tick()
    if with_recovery:
        add_recovery(scenario, "Fix login", RecoveryKind.PANE_VANISHED,
                     Actionability.SAFE_AUTO,
                     "The agent pane of Fix login vanished; its session can be resumed.")
    return scenario
