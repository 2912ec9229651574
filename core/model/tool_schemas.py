"""The agent tools' MCP table and its launch contract, as data.

The launch side (``core.runtime.launcher``'s ``--mcp-config`` and allowed tool names,
``core.install.hooks_install``'s Claude permissions) needs the tool names and the
ready-file variable; the tools themselves (``core.agent.tools*``, served by
``core.agent.mcp_server``) open the engine. Keeping the table here lets a launch
read it without importing the tools, so the engine's imports stay acyclic.
"""

from __future__ import annotations

from typing import Any

from core.model.session_enums import Provider

ENV_READY_FILE = "SWITCHBOARD_MCP_READY_FILE"
"""Set by a Claude launch's ``--mcp-config``: the file the MCP server
(``core.agent.mcp_server``) creates once it has answered ``tools/list``; the launch's
UserPromptSubmit hook waits for it so the model never gets a prompt before it
can see the agent tools."""

_TEXT = {"type": "string", "minLength": 1}
_NONE = {"type": "object", "additionalProperties": False, "properties": {}}

TASK_TOOLS: list[dict[str, Any]] = [
    {"name": "task_push",
     "description": "Hand an independent outcome to a new child task. End your turn after.",
     "inputSchema": {"type": "object", "required": ["title", "brief"],
                     "additionalProperties": False, "properties": {
                         "title": _TEXT, "brief": _TEXT, "purpose": {"type": "string"},
                         "provider": {"type": "string",
                                      "enum": sorted(p.value for p in Provider)}}}},
    {"name": "task_complete_return",
     "description": "Finish this task and return a summary and next action to the parent.",
     "inputSchema": {"type": "object", "required": ["summary", "next_action"],
                     "additionalProperties": False, "properties": {
                         "summary": _TEXT, "next_action": _TEXT}}},
    {"name": "transition_claim",
     "description": "Claim your brief or handoff and follow the returned instructions.",
     "inputSchema": {"type": "object", "additionalProperties": False, "properties": {}}},
    {"name": "transition_cancel",
     "description": "Withdraw your push or return while it still waits for your Stop.",
     "inputSchema": {"type": "object", "additionalProperties": False, "properties": {}}},
]

# Messages (``core.agent.tools_broker``).
BROKER_TOOLS: list[dict[str, Any]] = [
    {"name": "message_send",
     "description": "Send a message to another agent of this project or the person. `to` is "
                    "a member id, a frame title, `parent`, `workspace` or `person`.",
     "inputSchema": {"type": "object", "required": ["to", "text"],
                     "additionalProperties": False,
                     "properties": {"to": _TEXT, "text": _TEXT}}},
    {"name": "message_broadcast",
     "description": "Send one message to every other agent of this project and the person.",
     "inputSchema": {"type": "object", "required": ["text"], "additionalProperties": False,
                     "properties": {"text": _TEXT}}},
    {"name": "message_poll",
     "description": "Read your unread messages (oldest first). ACK each one you handled.",
     "inputSchema": {"type": "object", "additionalProperties": False, "properties": {}}},
    {"name": "message_ack",
     "description": "Mark one of your messages as handled.",
     "inputSchema": {"type": "object", "required": ["id"], "additionalProperties": False,
                     "properties": {"id": {"type": "integer", "minimum": 1}}}},
    {"name": "message_wait",
     "description": "Wait up to `timeout` seconds (max 600) for a message to arrive.",
     "inputSchema": {"type": "object", "additionalProperties": False,
                     "properties": {"timeout": {"type": "number", "minimum": 0}}}},
]

# Where am I, what else runs, go back (``core.agent.tools_context``).
CONTEXT_TOOLS: list[dict[str, Any]] = [
    {"name": "switchboard_current",
     "description": "Where you are: your frame, project, parent, children, whether you are "
                    "shown, and your unread message count.", "inputSchema": _NONE},
    {"name": "switchboard_context",
     "description": "The project's open frames with titles, activity and which one is shown.",
     "inputSchema": _NONE},
    {"name": "switchboard_history",
     "description": "Closed tasks of this project with their handoff summaries.",
     "inputSchema": _NONE},
    {"name": "task_back",
     "description": "Show your parent; you stay open (parked) and can be shown again.",
     "inputSchema": _NONE},
    {"name": "transition_status",
     "description": "The latest transitions from or to your frame and their states.",
     "inputSchema": _NONE},
]

TOOLS: list[dict[str, Any]] = TASK_TOOLS + BROKER_TOOLS + CONTEXT_TOOLS
"""Every tool ``tools/list`` publishes, in that order."""
BROKER_NAMES = tuple(tool["name"] for tool in BROKER_TOOLS)
CONTEXT_NAMES = tuple(tool["name"] for tool in CONTEXT_TOOLS)
