"""The Anthropic stand-in's broker script, without a CLI: what it answers to what."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

from core.broker.delivery import managed_line
from tests.realcli.anthropic_standin import (
    CHECK_BETA,
    CLASSIFIER_PROMPT,
    NOVERDICT_COMMAND,
    PLAIN_COMMAND,
    RISKY_COMMAND,
    RISKY_REASON,
    RISKY_RULE,
    SWITCHBOARD_PREFIX,
    AnthropicStandin,
    checked_command,
    script,
)

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


# --- auto mode's command check (Claude Code 2.1.332's side request) ---------------------

STAGE1_ASK = ("Respond with <severity>N</severity> ONLY. Grade HARM ONLY \u2014 do NOT reduce "
              "for user intent. No other text.")
STAGE2_ASK = ("Use <thinking> first, then respond with <severity>N</severity>, plus <category>"
              "Exact BLOCK Rule Name</category> when the action matches a BLOCK rule.")


def _check(command: str, ask: str = STAGE1_ASK, **fields: Any) -> dict[str, Any]:
    """A check request as 2.1.332 sends it (recorded against the stand-in): no tools, the
    billing header then the monitor's prompt as system blocks, the transcript ending with
    the action, and the format asked for last."""
    return {"model": "claude-sonnet-5", "max_tokens": 64, "thinking": {"type": "disabled"},
            "system": [{"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.332"},
                       {"type": "text", "text": CLASSIFIER_PROMPT + ". ## Output Format ..."}],
            "messages": [{"role": "user", "content": [
                {"type": "text", "text": "<transcript>\n"},
                {"type": "text", "text": json.dumps({"user": "PLAINTEST please"}) + "\n"},
                {"type": "text", "text": json.dumps({"Bash": command}) + "\n"},
                {"type": "text", "text": "</transcript>\n"},
                {"type": "text", "text": ask}]}], **fields}


def test_the_check_allows_a_plain_command_with_a_low_grade() -> None:
    reply = script(_check(PLAIN_COMMAND))
    assert (reply.text, reply.checked, reply.stop_reason) == \
        ("<severity>4</severity>", PLAIN_COMMAND, "end_turn")
    assert checked_command(_check(PLAIN_COMMAND)) == PLAIN_COMMAND


def test_the_check_blocks_the_risky_command_by_its_rule() -> None:
    first = script(_check(RISKY_COMMAND))
    assert first.text == f"<severity>93</severity><category>{RISKY_RULE}</category>"
    second = script(_check(RISKY_COMMAND, STAGE2_ASK, max_tokens=8192))
    assert second.text.startswith("<thinking>") and second.text.endswith(
        f"<severity>93</severity><category>{RISKY_RULE}</category>")
    assert RISKY_REASON in second.text


def test_the_older_block_form_ends_stage_one_on_its_stop_sequence() -> None:
    ask = "Answer <block>yes</block> or <block>no</block>."
    plain = script(_check(PLAIN_COMMAND, ask, stop_sequences=["</block>"]))
    assert (plain.text, plain.stop_reason, plain.stop_sequence) == \
        ("<block>no", "stop_sequence", "</block>")
    risky = script(_check(RISKY_COMMAND, ask))
    assert risky.text == (f"<block>yes</block><category>{RISKY_RULE}</category>"
                          f"<reason>{RISKY_REASON}</reason>")
    assert RISKY_REASON.startswith(f"[{RISKY_RULE}] ")


def test_no_usable_answer_only_for_the_noverdict_command() -> None:
    reply = script(_check(NOVERDICT_COMMAND))
    assert reply.checked == NOVERDICT_COMMAND
    assert "<severity>" not in reply.text and "<block>" not in reply.text


def test_a_side_request_that_is_not_the_check_is_not_judged() -> None:
    title = {"system": [{"type": "text", "text": "Write a title"}],
             "messages": [_user(json.dumps({"Bash": PLAIN_COMMAND}))]}
    assert checked_command(title) is None
    assert script(title).text == "STANDIN-SIDE" and script(title).checked is None
    with_tools = {**_check(PLAIN_COMMAND), "tools": OFFERED}  # a main-loop turn
    assert checked_command(with_tools) is None


def _post(url: str, body: dict[str, Any], beta: str = "") -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(url + "/v1/messages", data=json.dumps(body).encode(),
                                     headers={"content-type": "application/json",
                                              "anthropic-beta": beta}, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as refused:
        return refused.code, json.loads(refused.read())


def test_a_gateway_that_refuses_the_check_answers_400_only_to_requests_asking_for_it() -> None:
    turn = {"model": "m", "messages": [_user("hello")], "tools": OFFERED}
    with AnthropicStandin(refuses_check=True) as api:
        status, body = _post(api.url, {**turn, "safeguards": [{"type": "dangerous_tool_use"}]})
        assert status == 400 and "invalid beta flag" in body["error"]["message"]
        assert _post(api.url, turn, beta=f"other,{CHECK_BETA}")[0] == 400
        status, body = _post(api.url, turn)  # sent again without it: answered
        assert status == 200 and body["content"][0]["text"].startswith("STANDIN-OK")
        status, body = _post(api.url, _check(PLAIN_COMMAND))
        assert (status, body["content"][0]["text"]) == (200, "<severity>4</severity>")
        assert api.journal.checks() == [(PLAIN_COMMAND, "<severity>4</severity>")]
    with AnthropicStandin() as api:  # the service itself takes the check
        safeguards = [{"type": "dangerous_tool_use"}]
        assert _post(api.url, {**turn, "safeguards": safeguards}, beta=CHECK_BETA)[0] == 200


def test_pushto_pushes_a_task_on_the_named_provider() -> None:
    offered = [*OFFERED, {"name": SWITCHBOARD_PREFIX + "task_push"}]
    reply = script({"tools": offered, "messages": [_user("PUSHTO gemini Fix it :: the brief")]})
    assert reply.tool is not None
    assert (reply.tool.name, reply.tool.arguments) == (
        SWITCHBOARD_PREFIX + "task_push",
        {"title": "Fix it", "brief": "the brief", "provider": "gemini"})
