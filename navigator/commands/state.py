"""`switchboard state host|navigator --json`: the envelopes, canonical JSON."""

from __future__ import annotations

import argparse
import sys


def register(sub: argparse._SubParsersAction) -> None:
    state = sub.add_parser("state", help="print HostState or NavigatorState")
    ss = state.add_subparsers(dest="state_command", metavar="WHICH", required=True)
    for name in ("host", "navigator"):
        p = ss.add_parser(name, help=f"{name} state envelope (v1)")
        p.add_argument("--json", action="store_true", help="canonical JSON (the only format)")
        if name == "host":
            p.add_argument("--follow", action="store_true",
                           help="keep running: one document per change (the first at once), "
                                "an empty line as a heartbeat while nothing changes")
        p.set_defaults(handler=_state, which=name)


def _state(args: argparse.Namespace) -> int:
    from core.engine.open import open_engine
    from core.state.envelope import encode_canonical
    from core.state.state_builder import build_host_state, build_navigator_state

    if getattr(args, "follow", False):
        from core.context.session import open_reader
        from core.remote.publish import follow

        return follow(open_reader(), sys.stdout.buffer)
    engine = open_engine()
    envelope = build_host_state(engine) if args.which == "host" \
        else build_navigator_state(engine)
    sys.stdout.buffer.write(encode_canonical(envelope) + b"\n")
    return 0
