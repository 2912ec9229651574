"""SubagentStart/SubagentStop of both CLIs: subscribed, parsed to ids, never activity."""

from __future__ import annotations

import json

import pytest

from core.model.session_enums import Provider
from core.providers.hooks import (
    CLAUDE_HOOK_EVENTS,
    CODEX_HOOK_EVENTS,
    HookKind,
    parse_hook,
)

SID = "5e99a90b-28b7-4b4f-a775-ed6f2fda6f44"


@pytest.mark.parametrize("provider", [Provider.CLAUDE, Provider.CODEX])
@pytest.mark.parametrize(("event", "kind"), [("SubagentStart", HookKind.SUBAGENT_STARTED),
                                             ("SubagentStop", HookKind.SUBAGENT_STOPPED)])
def test_subagent_events_carry_the_ids_and_change_no_activity(
        provider: Provider, event: str, kind: HookKind) -> None:
    assert event in (CLAUDE_HOOK_EVENTS if provider is Provider.CLAUDE else CODEX_HOOK_EVENTS)
    body = {"session_id": SID, "hook_event_name": event, "agent_id": "a5f2c9",
            "agent_type": "general-purpose", "prompt": "secret task text",
            "last_assistant_message": "secret reply"}
    parsed = parse_hook(provider, event, json.dumps(body))
    assert (parsed.kind, parsed.activity, parsed.activity_reason, parsed.runtime) == \
        (kind, None, None, None)
    assert (parsed.subagent_id, parsed.subagent_type) == ("a5f2c9", "general-purpose")
    assert "secret" not in repr(parsed)  # ids only, never the subagent's words


def test_a_strange_agent_id_is_dropped_not_fatal() -> None:
    body = {"session_id": SID, "hook_event_name": "SubagentStart",
            "agent_id": "has spaces\nand a newline", "agent_type": "x" * 500}
    parsed = parse_hook("claude", "SubagentStart", json.dumps(body))
    assert (parsed.subagent_id, parsed.subagent_type) == (None, None)


def test_other_events_carry_no_subagent() -> None:
    body = {"session_id": SID, "hook_event_name": "Stop", "agent_id": "a1"}
    assert parse_hook("claude", "Stop", json.dumps(body)).subagent_id is None


CHILD = "01a24d37-c5a5-76d0-b60d-e4c62bd9c4f0"
TURN = "01a24d37-c5b0-7830-b009-62a39249e52d"


@pytest.mark.parametrize("provider", [Provider.CLAUDE, Provider.CODEX])
@pytest.mark.parametrize("event", ["UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop"])
def test_a_subagents_own_turn_does_not_say_what_the_lead_does(
        provider: Provider, event: str) -> None:
    """Codex 0.171.0 sends the subagent's UserPromptSubmit under the lead's session id with
    its ``agent_id`` (measured; recorded shape): it must not make the lead working (a
    subagent may start after the lead's Stop, and nothing of the subagent's ends it)."""
    body = {"session_id": SID, "turn_id": TURN, "hook_event_name": event,
            "agent_id": CHILD, "agent_type": "default", "prompt": "You are a helper",
            "tool_name": "exec_command", "tool_use_id": "call_9"}
    parsed = parse_hook(provider, event, json.dumps(body))
    assert (parsed.activity, parsed.activity_reason) == (None, None)
    lead = {k: v for k, v in body.items() if k not in ("agent_id", "agent_type")}
    assert parse_hook(provider, event, json.dumps(lead)).activity is not None


@pytest.mark.parametrize("provider", [Provider.CLAUDE, Provider.CODEX])
def test_a_subagents_permission_question_still_needs_the_person(provider: Provider) -> None:
    body = {"session_id": SID, "turn_id": TURN, "hook_event_name": "PermissionRequest",
            "agent_id": CHILD, "tool_name": "exec_command", "tool_use_id": "call_9"}
    parsed = parse_hook(provider, "PermissionRequest", json.dumps(body))
    assert parsed.activity is not None and parsed.activity.value == "needs_input"
