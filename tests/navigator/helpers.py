"""Pilot helpers shared by the navigator tests."""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import suppress

from textual.pilot import Pilot
from textual.worker import WorkerCancelled, WorkerFailed

from navigator.app import SwitchboardApp
from navigator.widgets.frames import FrameTree, frame_key, project_key
from tests.navigator.scenario import Scenario


async def settle(pilot: Pilot) -> None:
    """Let request workers finish and their messages (new state) be handled."""
    for _ in range(2):
        for worker in list(pilot.app.workers):  # a failed worker ends too: its toast
            with suppress(WorkerFailed, WorkerCancelled):
                await worker.wait()
        await pilot.pause()


def tree(app: SwitchboardApp) -> FrameTree:
    return app.query_one(FrameTree)


async def select_frame(pilot: Pilot, scenario: Scenario, title: str) -> None:
    """Put the tree cursor on a frame, the way arrow keys would, and focus the tree."""
    frames = tree(pilot.app)  # type: ignore[arg-type]
    frames.focus()
    assert frames.select_key(frame_key(scenario.frames[title])), title
    await pilot.pause()


async def select_project(pilot: Pilot, project_id: str) -> None:
    frames = tree(pilot.app)  # type: ignore[arg-type]
    frames.focus()
    assert frames.select_key(project_key(project_id))
    await pilot.pause()


def notices(app: SwitchboardApp) -> list[tuple[str, str]]:
    """(severity, message) of every notification shown so far."""
    return [(n.severity, n.message) for n in app._notifications]


async def wait_until(pilot: Pilot, ready: Callable[[], bool], timeout: float = 5.0) -> None:
    """Pause until ``ready()`` holds (timers and thread workers run meanwhile)."""
    deadline = time.monotonic() + timeout
    while not ready():
        assert time.monotonic() < deadline, "timed out waiting for the navigator"
        await pilot.pause(0.05)
    await settle(pilot)
