"""`switchboard init` and `switchboard reset`: the only paths that create a registry."""

from __future__ import annotations

import argparse

from navigator.commands.output import emit


def register(sub: argparse._SubParsersAction) -> None:
    init = sub.add_parser("init", help="create the registry and config (first run)")
    where = init.add_mutually_exclusive_group()
    where.add_argument("--tmux-socket", metavar="PATH",
                       help="open views on this tmux server (default: the tmux you run "
                            "init in, else a private server under SWITCHBOARD_HOME)")
    where.add_argument("--private-tmux", action="store_true",
                       help="use a private tmux server even when run inside tmux")
    init.add_argument("--json", action="store_true")
    init.set_defaults(handler=_init)
    reset = sub.add_parser("reset", help="replace the registry with a new empty generation")
    reset.add_argument("--confirm-generation", required=True, metavar="G",
                       help="the current generation id, to prove intent")
    reset.add_argument("--json", action="store_true")
    reset.set_defaults(handler=_reset)


def _init(args: argparse.Namespace) -> int:
    from core.config.home import Home
    from core.config.registry import init_registry

    result = init_registry(Home.from_env(), tmux_socket=_init_socket(args))
    emit(result, as_json=args.json,
         text=f"initialized generation {result.generation_id}\n"
              f"  registry: {result.registry_path}\n  config:   {result.config_path}\n"
              "next: in your project's folder run `switchboard project add`, then "
              "`switchboard`")
    return 0


def _init_socket(args: argparse.Namespace) -> str | None:
    """The tmux server views open on: named, else the one init runs inside (so the
    person's own tmux shows them, no nested client), else None (private)."""
    import os

    if args.private_tmux:
        return None
    if args.tmux_socket:
        return os.path.abspath(args.tmux_socket)
    inside = os.environ.get("TMUX", "").split(",")[0]
    return inside or None


def _reset(args: argparse.Namespace) -> int:
    from core.config.home import Home
    from core.config.registry import reset_registry

    result = reset_registry(Home.from_env(), confirm_generation=args.confirm_generation)
    emit(result, as_json=args.json,
         text=f"reset: new generation {result.generation_id} (old registry kept on disk)")
    return 0
