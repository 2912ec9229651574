"""`switchboard transition cancel`: withdraw a transition that still waits (prepared)."""

from __future__ import annotations

import argparse

from core.model.errors import SwitchboardError
from navigator.commands.output import emit
from navigator.commands.output import request_id_from as _rid


def register(sub: argparse._SubParsersAction) -> None:
    transition = sub.add_parser("transition", help="view transitions in flight")
    ts = transition.add_subparsers(dest="transition_command", metavar="ACTION", required=True)
    p = ts.add_parser("cancel", help="cancel a push still waiting for a Stop (prepared); "
                                     "nothing has moved yet (a complete-return is not "
                                     "withdrawn)")
    p.add_argument("transition_id", nargs="?", help="the transition (or give --view)")
    p.add_argument("--view", help="cancel the transition in flight in this view")
    p.add_argument("--json", action="store_true")
    p.add_argument("--request-id", help="reuse to retry idempotently (default: fresh)")
    p.set_defaults(handler=_cancel)


def _cancel(args: argparse.Namespace) -> int:
    from core.engine.open import open_engine

    if (args.view is None) == (args.transition_id is None):
        raise SwitchboardError("name exactly one: a TRANSITION_ID or --view VIEW "
                               "(`switchboard state` lists both)", code="bad_request")
    engine = open_engine(with_stage=True)
    result = engine.transition_cancel(_rid(args), view_id=args.view,
                                      transition_id=args.transition_id)
    emit(result, as_json=args.json,
         text=f"cancelled the {result.kind} {result.transition_id}; nothing moved")
    return 0
