"""`switchboard restore`: reopen every view and resume every agent after the tmux server died.

Bare `switchboard` outside a view runs this first when the registry says views
were open and their server is gone (``needs_restore``), then opens the project's
view as `switchboard open` does. The work is ``core.fleet.restore``.
"""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "restore", help="after a reboot or `tmux kill-server`: reopen every view that was open "
                        "and resume every agent that was live, by its exact session id")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--open", action="store_true",
                   help="then go to the current project's view (what bare `switchboard` does)")
    p.add_argument("--no-attach", action="store_true",
                   help="with --open: print how to attach instead")
    p.set_defaults(handler=_restore)


def needs_restore() -> bool:
    """Whether bare `switchboard` should restore first: some view was open and its tmux
    server no longer answers. Any problem reading that says no (open reports it)."""
    from core.engine.open import open_engine
    from core.fleet.restore import stale_views
    from core.model.errors import SwitchboardError

    try:
        engine = open_engine(with_stage=True)
    except SwitchboardError:
        return False
    try:
        return engine.stage is not None and bool(stale_views(engine))
    except SwitchboardError:
        return False
    finally:
        engine.conn.close()


def _restore(args: argparse.Namespace) -> int:
    import sys

    from core.context.requests import new_request_id
    from core.engine.open import open_engine
    from core.fleet.restore import RESTORE_WAIT_S, restore_fleet, summary_lines
    from navigator.commands.output import emit, say

    def waiting() -> None:
        say(f"another `switchboard restore` of this home is running; waiting for it (up to "
            f"{RESTORE_WAIT_S:.0f} s)", file=sys.stderr)

    engine = open_engine(with_stage=True)
    engine.require_stage()
    report = restore_fleet(engine, new_request_id(), on_wait=waiting)
    engine.conn.close()
    emit(report, as_json=args.json, text="\n".join(summary_lines(report)))
    if args.open:
        from navigator.commands.open import _open

        return _open(argparse.Namespace(project=None, no_attach=args.no_attach))
    return 1 if report.failed else 0
