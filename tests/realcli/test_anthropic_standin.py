"""The Anthropic stand-in's broker script, without a CLI: what it answers to what."""

from __future__ import annotations

import json
from typing import Any

from core.broker.delivery import managed_line
from tests.realcli.anthropic_standin import SWITCHBOARD_PREFIX, script

OFFERED = [{"name": SWITCHBOARD_PREFIX + name} for name in (
    "message_send", "message_poll", "message_ack")] + [{"name": "Bash"}]


def _user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def _called(name: str, tool_id: str) -> dict[str, Any]:
    return {"role": "assistant", "content": [{"type": "tool_use", "id": tool_id,
                                              "name": SWITCHBOARD_PREFIX + name, "input": {}}]}


def _result(tool_id: str, output: dict[str, Any]) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool_id,
                                         "content": [{"type": "text",
                                                      "text": json.dumps(output)}]}]}


def test_msg_sends_to_the_named_recipient() -> None:
    reply = script({"tools": OFFERED, "messages": [_user("MSG workspace :: review it")]})
    assert reply.tool is not None
    assert (reply.tool.name, reply.tool.arguments) == (
        SWITCHBOARD_PREFIX + "message_send", {"to": "workspace", "text": "review it"})


def test_a_typed_notification_polls_then_acks_the_announced_message() -> None:
    notice = _user(managed_line(3, "Fix the bug"))
    reply = script({"tools": OFFERED, "messages": [notice]})
    assert reply.tool is not None and reply.tool.name == SWITCHBOARD_PREFIX + "message_poll"
    polled = {"ok": True, "messages": [{"message_id": 3, "text": "review it"}]}
    reply = script({"tools": OFFERED, "messages": [notice, _called("message_poll", "t1"),
                                                   _result("t1", polled)]})
    assert reply.tool is not None
    assert (reply.tool.name, reply.tool.arguments) == (SWITCHBOARD_PREFIX + "message_ack",
                                                       {"id": 3})
    acked = script({"tools": OFFERED, "messages": [
        notice, _called("message_poll", "t1"), _result("t1", polled),
        _called("message_ack", "t2"), _result("t2", {"ok": True, "message_id": 3})]})
    assert acked.tool is None and acked.text == "STANDIN-ACKED 3"


def test_a_poll_without_the_announced_message_says_so() -> None:
    notice = _user(managed_line(3, "Fix the bug"))
    reply = script({"tools": OFFERED, "messages": [
        notice, _called("message_poll", "t1"), _result("t1", {"ok": True, "messages": []})]})
    assert reply.tool is None and reply.text.startswith("STANDIN-POLL-MISMATCH")
