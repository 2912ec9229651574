"""OpenCode's recorded plugin events (1.18.33) replayed through the outcome table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.model.errors import ProviderError
from core.model.session_enums import Activity, ActivityReason, RuntimePresence
from core.providers.opencode_events import (
    OPENCODE_EVENTS,
    opencode_fields,
    opencode_outcome,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "hooks"


def _lines(launch: str) -> list[dict]:
    text = (FIXTURES / f"opencode-1.18.33-{launch}.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _activities(lines: list[dict]) -> list[tuple[str, Activity]]:
    """The activity each event sets, in order, repeats folded (what the row shows)."""
    shown: list[tuple[str, Activity]] = []
    for line in lines:
        activity = opencode_outcome(line["name"], line["payload"])[1]
        if activity is not None and (not shown or shown[-1][1] != activity):
            shown.append((line["name"], activity))
    return shown


def test_the_recorded_first_launch_reads_working_needs_input_working_ready() -> None:
    lines = _lines("first")
    assert _activities(lines) == [
        ("chat.message", Activity.WORKING), ("session.idle", Activity.READY),
        ("chat.message", Activity.WORKING), ("permission.asked", Activity.NEEDS_INPUT),
        ("permission.replied", Activity.WORKING), ("session.idle", Activity.READY)]
    asked = [opencode_outcome(line["name"], line["payload"]) for line in lines
             if line["name"] == "permission.asked"]
    assert asked == [("permission_requested", Activity.NEEDS_INPUT, ActivityReason.PERMISSION,
                      None)]
    created = [opencode_outcome(line["name"], line["payload"]) for line in lines
               if line["name"] == "session.created"]
    assert created == [("session_started", None, None, RuntimePresence.LIVE)]


def test_every_relevant_event_names_the_one_session_and_the_resume_keeps_it() -> None:
    first, resumed = _lines("first"), _lines("resumed")
    ids = {opencode_fields(line["name"], line["payload"]).session_id
           for line in first + resumed if line["name"] in OPENCODE_EVENTS}
    assert len(ids) == 1 and next(iter(ids), "").startswith("ses_")
    assert _activities(resumed) == [("chat.message", Activity.WORKING),
                                    ("session.idle", Activity.READY)]


def test_noise_and_idle_status_change_nothing() -> None:
    lines = _lines("first")
    noise = [line for line in lines if line["name"] in ("plugin.added", "message.part.delta",
                                                        "message.updated", "session.updated")]
    assert noise and all(opencode_outcome(line["name"], line["payload"])
                         == ("other", None, None, None) for line in noise)
    idle = [line for line in lines if line["name"] == "session.status"
            and line["payload"]["properties"]["status"]["type"] == "idle"]
    assert idle and all(opencode_outcome("session.status", line["payload"])[1] is None
                        for line in idle)
    assert opencode_outcome("session.status", {"properties": "junk"})[1] is None
    with pytest.raises(ProviderError, match="not an OpenCode session id"):
        opencode_fields("session.idle", {"properties": {"sessionID": 7}})
