"""`switchboard view ...`: views, and the project route (`enter_project`) that
`switchboard project enter` shares."""

from __future__ import annotations

import argparse

from core.model.text import shown
from navigator.commands.output import emit, say
from navigator.commands.output import request_id_from as _rid


def register(sub: argparse._SubParsersAction) -> None:
    view = sub.add_parser("view", help="views: durable tmux windows")
    vs = view.add_subparsers(dest="view_command", metavar="ACTION", required=True)
    p = vs.add_parser("list", help="all views")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_list)
    p = vs.add_parser("show", help="one view")
    p.add_argument("view_id")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_show)
    p = vs.add_parser("focus", help="show an open frame in a view (navigation only)")
    p.add_argument("view_id")
    p.add_argument("frame_id")
    p.add_argument("--json", action="store_true")
    p.add_argument("--request-id")
    p.set_defaults(handler=_focus)
    p = vs.add_parser("mode", help="navigator or direct mode (toggle when omitted)")
    p.add_argument("view_id")
    p.add_argument("mode", nargs="?", choices=["navigator", "direct"])
    p.add_argument("--json", action="store_true")
    p.add_argument("--request-id")
    p.set_defaults(handler=_mode)
    p = vs.add_parser("retire", help="retire a view (no live agent panes left in it)")
    p.add_argument("view_id")
    p.add_argument("--json", action="store_true")
    p.add_argument("--request-id")
    p.set_defaults(handler=_retire)
    p = vs.add_parser("open", help="enter a project and print a PresentationDirective")
    p.add_argument("--project", required=True)
    p.add_argument("--no-desktop-focus", action="store_true",
                   help="the frontend cannot focus an existing window: ask for attach")
    p.add_argument("--json", action="store_true")
    p.add_argument("--request-id")
    p.set_defaults(handler=_open)
    p = vs.add_parser("enter", help="enter a project (same as `project enter`)")
    p.add_argument("--project", required=True)
    p.add_argument("--json", action="store_true")
    p.add_argument("--request-id")
    p.set_defaults(handler=enter_project)


def _list(args: argparse.Namespace) -> int:
    from core.engine.open import open_engine
    from core.state.queries import list_views

    rows = list_views(open_engine().conn)
    text = "\n".join(f"{r.view_id}  {r.mode:<9} {r.state:<13} rev {r.revision}  "
                     f"{shown(r.project_name or '-')} / {shown(r.active_title or '-')}"
                     for r in rows)
    emit(rows, as_json=args.json, text=text or "no views")
    return 0


def _show(args: argparse.Namespace) -> int:
    from core.engine.open import open_engine
    from core.model.errors import NotFound
    from core.state.queries import list_views

    rows = [r for r in list_views(open_engine().conn) if r.view_id == args.view_id]
    if not rows:
        raise NotFound(f"view {args.view_id} not found; `switchboard view list` shows views")
    emit(rows[0], as_json=args.json)
    return 0


def _focus(args: argparse.Namespace) -> int:
    from core.engine.open import open_engine

    result = open_engine(with_stage=True).view_focus(_rid(args), args.view_id, args.frame_id)
    emit(result, as_json=args.json, text=f"focus: {result.state}")
    return 0


def _mode(args: argparse.Namespace) -> int:
    from core.engine.open import open_engine
    from core.model.enums import ViewMode

    result = open_engine(with_stage=True).view_mode(
        _rid(args), args.view_id, ViewMode(args.mode) if args.mode else None)
    emit(result, as_json=args.json, text=f"view {result.view_id} is now {result.mode}")
    return 0


def enter_project(args: argparse.Namespace) -> int:
    """`view enter` and `project enter`: show a project in its view (the route)."""
    from core.engine.open import open_engine

    result = open_engine(with_stage=True).project_enter(_rid(args), args.project)
    emit(result, as_json=args.json,
         text=f"view {result.view_id} shows frame {result.frame_id}")
    return 0


def _retire(args: argparse.Namespace) -> int:
    from core.engine.open import open_engine

    result = open_engine().view_retire(_rid(args), args.view_id)
    emit(result, as_json=args.json, text=f"view {result.view_id} retired")
    return 0


def _open(args: argparse.Namespace) -> int:
    import sys

    from core.engine.open import open_engine
    from core.engine.presentation import open_view
    from core.state.envelope import encode_canonical

    engine = open_engine(with_stage=True)
    directive = open_view(engine, _rid(args), args.project,
                          desktop_focus_available=not args.no_desktop_focus)
    if args.json:
        sys.stdout.buffer.write(encode_canonical(directive, allow_paths=frozenset(
            {"$.desktopToken"})) + b"\n")
    else:
        say(f"{directive.kind.value}: view {directive.view_id or '-'}"
              + (f" ({directive.error.message})" if directive.error else ""))
    return 0 if directive.error is None else 3
