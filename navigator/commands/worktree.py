"""`switchboard worktree add|remove`: a git worktree as its own project and view."""

from __future__ import annotations

import argparse
from pathlib import Path

from navigator.commands.output import emit, say


def register(sub: argparse._SubParsersAction) -> None:
    wt = sub.add_parser("worktree", help="git worktrees as projects: parallel checkouts")
    ws = wt.add_subparsers(dest="worktree_command", metavar="ACTION", required=True)
    p = ws.add_parser("add", help="create a git worktree of a project as a new project")
    p.add_argument("name", help="worktree (and branch) name; the project is PROJECT-NAME")
    p.add_argument("--project", help="the project to branch from (default: the cwd's)")
    p.add_argument("--path", type=Path, help="where (default: beside the project's folder)")
    p.add_argument("--branch", help="branch to check out or create (default: NAME)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_add)
    p = ws.add_parser("remove", help="remove a worktree project (clean, no live agents)")
    p.add_argument("project", help="the worktree's project name (PROJECT-NAME)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_remove)


def _base_project(args: argparse.Namespace) -> str:
    if args.project:
        return str(args.project)
    from core.config.config import load_config
    from core.config.home import Home
    from navigator.commands.open import pick_project

    config = load_config(Home.from_env().config_path)
    return pick_project([(p.name, p.root) for p in config.projects], Path.cwd().resolve())


def _add(args: argparse.Namespace) -> int:
    from core.config.home import Home
    from core.install.worktree import add_worktree
    from core.model.hints import command

    made, _ = add_worktree(Home.from_env(), _base_project(args), args.name, path=args.path,
                           branch=args.branch)
    emit(made, as_json=args.json,
         text=f"worktree {made.path} (branch {made.branch}) is project {made.project!r}\n"
              f"next: {command('open', names=(made.project,))}")
    return 0


def _remove(args: argparse.Namespace) -> int:
    from core.context.requests import new_request_id
    from core.engine.open import open_engine
    from core.install.worktree import remove_worktree
    from core.state.queries import live_agents_in_project

    engine = open_engine()
    project = next((p for p in engine.config.projects
                    if args.project in (p.name, p.project_id)), None)
    live = live_agents_in_project(engine.conn, project.project_id) if project else 0
    home = engine.require_home()
    view = engine.conn.execute(
        "SELECT view_id FROM user_views WHERE project_id = ? AND state <> 'retired'",
        (project.project_id,)).fetchone() if project else None
    removed = remove_worktree(home, args.project, live_agents=live)
    if view is not None:
        from core.model.errors import SwitchboardError

        try:
            engine.view_retire(new_request_id(), view[0])
        except SwitchboardError as exc:  # the files are gone; the view only lingers
            say(f"note: its view {view[0]} stays open: {exc.message}")
    emit(removed, as_json=args.json,
         text=f"removed worktree {removed.path} and project {removed.project!r} "
              f"(branch {removed.branch} kept)")
    return 0
