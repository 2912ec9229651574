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
