"""`switchboard project ...`: list, add and enter (the route itself is the views'
``enter_project``); `project add` turns a folder into a project without
hand-written UUIDs."""

from __future__ import annotations

import argparse
from pathlib import Path

from core.model.session_enums import Provider
from navigator.commands.output import emit
from navigator.commands.views import enter_project

__all__ = ["register", "register_add"]


def register(sub: argparse._SubParsersAction) -> None:
    project = sub.add_parser("project", help="configured projects")
    ps = project.add_subparsers(dest="project_command", metavar="ACTION", required=True)
    p = ps.add_parser("list", help="configured projects")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_projects)
    register_add(ps)
    p = ps.add_parser("enter", help="show a project in its view")
    p.add_argument("project", help="project name or id")
    p.add_argument("--json", action="store_true")
    p.add_argument("--request-id")
    p.set_defaults(handler=lambda a: enter_project(
        argparse.Namespace(**{**vars(a), "project": a.project})))


def register_add(ps: argparse._SubParsersAction) -> None:
    p = ps.add_parser("add", help="add a folder (default: the cwd's git root) as a project")
    p.add_argument("path", nargs="?", type=Path, default=None,
                   help="the project's folder (default: the current directory)")
    p.add_argument("--name", help="project name (default: the folder's name)")
    p.add_argument("--provider", choices=sorted(provider.value for provider in Provider),
                   help="the provider new frames of this project run")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_add)


def _add(args: argparse.Namespace) -> int:
    from core.config.home import Home
    from core.install.project_add import add_project
    from core.model.enums import Provider
    from core.model.hints import command

    added = add_project(Home.from_env(), args.path or Path.cwd(), name=args.name,
                        provider=Provider(args.provider) if args.provider else None)
    # Not a git repository: the folder itself is the project (README), said so here
    # since what needs git (diff review, conflicts, worktrees) would only say it later.
    plain = (f"note: {added.root} is not in a git repository, so the folder itself is the "
             "project; diff review, conflicts and worktrees need git (`git init` there)\n"
             if added.repository_id is None else "")
    emit(added, as_json=args.json,
         text=f"added project {added.name!r} ({added.root}) to {added.config_path}\n"
              f"{plain}next: {command('open', names=(added.name,))} (or run `switchboard` "
              "in that folder)")
    return 0


def _projects(args: argparse.Namespace) -> int:
    from core.engine.open import open_engine
    from core.state.queries import list_projects

    engine = open_engine()
    rows = list_projects(engine.conn, engine.config)
    emit(rows, as_json=args.json,
         text="\n".join(f"{r.project_id}  {r.name:<20} {r.open_frames} open" for r in rows)
         or "no projects configured")
    return 0
