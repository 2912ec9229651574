"""`switchboard context list|release|block|resolve`: checkout claims by hand."""

from __future__ import annotations

import argparse

from core.model.text import shown
from navigator.commands.output import emit
from navigator.commands.output import request_id_from as _rid

_RETRY_HELP = "reuse to retry idempotently (default: fresh)"


def register(sub: argparse._SubParsersAction) -> None:
    ctx = sub.add_parser("context", help="work contexts: who holds each checkout")
    cs = ctx.add_subparsers(dest="context_command", metavar="ACTION", required=True)
    p = cs.add_parser("list", help="contexts with claim state and foreground frame")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_list)
    for name, help_text in (("release", "release a held claim (nothing live may remain)"),
                            ("block", "block the claim: no automatic transition takes it")):
        p = cs.add_parser(name, help=help_text)
        p.add_argument("work_context_id")
        p.add_argument("--request-id", help=_RETRY_HELP)
        p.add_argument("--json", action="store_true")
        p.set_defaults(handler=_act, action=name)
    p = cs.add_parser("resolve", help="resolve a blocked claim (explicit human decision)")
    p.add_argument("work_context_id")
    p.add_argument("--to", choices=["released", "held"], required=True)
    p.add_argument("--foreground", metavar="FRAME_ID",
                   help="with --to held: the open frame that gets foreground authority")
    p.add_argument("--request-id", help=_RETRY_HELP)
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_resolve)


def _list(args: argparse.Namespace) -> int:
    from core.engine.open import open_engine

    rows = [dict(r) for r in open_engine().conn.execute(
        "SELECT c.work_context_id, p.name AS project, c.claim_state, c.claim_generation,"
        " c.foreground_frame_id, f.title AS foreground_title, c.background_state"
        " FROM work_contexts c JOIN projects p ON p.project_id = c.project_id"
        " LEFT JOIN frames f ON f.frame_id = c.foreground_frame_id"
        " ORDER BY p.name, c.work_context_id")]
    emit(rows, as_json=args.json, text="\n".join(
        f"{r['work_context_id']}  {r['project']:<16} {r['claim_state']:<8} "
        f"gen {r['claim_generation']:<3} {shown(r['foreground_title'] or '-')}" for r in rows)
        or "no work contexts yet")
    return 0


def _act(args: argparse.Namespace) -> int:
    from core.engine.open import open_engine

    engine = open_engine()
    method = engine.context_release if args.action == "release" else engine.context_block
    method(_rid(args), args.work_context_id)
    emit({"work_context_id": args.work_context_id, "action": args.action}, as_json=args.json,
         text=f"{args.action}: {args.work_context_id}")
    return 0


def _resolve(args: argparse.Namespace) -> int:
    from core.engine.open import open_engine
    from core.model.enums import ClaimState
    from core.model.errors import SwitchboardError

    if args.to == "held" and not args.foreground:
        raise SwitchboardError("--to held needs --foreground FRAME_ID", code="bad_request")
    open_engine().context_resolve(_rid(args), args.work_context_id,
                                  ClaimState(args.to), args.foreground)
    emit({"work_context_id": args.work_context_id, "to": args.to}, as_json=args.json,
         text=f"resolved {args.work_context_id} -> {args.to}")
    return 0
