"""The agent tools' MCP messages: one handler for the home's server and for stdio.

``handle`` answers one JSON-RPC 2.0 message (initialize, tools/list, tools/call,
ping). Launched agents reach it over MCP streamable HTTP through the home's
``switchboard server`` (``core.server``: each ``tools/call`` runs in a process with
that launch's environment). ``serve`` is the same handler over newline-delimited
stdio (``switchboard mcp``): no launch starts it; it is the tools' reference
loop for tests and for a person running a tool by hand in an agent's pane.
Authority comes only from the capability in the calling process's environment; no
tool takes a frame, view or pane argument.

Failure shapes follow MCP: malformed JSON is -32700, a message that is not a
request is -32600, an unknown method -32601, an unknown tool -32602. Anything
that goes wrong *inside* a tool (bad arguments, a refused capability, a
conflict, even an unexpected exception) is a tool result with
``isError: true``, so the model can read it and correct itself, and the server
keeps serving: one bad call must never take the tools away from the agent.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

from core.model.errors import SwitchboardError
from core.model.tool_schemas import BROKER_NAMES, CONTEXT_NAMES, ENV_READY_FILE, TOOLS

# Newest first; an initialize asking for one of these gets it back, anything
# else gets the newest (the client then decides whether it can continue).
PROTOCOL_VERSIONS = ("2025-06-18", "2025-03-26", "2024-11-05")
PROTOCOL_VERSION = PROTOCOL_VERSIONS[0]
SERVER_VERSION = "0.1.0"

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602

_SCHEMAS = {tool["name"]: tool["inputSchema"] for tool in TOOLS}


class ToolArgumentError(Exception):
    """The arguments do not match the tool's input schema."""


def _check_arguments(name: str, arguments: Any) -> dict[str, Any]:
    """Validate against the (flat, string-only) schema we publish in tools/list."""
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise ToolArgumentError("arguments must be an object")
    schema = _SCHEMAS[name]
    properties: dict[str, Any] = schema["properties"]
    unknown = sorted(set(arguments) - set(properties))
    if unknown:
        raise ToolArgumentError(f"unexpected argument(s): {', '.join(unknown)}")
    missing = [key for key in schema.get("required", ()) if key not in arguments]
    if missing:
        raise ToolArgumentError(f"missing required argument(s): {', '.join(missing)}")
    for key, value in arguments.items():
        spec = properties[key]
        if spec.get("type") in ("integer", "number"):
            _check_number(key, value, spec)
            continue
        if not isinstance(value, str):
            raise ToolArgumentError(f"{key} must be a string")
        if len(value) < spec.get("minLength", 0):
            raise ToolArgumentError(f"{key} must not be empty")
        if "enum" in spec and value not in spec["enum"]:
            raise ToolArgumentError(f"{key} must be one of {', '.join(spec['enum'])}")
    return arguments


def _check_number(key: str, value: Any, spec: dict[str, Any]) -> None:
    whole = spec["type"] == "integer"
    if isinstance(value, bool) or not isinstance(value, int | float) or \
            (whole and not float(value).is_integer()):
        raise ToolArgumentError(f"{key} must be {'an integer' if whole else 'a number'}")
    if value < spec.get("minimum", float("-inf")):
        raise ToolArgumentError(f"{key} must be at least {spec['minimum']}")


def _call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    # Each tool module is imported by the call that uses it: every ``tools/call`` is a
    # fresh process (``core.server.call``), and the broker's modules alone cost ~100 ms
    # of imports that a context tool never uses.
    if name in BROKER_NAMES:
        from core.agent import tools_broker

        return tools_broker.call(name, arguments)
    if name in CONTEXT_NAMES:
        from core.agent import tools_context

        return tools_context.call(name, arguments)
    from core.agent import tools as agent_tools

    if name == "task_push":
        return agent_tools.task_push(arguments["title"], arguments["brief"],
                                     arguments.get("purpose"), arguments.get("provider"))
    if name == "task_complete_return":
        return agent_tools.task_complete_return(arguments["summary"], arguments["next_action"])
    if name == "transition_cancel":
        return agent_tools.transition_cancel()
    return agent_tools.transition_claim()


def _tool_error(text: str) -> dict[str, Any]:
    """An error the agent's CLI shows in its terminal: any argument or agents' text it
    echoes is spelled out (``core.model.text``), like the Switchboard CLI's own."""
    from core.model.text import shown_block

    return {"content": [{"type": "text", "text": shown_block(text)}], "isError": True}


def call_tool(name: str, raw_arguments: Any,
              call: Callable[[str, dict[str, Any]], dict[str, Any]] = _call) -> dict[str, Any]:
    """Run one tool; every failure inside it becomes an ``isError`` result."""
    try:
        arguments = _check_arguments(name, raw_arguments)
        output = call(name, arguments)
    except ToolArgumentError as exc:
        return _tool_error(f"bad_arguments: {exc}")
    except SwitchboardError as exc:
        return _tool_error(f"{exc.code}: {exc.message}")
    except Exception as exc:  # noqa: BLE001 - the server must outlive any one call
        from core.context.failures import environment_failure_of

        failure = environment_failure_of(exc)  # a full or read-only disk, in words
        if failure is not None:
            return _tool_error(f"{failure.code}: {failure.message}")
        print(f"switchboard mcp: {name} failed: {exc!r}", file=sys.stderr)
        return _tool_error(f"internal_error: {type(exc).__name__}: {exc}")
    return {"content": [{"type": "text", "text": json.dumps(output, sort_keys=True)}],
            "structuredContent": output, "isError": False}


def _error(msg_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}}


def handle(message: Any) -> dict[str, Any] | None:
    """Answer one decoded message; None for notifications (which get no reply)."""
    if not isinstance(message, dict):
        return _error(None, INVALID_REQUEST, "invalid request: expected one JSON object "
                      "(batches are not supported)")
    is_notification = "id" not in message
    msg_id = message.get("id")
    method = message.get("method")
    if message.get("jsonrpc") != "2.0" or not isinstance(method, str) or \
            not (is_notification or isinstance(msg_id, (str, int))) or \
            isinstance(msg_id, bool):
        return None if is_notification else _error(
            msg_id if isinstance(msg_id, (str, int)) else None, INVALID_REQUEST,
            "invalid request: needs jsonrpc 2.0, a string method and a string or "
            "integer id")
    if is_notification:
        return None  # notifications/initialized, notifications/cancelled, ...
    params = message.get("params")
    if params is None:
        params = {}
    if not isinstance(params, dict):
        return _error(msg_id, INVALID_PARAMS, "params must be an object")
    if method == "initialize":
        asked = params.get("protocolVersion")
        result: dict[str, Any] = {
            "protocolVersion": asked if asked in PROTOCOL_VERSIONS else PROTOCOL_VERSION,
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": "switchboard", "version": SERVER_VERSION},
            "instructions": "Switchboard agent tools. Authority comes from the pane you run "
                            "in; call transition_claim() when told to.",
        }
    elif method == "tools/list":
        result = {"tools": TOOLS}
    elif method == "tools/call":
        name = params.get("name")
        if not isinstance(name, str) or name not in _SCHEMAS:
            return _error(msg_id, INVALID_PARAMS, f"unknown tool: {name!r}")
        result = call_tool(name, params.get("arguments"))
    elif method == "ping":
        result = {}
    else:
        return _error(msg_id, METHOD_NOT_FOUND, f"method not found: {method}")
    return {"jsonrpc": "2.0", "id": msg_id, "result": result}


def _mark_ready(path: str | None) -> None:
    """Say (once, best effort) that the client has the tool list by now."""
    if not path:
        return
    with contextlib.suppress(OSError):
        Path(path).touch()


# The largest tool call (a 65,536-character summary and next action, each
# character JSON-escaped as a surrogate pair) stays well under this; anything
# longer is not a message we could accept, so it is never buffered whole.
MAX_LINE_BYTES = 4 * 1024 * 1024


def _skip_rest_of_line(stdin: BinaryIO) -> None:
    """Discard an oversized line up to its newline, a bounded chunk at a time."""
    while True:
        chunk = stdin.readline(MAX_LINE_BYTES)
        if not chunk or chunk.endswith(b"\n"):
            return


def serve(stdin: BinaryIO, stdout: BinaryIO, ready_file: str | None = None) -> None:
    """Serve until stdin closes: one JSON message per line in, one reply per line out.

    Each line is read with a bound: an oversized one gets a JSON-RPC error
    (id null: its id was never read) and the server keeps serving.
    ``ready_file`` (default: ``$SWITCHBOARD_MCP_READY_FILE``) is created after the
    first ``tools/list`` reply has been written and flushed.
    """
    if ready_file is None:
        ready_file = os.environ.get(ENV_READY_FILE)
    while True:
        message: Any = None
        line = stdin.readline(MAX_LINE_BYTES + 1)
        if not line:
            return
        if len(line) > MAX_LINE_BYTES:
            if not line.endswith(b"\n"):
                _skip_rest_of_line(stdin)
            reply: dict[str, Any] | None = _error(
                None, INVALID_REQUEST, f"message larger than {MAX_LINE_BYTES} bytes; "
                "send a smaller request (it was not read)")
        elif not line.strip():
            continue
        else:
            try:
                message = json.loads(line)
            except (ValueError, RecursionError):
                reply = _error(None, PARSE_ERROR, "parse error")
            else:
                reply = handle(message)
        if reply is not None:
            stdout.write(json.dumps(reply, separators=(",", ":")).encode("utf-8") + b"\n")
            stdout.flush()
            if ready_file and isinstance(message, dict) and \
                    message.get("method") == "tools/list" and "result" in reply:
                _mark_ready(ready_file)
                ready_file = None
