"""`switchboard project ...`: list and enter are defined beside views (which own the
route); `project add` turns a folder into a project without hand-written UUIDs."""

from __future__ import annotations

import argparse
from pathlib import Path

from navigator.commands.output import emit
from navigator.commands.views import register_projects as register

__all__ = ["register", "register_add"]


def register_add(ps: argparse._SubParsersAction) -> None:
    p = ps.add_parser("add", help="add a folder (default: the cwd's git root) as a project")
    p.add_argument("path", nargs="?", type=Path, default=None,
                   help="the project's folder (default: the current directory)")
    p.add_argument("--name", help="project name (default: the folder's name)")
    p.add_argument("--provider", choices=["claude", "codex"],
                   help="the provider new frames of this project run")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_add)


def _add(args: argparse.Namespace) -> int:
    from core.enums import Provider
    from core.home import Home
    from core.project_add import add_project

    added = add_project(Home.from_env(), args.path or Path.cwd(), name=args.name,
                        provider=Provider(args.provider) if args.provider else None)
    emit(added, as_json=args.json,
         text=f"added project {added.name!r} ({added.root}) to {added.config_path}\n"
              f"next: `switchboard open {added.name}` (or run `switchboard` in that folder)")
    return 0
