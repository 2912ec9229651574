"""`switchboard recovery list|show|resolve|dismiss|run` and `switchboard reconcile`."""

from __future__ import annotations

import argparse

from core.model.text import shown
from navigator.commands.output import emit


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("reconcile", help="compare tmux with the registry; record recoveries")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_reconcile)
    rec = sub.add_parser("recovery", help="durable recoveries of uncertain outcomes")
    rs = rec.add_subparsers(dest="recovery_command", metavar="ACTION", required=True)
    p = rs.add_parser("list")
    p.add_argument("--all", action="store_true", help="include resolved and dismissed")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_list)
    for name, help_text in (("show", "one recovery"), ("resolve", "mark it resolved"),
                            ("dismiss", "dismiss it"), ("run", "execute a safe_auto one")):
        p = rs.add_parser(name, help=help_text)
        p.add_argument("recovery_id")
        if name != "show":
            p.add_argument("--request-id", help="reuse to retry idempotently (default: fresh)")
        p.add_argument("--json", action="store_true")
        p.set_defaults(handler=_one, action=name)


def _reconcile(args: argparse.Namespace) -> int:
    from core.engine.open import open_engine
    from core.reconcile.reconcile import reconcile

    report = reconcile(open_engine(with_stage=True))
    emit(report, as_json=args.json, text=reconcile_text(report))
    return 0


def reconcile_text(report) -> str:
    """One line: what reconcile looked at and every count that is not zero."""
    import dataclasses

    done = [f"{value} {field.name.replace('_', ' ')}"
            for field in dataclasses.fields(report) if field.name != "panes_seen"
            for value in [getattr(report, field.name)] if value]
    return (f"reconcile: {report.panes_seen} panes seen; "
            + (", ".join(done) if done else "nothing to repair"))


def _list(args: argparse.Namespace) -> int:
    from core.engine.open import open_engine
    from core.reconcile.recovery import list_recoveries

    rows = list_recoveries(open_engine(), include_closed=args.all)
    emit(rows, as_json=args.json, text="\n".join(
        f"{r.recovery_id}  {r.kind:<26} {r.actionability:<9} {r.state:<9} {shown(r.explanation)}"
        for r in rows) or "no open recoveries")
    return 0


def _one(args: argparse.Namespace) -> int:
    from core.engine.open import open_engine
    from core.reconcile import recovery
    from navigator.commands.output import request_id_from

    engine = open_engine(with_stage=args.action == "run")
    if args.action == "show":
        record = recovery.show(engine, args.recovery_id)
    else:
        fn = {"resolve": recovery.resolve, "dismiss": recovery.dismiss,
              "run": recovery.execute}[args.action]
        record = fn(engine, request_id_from(args), args.recovery_id)
    emit(record, as_json=args.json, text=f"{record.recovery_id}: {record.state}")
    return 0
