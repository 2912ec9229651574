"""Each ``notification_type`` the current Claude Code sends, and what it does to activity.

The list is Claude Code 2.1.332's (read from its binary; the ones marked recorded are in
``tests/fixtures/hooks/claude-2.1.332.tsv``), kept in ``docs/cli-versions.md``. A type
that says the person must act is needs-input; a type that only reports (a login, an
answered elicitation, an OS notification) changes nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.model.session_enums import Activity, ActivityReason
from core.providers.hooks import AGENT_NEEDS_INPUT, HookKind, parse_hook

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "hooks"
SID = "45621ad2-517f-4ec4-b6e0-ce0876cdc9c1"

NEEDS_PERMISSION = (Activity.NEEDS_INPUT, ActivityReason.PERMISSION)
NO_CHANGE = (None, None)
TYPES: dict[str, tuple[Activity | None, ActivityReason | None]] = {
    "permission_prompt": NEEDS_PERMISSION,
    "worker_permission_prompt": NEEDS_PERMISSION,
    "elicitation_dialog": (Activity.NEEDS_INPUT, ActivityReason.ELICITATION),
    "elicitation_url_dialog": (Activity.NEEDS_INPUT, ActivityReason.ELICITATION),
    "elicitation_response": NO_CHANGE,  # the person answered: not a new question
    "elicitation_complete": NO_CHANGE,
    "agent_needs_input": (Activity.NEEDS_INPUT, ActivityReason.QUESTION),
    "agent_completed": NO_CHANGE,  # another (background) session's end: not this pane's
    "idle_prompt": NO_CHANGE,
    "auth_success": NO_CHANGE,
    "auth_storage_failure": NO_CHANGE,
    "computer_use_exit": NO_CHANGE,
    "plugin_notification": NO_CHANGE,
    "push_notification": NO_CHANGE,
}
"""Every type Claude Code 2.1.332 sends -> (activity, reason)."""


def _notification(notification_type: str, message: str = "words") -> str:
    return json.dumps({"session_id": SID, "cwd": "/x", "prompt_id": "p-1",
                       "hook_event_name": "Notification", "message": message,
                       "notification_type": notification_type})


@pytest.mark.parametrize(("notification_type", "expected"), TYPES.items(), ids=list(TYPES))
def test_each_notification_type_of_the_current_cli(notification_type, expected):
    parsed = parse_hook("claude", "Notification", _notification(notification_type))
    assert (parsed.kind, parsed.activity, parsed.activity_reason) == \
        (HookKind.NOTIFICATION, *expected)
    assert parsed.notification_type == notification_type
    assert "words" not in repr(parsed)  # the message is content: never kept


def test_an_unknown_future_type_changes_nothing():
    parsed = parse_hook("claude", "Notification", _notification("agent_needs_coffee"))
    assert (parsed.activity, parsed.activity_reason) == NO_CHANGE


def test_a_background_agents_end_never_makes_the_pane_idle():
    """The agents view sends agent_completed under its own pane's session id when a
    background session ends, even while this pane's turn runs: if it said ready, a
    control line could be typed into a pane mid-turn. Only a Stop says ready."""
    parsed = parse_hook("claude", "Notification",
                        _notification("agent_completed", "build-fix finished"))
    assert parsed.kind is not HookKind.TURN_STOPPED and not parsed.changes_activity


def test_the_recorded_mid_turn_notice_is_needs_input():
    """2.1.332's own payload, recorded against the stand-in behind a "gateway" that does
    not pass the service's check through (``tests.realcli.record_hooks``)."""
    lines = [line.split("\t", 1)[1] for line in
             (FIXTURES / "claude-2.1.332.tsv").read_text(encoding="utf-8").splitlines()
             if line.startswith("Notification\t") and AGENT_NEEDS_INPUT in line]
    assert lines, "2.1.332's recording holds its agent_needs_input notice"
    for line in lines:
        payload = json.loads(line)
        parsed = parse_hook("claude", "Notification", line)
        assert (parsed.activity, parsed.activity_reason) == \
            (Activity.NEEDS_INPUT, ActivityReason.QUESTION)
        assert parsed.turn_id == payload["prompt_id"]  # mid-turn: it names the turn
        assert payload["message"] not in repr(parsed)
