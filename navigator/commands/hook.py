"""`switchboard hook --provider P EVENT`: the lean entry point providers call.

It must stay fast and must never break the provider: errors are reported on
stderr with a non-zero exit, unmanaged sessions exit 0 silently.
"""

from __future__ import annotations

import argparse
import sys


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("hook", help="(called by providers) record hook evidence")
    p.add_argument("--provider", required=True, choices=["claude", "codex"])
    p.add_argument("event")
    p.add_argument("payload", nargs="?", help="Codex notify passes the JSON as an argument")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_hook)


def _hook(args: argparse.Namespace) -> int:
    import os

    if not os.environ.get("SWITCHBOARD_CAPABILITY") and \
            not os.environ.get("SWITCHBOARD_GENERATION"):
        # unmanaged session: nothing to load, nothing to write
        if args.json:
            sys.stdout.write('{"activity": null, "executed": [], "handled": false,'
                             ' "reason": "unmanaged session: no Switchboard markers"}\n')
        return 0
    from core.hook_handler import handle_hook

    payload = args.payload if args.payload is not None else sys.stdin.buffer.read()
    outcome = handle_hook(args.provider, args.event, payload)
    if args.json:
        import json
        json.dump({"handled": outcome.handled, "reason": outcome.reason,
                   "activity": outcome.activity,
                   "executed": list(outcome.executed_transitions)}, sys.stdout)
        sys.stdout.write("\n")
    return 0
