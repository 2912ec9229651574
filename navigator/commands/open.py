"""`switchboard open [PROJECT]` (and bare `switchboard`): go to a project's view.

Outside tmux it attaches this terminal to the view's window; inside a tmux
client of the same server it switches that client; without a terminal it
prints the attach command. The project defaults to the one whose root holds
the current directory, or the only configured one.

Opening also repairs what would make the view a dead end: after a tmux server
restart the view is rebuilt on the running server (its server_restarted
recovery runs; agents stay stopped until `n` resumes them), and a navigator
pane that crashed or was quit is respawned in place (``core.reconcile.recovery.enter_view``).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("open", help="open a project's view in tmux (bare `switchboard` "
                                    "anywhere but a navigator pane)")
    p.add_argument("project", nargs="?", help="project name or id (default: from the cwd)")
    p.add_argument("--no-attach", action="store_true", help="print how to attach instead")
    p.set_defaults(handler=_open)


def pick_project(projects: list[tuple[str, str]], cwd: Path) -> str:
    """(name, root) pairs -> the name to open: the deepest root holding cwd, else the only one."""
    from core.model.errors import NotFound

    holding = [(len(Path(root).resolve().parts), name) for name, root in projects
               if cwd == Path(root).resolve() or Path(root).resolve() in cwd.parents]
    if holding:
        return max(holding)[1]
    if len(projects) == 1:
        return projects[0][0]
    if not projects:
        raise NotFound(f"{cwd} is not a Switchboard project and none is configured: add "
                       "this folder with `switchboard project add` (or try `switchboard demo`)",
                       code="project_required")
    names = ", ".join(name for name, _ in projects)
    raise NotFound(f"{cwd} is in no configured project ({names}): name one "
                   "(`switchboard open NAME`) or add this folder with "
                   "`switchboard project add`", code="project_required")


def _open(args: argparse.Namespace) -> int:
    from core.context.requests import new_request_id
    from core.engine.open import open_engine
    from core.engine.presentation import claim_lease, open_view
    from core.model.errors import InvariantViolation

    engine = open_engine(with_stage=True)
    project = args.project or pick_project(
        [(p.name, p.root) for p in engine.config.projects], Path.cwd().resolve())
    inside = _inside_same_server(engine.require_stage().socket_path)
    request_id = new_request_id()
    directive = open_view(engine, request_id, project, desktop_focus_available=inside)
    if directive.error is not None:
        from navigator.commands.output import complain

        complain(directive.error.code, directive.error.message)
        return 3
    view_id = directive.view_id
    if view_id is None:  # PresentationDirective.check: focus and attach name their view
        raise InvariantViolation("the open directive names no view")
    if directive.lease_expires_at is not None:
        claim_lease(engine, view_id, request_id)  # this terminal attaches now
    window = engine.conn.execute("SELECT tmux_window_id FROM user_views WHERE view_id = ?",
                                 (view_id,)).fetchone()[0]
    socket = engine.require_stage().socket_path
    env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}
    if inside:
        os.execvp("tmux", ["tmux", "-S", socket, "switch-client", "-t", window])
    if args.no_attach or not sys.stdin.isatty():
        from core.tmux.attach_line import attach_line
        from navigator.commands.output import say

        say("attach: " + attach_line(socket, window))
        return 0
    os.execvpe("tmux", ["tmux", "-S", socket, "attach", "-t", window], env)
    return 0


def _inside_same_server(socket_path: str) -> bool:
    """True when this terminal is a client of the view's own tmux server."""
    current = os.environ.get("TMUX", "").split(",")[0]
    if not current:
        return False
    try:
        return Path(current).resolve() == Path(socket_path).resolve()
    except OSError:
        return False
