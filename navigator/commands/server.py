"""`switchboard server [--status|--stop]`: the home's one long-lived process (issue 38.1).

It serves the agent tools over MCP streamable HTTP on 127.0.0.1 (``core.server``).
A launch that needs it starts it detached; running it by hand keeps it in the
foreground (Ctrl-C ends it). ``--status`` exits 3 when none runs.
"""

from __future__ import annotations

import argparse
import time


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("server", help="run this home's switchboard server (agent tools over "
                                      "HTTP on 127.0.0.1); --status, --stop")
    group = p.add_mutually_exclusive_group()
    group.add_argument("--status", action="store_true",
                       help="print pid, port and uptime, or 'not running' (exit 3)")
    group.add_argument("--stop", action="store_true", help="stop the running server")
    p.set_defaults(handler=_server)


def _server(args: argparse.Namespace) -> int:
    from core.config.home import Home
    from core.server.main import NOT_RUNNING, serve, status, stop_server
    from navigator.commands.output import say

    run_dir = Home.from_env().run_dir
    if args.status:
        found = status(run_dir)
        say(found.line(time.time()))
        return 0 if found.info is not None else NOT_RUNNING
    if args.stop:
        stopped = stop_server(run_dir)
        say("switchboard server: not running (nothing to stop)" if stopped is None
            else f"switchboard server: stopped (pid {stopped.pid})")
        return 0
    return serve(run_dir)
