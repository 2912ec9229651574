"""`switchboard attention`: the counts behind the status segment, and the publisher the
hook starts detached (`--publish`) when an agent's activity changed."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from navigator.commands.output import emit

if TYPE_CHECKING:
    from core.config.registry import OpenRegistry


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("attention", help="agents needing input / ready / working, all projects")
    p.add_argument("--publish", action="store_true",
                   help="update the tmux status segment and nudge clients not looking at "
                        "--frame (what the hook runs, detached)")
    p.add_argument("--frame", help="the frame whose activity changed")
    p.add_argument("--event", choices=["needs_input", "turn_finished"],
                   help="what it changed to (no event: counts only)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_attention)


def _attention(args: argparse.Namespace) -> int:
    from core.config.registry import open_current

    # The registry and config only (no engine, no tmux stage): the hook starts this
    # publisher at every turn end. It only reads.
    opened = open_current(readonly=True)
    try:
        return _report(args, opened)
    finally:
        opened.conn.close()


def _report(args: argparse.Namespace, opened: OpenRegistry) -> int:
    from core.hooks import attention
    from core.model.text import shown

    sent: list[attention.Notice] = []
    if args.publish:
        counts, sent = attention.publish_change(opened, args.frame, args.event)
    else:
        counts = attention.read_counts(opened.conn)
    nudged = [n.client.tty for n in sent]
    remote = "".join(f"\n{shown(r.host)}: needs input {r.needs_input}, ready {r.ready}, "
                     f"working {r.working}" for r in counts.remote)
    emit({"counts": counts._asdict() | {"remote": [r._asdict() for r in counts.remote]},
          "nudged": nudged}, as_json=args.json,
         text=f"needs input {counts.needs_input}, ready {counts.ready}, "
              f"working {counts.working}" + (f"; nudged {', '.join(nudged)}" if nudged else "")
              + remote)
    return 0
