"""`switchboard demo`: the navigator on an embedded default, with fake agents."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="open a demo view (private tmux server, fake agents)")
    p.add_argument("--home", type=Path, help="demo home (default: XDG state/switchboard-demo)")
    p.add_argument("--no-attach", action="store_true", help="set up only; print how to attach")
    end = p.add_mutually_exclusive_group()
    end.add_argument("--stop", action="store_true",
                     help="stop the demo's tmux server and fake agents (the home stays)")
    end.add_argument("--reset", action="store_true",
                     help="stop the demo and delete its home; the next run starts fresh")
    p.set_defaults(handler=_demo)


def _demo(args: argparse.Namespace) -> int:
    from core.apps.demo import build, default_demo_home, stop
    from core.model.hints import command
    from navigator.commands.output import say

    if args.stop or args.reset:
        ended = stop(args.home or default_demo_home(), reset=args.reset)
        state = "stopped its tmux server" if ended.server_was_running else "was not running"
        again = ("--home", str(ended.home)) if args.home else ()
        say(f"demo {state}" + (f"; deleted {ended.home}" if ended.removed else
                               f"; home kept at {ended.home} "
                               f"({command('demo', '--reset', *again)} deletes it)"))
        return 0
    session = build(args.home or default_demo_home())
    # A hint names the same home, or it would stop (and find) another demo.
    home = ("--home", str(session.home)) if args.home else ()
    say(f"demo home: {session.home}\nattach:    {session.attach_command}\n"
        f"leave:     tmux detach (prefix d); stop it: {command('demo', '--stop', *home)}")
    if args.no_attach or not sys.stdin.isatty():
        return 0
    env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}
    os.execvpe("tmux", ["tmux", "-S", session.socket_path, "attach", "-t",
                        session.window_id], env)
    return 0
