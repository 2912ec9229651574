"""`switchboard agent message-*`, `switchboard-current`, ...: broker and context tools (JSON out).

The same functions the MCP server calls (core.agent.tools_broker), so both
paths share the engine, the capability checks and the idempotency rules.
"""

from __future__ import annotations

import argparse
import json
import sys


def register(ags: argparse._SubParsersAction) -> None:
    p = ags.add_parser("message-send", help="send a message to a member of this project")
    p.add_argument("--to", required=True,
                   help="member id, frame title, parent, workspace or person")
    p.add_argument("--text", required=True)
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_send)
    p = ags.add_parser("message-broadcast", help="message every other member and the person")
    p.add_argument("--text", required=True)
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_broadcast)
    p = ags.add_parser("message-poll", help="read your unread messages")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_poll)
    p = ags.add_parser("message-ack", help="mark one of your messages handled")
    p.add_argument("--id", required=True, type=int)
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_ack)
    p = ags.add_parser("message-wait", help="wait for a message (seconds, at most 600)")
    p.add_argument("--timeout", type=float, default=60.0)
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_wait)
    from core.model.tool_schemas import CONTEXT_TOOLS

    for tool in CONTEXT_TOOLS:
        p = ags.add_parser(tool["name"].replace("_", "-"), help=tool["description"])
        p.add_argument("--json", action="store_true")
        p.set_defaults(handler=_context, tool=tool["name"])


def _print(value: dict) -> int:
    json.dump(value, sys.stdout, sort_keys=True)
    sys.stdout.write("\n")
    return 0


def _send(args: argparse.Namespace) -> int:
    from core.agent.tools_broker import message_send

    return _print(message_send(args.to, args.text))


def _broadcast(args: argparse.Namespace) -> int:
    from core.agent.tools_broker import message_broadcast

    return _print(message_broadcast(args.text))


def _poll(args: argparse.Namespace) -> int:
    from core.agent.tools_broker import message_poll

    return _print(message_poll())


def _ack(args: argparse.Namespace) -> int:
    from core.agent.tools_broker import message_ack

    return _print(message_ack(args.id))


def _wait(args: argparse.Namespace) -> int:
    from core.agent.tools_broker import message_wait

    return _print(message_wait(args.timeout))


def _context(args: argparse.Namespace) -> int:
    from core.agent.tools_context import call

    return _print(call(args.tool, {}))
