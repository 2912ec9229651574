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
    p.set_defaults(handler=_demo)


def _demo(args: argparse.Namespace) -> int:
    from core.demo import build, default_demo_home

    session = build(args.home or default_demo_home())
    print(f"demo home: {session.home}")
    print(f"attach:    {session.attach_command}")
    if args.no_attach or not sys.stdin.isatty():
        return 0
    env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}
    os.execvpe("tmux", ["tmux", "-S", session.socket_path, "attach", "-t",
                        session.window_id], env)
    return 0
