"""A minimal MCP stdio server exposing the three agent tools.

Newline-delimited JSON-RPC 2.0 (the MCP stdio transport): initialize,
tools/list and tools/call. Authority still comes only from the capability in
the server process's environment, which the provider inherits from its pane.
"""

from __future__ import annotations

import json
from typing import Any, BinaryIO

from core.errors import SwitchboardError

PROTOCOL_VERSION = "2025-06-18"

TOOLS: list[dict[str, Any]] = [
    {"name": "task_push",
     "description": "Hand an independent outcome to a new child task. End your turn after.",
     "inputSchema": {"type": "object", "required": ["title", "brief"], "properties": {
         "title": {"type": "string"}, "brief": {"type": "string"},
         "purpose": {"type": "string"},
         "provider": {"type": "string", "enum": ["claude", "codex"]}}}},
    {"name": "task_complete_return",
     "description": "Finish this task and return a summary and next action to the parent.",
     "inputSchema": {"type": "object", "required": ["summary", "next_action"], "properties": {
         "summary": {"type": "string"}, "next_action": {"type": "string"}}}},
    {"name": "transition_claim",
     "description": "Claim your brief or handoff and follow the returned instructions.",
     "inputSchema": {"type": "object", "properties": {}}},
]


def _call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    from core import agent_tools

    if name == "task_push":
        return agent_tools.task_push(arguments["title"], arguments["brief"],
                                     arguments.get("purpose"), arguments.get("provider"))
    if name == "task_complete_return":
        return agent_tools.task_complete_return(arguments["summary"], arguments["next_action"])
    if name == "transition_claim":
        return agent_tools.transition_claim()
    raise KeyError(name)


def handle(message: dict[str, Any]) -> dict[str, Any] | None:
    method = message.get("method")
    msg_id = message.get("id")
    if msg_id is None:
        return None  # notification
    if method == "initialize":
        result: Any = {"protocolVersion": PROTOCOL_VERSION,
                       "capabilities": {"tools": {}},
                       "serverInfo": {"name": "switchboard", "version": "0.1.0"}}
    elif method == "tools/list":
        result = {"tools": TOOLS}
    elif method == "tools/call":
        params = message.get("params") or {}
        try:
            output = _call(params.get("name", ""), params.get("arguments") or {})
            result = {"content": [{"type": "text", "text": json.dumps(output)}],
                      "isError": False}
        except KeyError as exc:
            return {"jsonrpc": "2.0", "id": msg_id,
                    "error": {"code": -32602, "message": f"unknown tool or argument {exc}"}}
        except SwitchboardError as exc:
            result = {"content": [{"type": "text", "text": f"{exc.code}: {exc.message}"}],
                      "isError": True}
    elif method == "ping":
        result = {}
    else:
        return {"jsonrpc": "2.0", "id": msg_id,
                "error": {"code": -32601, "message": f"method not found: {method}"}}
    return {"jsonrpc": "2.0", "id": msg_id, "result": result}


def serve(stdin: BinaryIO, stdout: BinaryIO) -> None:
    for line in stdin:
        if not line.strip():
            continue
        try:
            message = json.loads(line)
        except ValueError:
            reply: dict[str, Any] | None = {
                "jsonrpc": "2.0", "id": None,
                "error": {"code": -32700, "message": "parse error"}}
        else:
            reply = handle(message)
        if reply is not None:
            stdout.write(json.dumps(reply).encode("utf-8") + b"\n")
            stdout.flush()
