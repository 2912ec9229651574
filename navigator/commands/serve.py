"""`switchboard serve [--port N]`: the navigator in a browser, on 127.0.0.1, behind a
random token (``navigator.serve``)."""

from __future__ import annotations

import argparse

from core.model.errors import SwitchboardError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("serve", help="serve the navigator to a browser on 127.0.0.1 behind a "
                                     "random token (prints the URL to open)")
    p.add_argument("--port", type=int, default=None,
                   help="the port to listen on (default: a free one)")
    p.set_defaults(handler=_serve)


def _serve(args: argparse.Namespace) -> int:
    if args.port is not None and not 1 <= args.port <= 65535:
        raise SwitchboardError(f"--port {args.port} is not a TCP port; give 1 to 65535 (or "
                               "leave it out for a free one)", code="invalid_port")
    from core.config.home import Home
    from core.config.registry import open_current

    open_current(Home.from_env(), readonly=True).conn.close()  # refuse early, not per page
    from navigator.serve import serve

    serve(args.port)
    return 0
