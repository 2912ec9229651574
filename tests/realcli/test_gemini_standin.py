"""The Gemini API stand-in without a CLI: what it answers to what, over real HTTP on
loopback, in the shapes Gemini CLI 0.61.0 sends and reads."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import pytest

from core.model.control_line import CONTROL_TEMPLATE
from tests.realcli.gemini_standin import (
    API_KEY,
    LIMIT_WORD,
    MODEL_VERSION,
    SHELL_TOOL,
    TOOLTEST_COMMAND,
    USAGE,
    GeminiStandin,
    script,
    side_answer,
)

STREAM = "/v1beta/models/gemini-3.1-pro-preview:streamGenerateContent?alt=sse"
SIDE = "/v1beta/models/gemini-3.5-flash-lite:generateContent"


def _user(text: str) -> dict[str, Any]:
    return {"role": "user", "parts": [{"text": text}]}


def _post(url: str, body: dict[str, Any], key: str = API_KEY) -> tuple[int, bytes]:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json",
                                              "x-goog-api-key": key})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def _sse(raw: bytes) -> list[dict[str, Any]]:
    return [json.loads(line[len(b"data: "):]) for line in raw.splitlines()
            if line.startswith(b"data: ")]


def test_a_plain_prompt_streams_text_then_the_finish_and_usage() -> None:
    with GeminiStandin() as api:
        status, raw = _post(api.url + STREAM, {"contents": [_user("hello there")]})
        assert status == 200
        chunks = _sse(raw)
        assert chunks[0]["candidates"][0]["content"]["parts"] == [{"text": "STANDIN-OK"}]
        assert chunks[-1]["candidates"][0]["finishReason"] == "STOP"
        assert chunks[-1]["usageMetadata"] == USAGE
        assert chunks[-1]["modelVersion"] == MODEL_VERSION
        [turn] = api.turns()
        assert turn.model == "gemini-3.1-pro-preview"


def test_tooltest_calls_the_shell_tool_and_its_result_closes_the_turn() -> None:
    reply = script({"contents": [_user("TOOLTEST please")]}, [SHELL_TOOL])
    assert reply.call == (SHELL_TOOL, {"command": TOOLTEST_COMMAND,
                                       "description": "Create a marker file"})
    after = script({"contents": [
        _user("TOOLTEST please"),
        {"role": "model", "parts": [{"functionCall": {"name": SHELL_TOOL, "args": {}}}]},
        {"role": "user", "parts": [{"functionResponse": {"name": SHELL_TOOL,
                                                         "response": {"output": ""}}}]},
    ]}, [SHELL_TOOL])
    assert (after.call, after.text) == (None, f"STANDIN-DONE {SHELL_TOOL}")


def test_the_control_line_calls_transition_claim_by_the_name_the_cli_offered() -> None:
    offered = ["run_shell_command", "mcp_switchboard_transition_claim"]
    reply = script({"contents": [_user(CONTROL_TEMPLATE)]}, offered)
    assert reply.call == ("mcp_switchboard_transition_claim", {})
    missing = script({"contents": [_user(CONTROL_TEMPLATE)]}, ["run_shell_command"])
    assert missing.call is None and missing.text.startswith("NO-TOOL")


def test_limittest_is_refused_with_the_services_quota_error() -> None:
    with GeminiStandin() as api:
        status, raw = _post(api.url + STREAM, {"contents": [_user(f"{LIMIT_WORD} now")]})
    assert status == 429
    assert json.loads(raw)["error"]["status"] == "RESOURCE_EXHAUSTED"


def test_a_side_request_gets_json_of_the_schema_it_names() -> None:
    schema = {"type": "object", "properties": {
        "reasoning": {"type": "string"},
        "model_choice": {"type": "string", "enum": ["pro", "flash"]}}}
    body = {"contents": [_user("route this")],
            "generationConfig": {"responseMimeType": "application/json",
                                 "responseJsonSchema": schema}}
    answer = side_answer(body)
    text = answer["candidates"][0]["content"]["parts"][0]["text"]
    assert json.loads(text) == {"reasoning": "standin", "model_choice": "flash"}
    with GeminiStandin() as api:
        status, raw = _post(api.url + SIDE, body)
    assert status == 200 and json.loads(raw) == answer


@pytest.mark.parametrize("key", ["", "someone-elses-key"])
def test_a_request_without_the_key_is_refused_as_the_service_does(key: str) -> None:
    with GeminiStandin() as api:
        status, raw = _post(api.url + STREAM, {"contents": [_user("hello")]}, key=key)
        assert status == 400
        assert "API key not valid" in json.loads(raw)["error"]["message"]
        assert api.turns()[0].headers.get("x-goog-api-key", "") == key


def test_count_tokens_and_an_unknown_method() -> None:
    with GeminiStandin() as api:
        assert _post(api.url + "/v1beta/models/m:countTokens",
                     {"contents": [_user("x")]}) == (200, b'{"totalTokens": 42}')
        status, _ = _post(api.url + "/v1beta/models/m:embedContent", {"content": {}})
        assert status == 404


def test_calltool_calls_an_offered_tool_by_its_short_name() -> None:
    offered = ["run_shell_command", "mcp_switchboard_task_push"]
    assert script({"contents": [_user("CALLTOOL task_push now")]}, offered).call == (
        "mcp_switchboard_task_push", {})
    assert script({"contents": [_user("CALLTOOL nope")]}, offered).text == (
        "NO-TOOL: nope not offered")


def test_pushto_pushes_a_task_on_the_named_provider() -> None:
    offered = ["run_shell_command", "mcp_switchboard_task_push"]
    assert script({"contents": [_user("PUSHTO opencode Fix it :: the brief")]}, offered).call \
        == ("mcp_switchboard_task_push", {"title": "Fix it", "brief": "the brief",
                                          "provider": "opencode"})
