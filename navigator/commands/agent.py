"""`switchboard agent ...` (agent tools as CLI, JSON out) and `switchboard mcp`."""

from __future__ import annotations

import argparse
import json
import sys

from core.model.session_enums import Provider


def register(sub: argparse._SubParsersAction) -> None:
    agent = sub.add_parser("agent", help="agent tools (run inside a Switchboard pane)")
    ags = agent.add_subparsers(dest="agent_command", metavar="TOOL", required=True)
    p = ags.add_parser("task-push", help="hand an independent outcome to a child task")
    p.add_argument("--title", required=True)
    p.add_argument("--brief", required=True)
    p.add_argument("--purpose")
    p.add_argument("--provider", choices=sorted(provider.value for provider in Provider))
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_push)
    p = ags.add_parser("task-complete-return", help="finish this task and return")
    p.add_argument("--summary", required=True)
    p.add_argument("--next-action", required=True)
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_complete)
    p = ags.add_parser("transition-claim", help="claim your brief or handoff")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_claim)
    p = ags.add_parser("transition-cancel",
                       help="withdraw your push while it waits for your Stop (a return "
                            "is not withdrawn)")
    p.add_argument("--request-id", help="retry-safe id (the same id changes nothing twice)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_cancel)
    from navigator.commands.agent_broker import register as register_broker_tools
    register_broker_tools(ags)
    mcp = sub.add_parser("mcp", help="serve the agent tools over MCP (stdio)")
    mcp.set_defaults(handler=_mcp)


def _print(value: dict, args: argparse.Namespace) -> int:
    """JSON with ``--json`` (what agents parse), ``key: value`` lines otherwise."""
    if args.json:
        json.dump(value, sys.stdout, sort_keys=True)
        sys.stdout.write("\n")
    else:
        from navigator.commands.output import readable, say

        say(readable(value))
    return 0


def _push(args: argparse.Namespace) -> int:
    from core.agent.tools import task_push

    return _print(task_push(args.title, args.brief, args.purpose, args.provider), args)


def _complete(args: argparse.Namespace) -> int:
    from core.agent.tools import task_complete_return

    return _print(task_complete_return(args.summary, args.next_action), args)


def _claim(args: argparse.Namespace) -> int:
    from core.agent.tools import transition_claim

    return _print(transition_claim(), args)


def _cancel(args: argparse.Namespace) -> int:
    from core.agent.tools import transition_cancel

    return _print(transition_cancel(request_id=args.request_id), args)


def _mcp(args: argparse.Namespace) -> int:
    from core.agent.mcp_server import serve

    serve(sys.stdin.buffer, sys.stdout.buffer)
    return 0
