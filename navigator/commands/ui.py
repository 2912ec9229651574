"""`switchboard ui`: run the Textual navigator (the default with no arguments).

Textual is imported inside the handler so every other command (notably the
hook path) starts without paying for it.
"""

from __future__ import annotations

import argparse
import os


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("ui", help="open the navigator (the default command)")
    p.add_argument("--view", dest="view_id", default=os.environ.get("SWITCHBOARD_VIEW_ID"),
                   help="the view this navigator pane belongs to "
                        "(default: $SWITCHBOARD_VIEW_ID, else the selected view)")
    p.add_argument("--poll", type=float, default=0.25, metavar="SECONDS",
                   help="how often to check the registry for changes where the kernel "
                        "cannot say when it changes (default 0.25)")
    p.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    from core.engine.client import EngineClient
    from navigator.app import SwitchboardApp

    try:
        client = EngineClient.open()
    except ImportError:
        # The tmux stage is optional for browsing; keys that move panes then
        # only change the registry, which the CLI would do as well.
        client = EngineClient.open(with_stage=False)
    SwitchboardApp(client, view_id=args.view_id, poll_interval=args.poll,
                   wake_on_change=True).run()
    return 0
