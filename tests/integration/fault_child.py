"""Run one engine request in its own process and die with os._exit at a saga point.

    python -m tests.integration.fault_child ROOT POINT KIND IDS_JSON

The process opens the registry under ROOT like any front end, installs a fault
hook that calls ``os._exit(EXIT_AT_FAULT)`` when the saga reaches POINT, and
performs KIND. No cleanup runs: no ``finally``, no rollback, no atexit, which
is what a killed engine looks like to the next process. Exit 0 means POINT was
never reached.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from core.context.requests import new_request_id
from core.engine.engine import Engine
from core.model.enums import ViewMode
from core.reconcile import recovery
from tests.integration.transitions_env import open_stage_engine

EXIT_AT_FAULT = 86

KINDS = ("focus", "back", "human_close", "push", "complete_return", "mode_direct",
         "mode_navigator", "recover")


def perform(engine: Engine, kind: str, ids: dict[str, str | None]) -> object:
    """The request a person or an agent makes for each transition kind."""
    view_id, workspace, child = ids["view_id"], ids["workspace_id"], ids.get("child_id")
    assert view_id and workspace
    if kind == "focus":
        return engine.view_focus(new_request_id(), view_id, workspace)
    if kind == "back":
        return engine.frame_back(new_request_id(), view_id)
    if kind == "human_close":
        assert child
        return engine.frame_close(new_request_id(), child)
    if kind == "push":
        return engine.frame_push(new_request_id(), workspace, "Task", "The brief")
    if kind == "complete_return":
        assert child
        return engine.frame_complete(new_request_id(), child, "Fixed foo", "review and merge")
    if kind in ("mode_direct", "mode_navigator"):
        mode = ViewMode.DIRECT if kind == "mode_direct" else ViewMode.NAVIGATOR
        return engine.view_mode(new_request_id(), view_id, mode)
    if kind == "recover":
        recovery_id = ids["recovery_id"]
        assert recovery_id
        return recovery.execute(engine, new_request_id(), recovery_id)
    raise ValueError(f"unknown transition kind {kind!r}")


def main(argv: list[str]) -> int:
    root, point, kind, ids = argv
    engine = open_stage_engine(Path(root))

    def die(reached: str) -> None:
        if reached == point:
            os._exit(EXIT_AT_FAULT)

    engine.fault = die
    perform(engine, kind, json.loads(ids))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
