"""`switchboard mcp` as a real subprocess speaking newline-delimited JSON-RPC.

Protocol shape (initialize, tools/list, ping, notifications, every error code)
is checked without a registry; tools/call runs against a real registry with a
launched fake-provider surface and a capability minted for it (see
tests/core/test_hook_handler.py), the way a provider's MCP client would call it
from inside the pane.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from itertools import count
from pathlib import Path
from typing import Any

import pytest

from core.agent.mcp_server import PROTOCOL_VERSIONS, call_tool
from core.config.capabilities import ENV_CAPABILITY, ENV_GENERATION, ENV_HOME, digest
from core.hooks.hook_handler import handle_hook
from tests.core.test_hook_handler import LiveSurface, payload_for

REPO = Path(__file__).resolve().parents[2]
REPLY_TIMEOUT_S = 30.0


class McpProcess:
    """One `python -m navigator.cli mcp` child; replies are read on a thread."""

    def __init__(self, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "navigator.cli", "mcp"], cwd=REPO, env=env,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.replies: queue.Queue[bytes] = queue.Queue()
        self.ids = count(1)
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.replies.put(line)

    def send_raw(self, line: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + b"\n")
        self.proc.stdin.flush()

    def send(self, message: dict[str, Any]) -> None:
        self.send_raw(json.dumps(message).encode())

    def reply(self) -> dict[str, Any]:
        try:
            line = self.replies.get(timeout=REPLY_TIMEOUT_S)
        except queue.Empty:
            stderr = self.proc.stderr.read() if self.proc.poll() is not None else b""
            raise AssertionError(f"no reply from the MCP server; stderr: {stderr!r}") from None
        assert line.endswith(b"\n") and line.count(b"\n") == 1
        return json.loads(line)

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        msg_id = next(self.ids)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        answer = self.reply()
        assert answer["id"] == msg_id and answer["jsonrpc"] == "2.0", answer
        return answer

    def call(self, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = arguments
        answer = self.request("tools/call", params)
        assert "result" in answer, answer
        return answer["result"]

    def alive(self) -> bool:
        return self.request("ping")["result"] == {}

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
            for stream in (self.proc.stdout, self.proc.stderr):
                if stream is not None:
                    stream.close()


def base_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("TMUX", "TMUX_PANE", ENV_CAPABILITY, ENV_GENERATION)}
    env.update(extra)
    return env


def tool_text(result: dict[str, Any]) -> str:
    assert [c["type"] for c in result["content"]] == ["text"]
    return result["content"][0]["text"]


def ok_output(result: dict[str, Any]) -> dict[str, Any]:
    assert result["isError"] is False, tool_text(result)
    assert json.loads(tool_text(result)) == result["structuredContent"]
    return result["structuredContent"]


def error_text(result: dict[str, Any]) -> str:
    assert result["isError"] is True, result
    return tool_text(result)


@pytest.fixture
def bare(tmp_path: Path) -> Iterator[McpProcess]:
    """A server with no capability and an empty home (no registry at all)."""
    server = McpProcess(base_env(**{ENV_HOME: str(tmp_path)}))
    yield server
    server.close()


def pane_env(live: LiveSurface, **changes: str | None) -> dict[str, str]:
    """What a provider started in the launched pane hands its MCP server."""
    pane = live.engine.conn.execute(
        "SELECT pane_id FROM agent_capabilities WHERE capability_digest = ?",
        (digest(live.raw),)).fetchone()[0]
    env = base_env(**live.env(), TMUX_PANE=pane)
    env.update({k: v for k, v in changes.items() if v is not None})
    for key in [k for k, v in changes.items() if v is None]:
        env.pop(key, None)
    return env




# ------------------------------------------------------------------ protocol


def test_initialize_negotiates_the_protocol_version(bare: McpProcess) -> None:
    answer = bare.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                         "clientInfo": {"name": "test", "version": "1"}})
    result = answer["result"]
    assert result["protocolVersion"] == "2025-06-18"
    assert result["serverInfo"]["name"] == "switchboard"
    assert result["capabilities"] == {"tools": {"listChanged": False}}
    bare.send({"jsonrpc": "2.0", "method": "notifications/initialized"})  # no reply
    for older in PROTOCOL_VERSIONS[1:]:
        assert bare.request("initialize", {"protocolVersion": older})["result"][
            "protocolVersion"] == older
    assert bare.request("initialize", {"protocolVersion": "1999-01-01"})["result"][
        "protocolVersion"] == PROTOCOL_VERSIONS[0]
    assert bare.alive()


def test_tools_list_has_four_tools_with_schemas(bare: McpProcess) -> None:
    tools = {t["name"]: t for t in bare.request("tools/list")["result"]["tools"]}
    required = {"task_push": ["title", "brief"],
                "task_complete_return": ["summary", "next_action"], "transition_claim": [],
                "transition_cancel": []}
    assert set(required) <= set(tools)
    required.update({"message_send": ["to", "text"], "message_broadcast": ["text"],
                     "message_poll": [], "message_ack": ["id"], "message_wait": []})
    assert {name for name in tools if name.startswith("message_")} == \
        {name for name in required if name.startswith("message_")}
    for name, tool in tools.items():
        if name not in required:
            continue  # another helper's tool, checked by its own test
        schema = tool["inputSchema"]
        assert tool["description"]
        assert schema["type"] == "object" and schema["additionalProperties"] is False
        assert schema.get("required", []) == required[name]
        assert set(schema.get("required", [])) <= \
            set(schema["properties"])
        # no tool takes authority as an argument
        assert not {"frame_id", "view_id", "pane_id", "pane"} & set(schema["properties"])
    assert tools["task_push"]["inputSchema"]["properties"]["provider"]["enum"] == \
        ["claude", "codex", "gemini", "opencode"]


def test_parse_error_is_32700_and_the_server_keeps_serving(bare: McpProcess) -> None:
    for garbage in (b"{not json", b"\xff\xfe", b"[" * 100_000):
        bare.send_raw(garbage)
        answer = bare.reply()
        assert answer == {"jsonrpc": "2.0", "id": None,
                          "error": {"code": -32700, "message": "parse error"}}
    assert bare.alive()


def test_unknown_method_is_32601(bare: McpProcess) -> None:
    answer = bare.request("resources/list")
    assert answer["error"]["code"] == -32601
    assert "resources/list" in answer["error"]["message"]
    bare.send({"jsonrpc": "2.0", "method": "no/such/notification"})  # ignored, no reply
    assert bare.alive()


@pytest.mark.parametrize("message, reply_id", [
    ([1, 2], None),                                                    # batch
    (7, None),                                                         # not an object
    ({"jsonrpc": "2.0", "id": 5}, 5),                                  # no method
    ({"jsonrpc": "1.0", "id": 6, "method": "ping"}, 6),                # wrong version
    ({"jsonrpc": "2.0", "id": None, "method": "ping"}, None),          # null id
    ({"jsonrpc": "2.0", "id": [1], "method": "ping"}, None),           # array id
])
def test_invalid_requests_are_32600(bare: McpProcess, message: Any, reply_id: Any) -> None:
    bare.send(message)
    answer = bare.reply()
    assert answer["error"]["code"] == -32600 and answer["id"] == reply_id, answer
    assert bare.alive()


def test_unknown_tool_and_bad_params_are_32602(bare: McpProcess) -> None:
    assert bare.request("tools/call", {"name": "rm_rf"})["error"]["code"] == -32602
    assert bare.request("tools/call", {})["error"]["code"] == -32602
    bare.send({"jsonrpc": "2.0", "id": 99, "method": "tools/call", "params": [1]})
    assert bare.reply()["error"]["code"] == -32602
    assert bare.alive()


@pytest.mark.parametrize("name, arguments, why", [
    ("task_push", {"title": "t"}, "missing required argument(s): brief"),
    ("task_push", {"title": "t", "brief": 3}, "brief must be a string"),
    ("task_push", {"title": "", "brief": "b"}, "title must not be empty"),
    ("task_push", {"title": "t", "brief": "b", "provider": "mistral"},
     "provider must be one of claude, codex, gemini, opencode"),
    ("task_push", {"title": "t", "brief": "b", "frame_id": "x"},
     "unexpected argument(s): frame_id"),
    ("task_complete_return", {"summary": "s"}, "missing required argument(s): next_action"),
    ("transition_claim", {"view_id": "v"}, "unexpected argument(s): view_id"),
    ("transition_claim", "not-an-object", "arguments must be an object"),
])
def test_bad_arguments_are_tool_errors(bare: McpProcess, name: str, arguments: Any,
                                       why: str) -> None:
    assert error_text(bare.call(name, arguments)) == f"bad_arguments: {why}"


def test_no_capability_is_a_tool_error_for_every_tool(bare: McpProcess) -> None:
    for name, arguments in (("transition_claim", None),
                            ("task_push", {"title": "t", "brief": "b"}),
                            ("task_complete_return", {"summary": "s", "next_action": "n"})):
        text = error_text(bare.call(name, arguments))
        assert text.startswith("unauthorized: no Switchboard capability"), text
    assert bare.alive()


def test_an_unexpected_exception_is_a_tool_error() -> None:
    def explode(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        raise RuntimeError("disk on fire")

    result = call_tool("transition_claim", {}, explode)
    assert result["isError"] is True
    assert tool_text(result) == "internal_error: RuntimeError: disk on fire"


# ------------------------------------------------------------------ tools/call, real registry


def test_every_tool_against_a_real_registry(live: LiveSurface) -> None:
    server = McpProcess(pane_env(live))
    try:
        server.request("initialize", {"protocolVersion": "2025-06-18"})
        claim = ok_output(server.call("transition_claim"))
        assert claim["kind"] == "none" and claim["ok"] is True
        assert claim["frame_id"] == live.engine.conn.execute(
            "SELECT frame_id FROM agent_capabilities WHERE capability_digest = ?",
            (digest(live.raw),)).fetchone()[0]

        # the parent is mid-turn, so the push waits for its Stop
        assert handle_hook("claude", "UserPromptSubmit", payload_for(live, "UserPromptSubmit"),
                           live.env()).activity == "working"
        pushed = ok_output(server.call("task_push", {"title": "Fix the bug",
                                                     "brief": "Make test_foo pass",
                                                     "purpose": "green build"}))
        assert pushed["state"] == "prepared" and pushed["child_frame_id"]
        again = ok_output(server.call("task_push", {"title": "Fix the bug",
                                                    "brief": "Make test_foo pass",
                                                    "purpose": "green build"}))
        assert again["transition_id"] == pushed["transition_id"]  # idempotent by content
        text = error_text(server.call("task_push", {"title": "Fix the bug",
                                                    "brief": "Make test_foo pass"}))
        assert text.startswith("request_conflict: a task with this title and brief"), text
        rows = live.engine.conn.execute(
            "SELECT transition_id, state FROM view_transitions WHERE kind = 'push'").fetchall()
        assert [tuple(r) for r in rows] == [(pushed["transition_id"], "prepared")]
        child = live.engine.conn.execute("SELECT title, created_by FROM frames"
                                         " WHERE frame_id = ?",
                                         (pushed["child_frame_id"],)).fetchone()
        assert tuple(child) == ("Fix the bug", "agent")

        # the workspace frame has no parent: a refusal, as a tool error
        text = error_text(server.call("task_complete_return",
                                      {"summary": "done", "next_action": "merge"}))
        assert text.startswith("not_a_task:"), text
        assert live.engine.conn.execute(
            "SELECT COUNT(*) FROM view_transitions WHERE kind = 'complete_return'"
        ).fetchone()[0] == 0
        assert server.alive()
    finally:
        server.close()


@pytest.mark.parametrize("changes, expected", [
    ({"TMUX_PANE": "%999"}, "unauthorized: capability is bound to another pane"),
    ({ENV_GENERATION: "an-older-generation"},
     "unauthorized: this pane belongs to an older Switchboard generation"),
    ({ENV_CAPABILITY: "sbcap1_" + "A" * 43}, "unauthorized: unknown capability"),
])
def test_foreign_callers_get_tool_errors_and_nothing_changes(
        live: LiveSurface, changes: dict[str, str], expected: str) -> None:
    def snapshot() -> list[tuple]:
        return [tuple(r) for r in live.engine.conn.execute(
            "SELECT transition_id, state FROM view_transitions ORDER BY 1")] + \
            [tuple(r) for r in live.engine.conn.execute("SELECT frame_id FROM frames")]

    before = snapshot()
    server = McpProcess(pane_env(live, **changes))
    try:
        for name, arguments in (("transition_claim", None),
                                ("task_push", {"title": "t", "brief": "b"})):
            assert error_text(server.call(name, arguments)).startswith(expected)
    finally:
        server.close()
    assert snapshot() == before
