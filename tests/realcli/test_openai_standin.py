"""The Responses API stand-in on its own: the script, the event stream, the record.

Request bodies here have the shape Codex 0.171.0 sends (seen in the journey
test): MCP tools inside a ``namespace`` tool, the environment context as a user
message starting with ``<``, tool results as ``function_call_output`` items.
"""

from __future__ import annotations

import json
import urllib.request

from tests.realcli.openai_standin import CONTROL_PREFIX, OpenAIStandin

TOOLS = [
    {"type": "function", "name": "exec_command", "parameters": {}},
    {"type": "namespace", "name": "mcp__switchboard", "tools": [
        {"type": "function", "name": "task_push"},
        {"type": "function", "name": "task_complete_return"},
        {"type": "function", "name": "transition_claim"}]},
]


def _user(text: str) -> dict:
    return {"type": "message", "role": "user",
            "content": [{"type": "input_text", "text": text}]}


def _post(standin: OpenAIStandin, body: dict) -> list[dict]:
    request = urllib.request.Request(
        standin.base_url + "/responses", data=json.dumps(body).encode(), method="POST",
        headers={"Content-Type": "application/json", "Authorization": "Bearer sk-test"})
    direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback only
    with direct.open(request, timeout=10) as response:
        assert response.headers["Content-Type"] == "text/event-stream"
        text = response.read().decode()
    events = []
    for block in text.strip().split("\n\n"):
        name, data = block.split("\n")
        event = json.loads(data.removeprefix("data: "))
        assert name == f"event: {event['type']}"
        events.append(event)
    return events


def _done_items(events: list[dict]) -> list[dict]:
    return [e["item"] for e in events if e["type"] == "response.output_item.done"]


def test_push_calls_the_namespaced_tool_then_ends_the_turn() -> None:
    with OpenAIStandin() as standin:
        history = [_user("<environment_context>cwd</environment_context>"),
                   _user("PUSH Fix it :: make the test pass")]
        events = _post(standin, {"model": "m", "tools": TOOLS, "input": history})
        assert events[0]["type"] == "response.created"
        assert events[-1]["type"] == "response.completed"
        [call] = _done_items(events)
        assert (call["type"], call["namespace"], call["name"]) == (
            "function_call", "mcp__switchboard", "task_push")
        assert json.loads(call["arguments"]) == {"title": "Fix it",
                                                 "brief": "make the test pass"}
        history += [call, {"type": "function_call_output", "call_id": call["call_id"],
                           "output": '{"ok": true}'}]
        [message] = _done_items(_post(standin, {"model": "m", "tools": TOOLS,
                                                "input": history}))
        assert message["type"] == "message"
        recorded = standin.responses_requests()
        assert [r.bearer for r in recorded] == ["sk-test", "sk-test"]
        assert recorded[0].tool_names() == ["exec_command", "task_push",
                                            "task_complete_return", "transition_claim"]


def test_the_control_line_claims_and_names_what_it_got() -> None:
    with OpenAIStandin() as standin:
        history = [_user(CONTROL_PREFIX + " and follow the returned transition instructions.")]
        [call] = _done_items(_post(standin, {"tools": TOOLS, "input": history}))
        assert call["name"] == "transition_claim"
        output = [{"type": "input_text",
                   "text": json.dumps({"kind": "handoff", "title": "Child"})}]
        history += [call, {"type": "function_call_output", "call_id": call["call_id"],
                           "output": output}]
        [message] = _done_items(_post(standin, {"tools": TOOLS, "input": history}))
        assert message["content"][0]["text"].startswith("Claimed handoff: Child")


def test_tooltest_asks_for_an_escalated_command_and_plain_text_just_answers() -> None:
    with OpenAIStandin() as standin:
        [call] = _done_items(_post(standin, {"tools": TOOLS, "input": [_user("TOOLTEST")]}))
        arguments = json.loads(call["arguments"])
        assert call["name"] == "exec_command"
        assert arguments["sandbox_permissions"] == "require_escalated"
        [reply] = _done_items(_post(standin, {"tools": TOOLS, "input": [_user("hi")]}))
        assert reply["content"][0]["text"] == "Stand-in reply to: hi"


def test_a_tool_that_was_not_offered_is_said_not_called() -> None:
    with OpenAIStandin() as standin:
        [reply] = _done_items(_post(standin, {"tools": TOOLS[:1],
                                              "input": [_user("PUSH a :: b")]}))
        assert reply["type"] == "message"
        assert "no tool ending in 'task_push'" in reply["content"][0]["text"]


def test_a_typed_notification_polls_then_acks_the_announced_message() -> None:
    from core.broker.delivery import managed_line

    tools = [*TOOLS, {"type": "namespace", "name": "mcp__switchboard", "tools": [
        {"type": "function", "name": "message_poll"},
        {"type": "function", "name": "message_ack"}]}]
    with OpenAIStandin() as standin:
        history = [_user(managed_line(4, "Fix the bug"))]
        [poll] = _done_items(_post(standin, {"tools": tools, "input": history}))
        assert poll["name"] == "message_poll"
        polled = {"ok": True, "messages": [{"message_id": 4, "text": "look"}]}
        history += [poll, {"type": "function_call_output", "call_id": poll["call_id"],
                           "output": json.dumps(polled)}]
        [ack] = _done_items(_post(standin, {"tools": tools, "input": history}))
        assert (ack["name"], json.loads(ack["arguments"])) == ("message_ack", {"id": 4})
        history += [ack, {"type": "function_call_output", "call_id": ack["call_id"],
                          "output": json.dumps({"ok": True, "message_id": 4})}]
        [said] = _done_items(_post(standin, {"tools": tools, "input": history}))
        assert said["content"][0]["text"] == "Acked 4"
