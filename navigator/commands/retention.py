"""`switchboard prune [--older-than DAYS] [--dry-run]`: drop old closed frames' evidence.

The rule and the removal are ``core.fleet.retention``; the default age is the
config's ``[retention] evidence_days``.
"""

from __future__ import annotations

import argparse

MAX_DAYS = 36_500


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "prune", help="remove the session evidence and artifacts of frames closed more than "
                      "DAYS days ago (default: [retention] evidence_days in the config)")
    p.add_argument("--older-than", type=_days, metavar="DAYS",
                   help=f"age in whole days, 0 to {MAX_DAYS}")
    p.add_argument("--dry-run", action="store_true", help="print what would go; remove nothing")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(handler=_prune)


def _days(text: str) -> int:
    """DAYS as a whole number in range; argparse words the refusal in one line."""
    try:
        value = int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(
            "must be a whole number of days (nothing was removed)") from None
    if not 0 <= value <= MAX_DAYS:
        raise argparse.ArgumentTypeError(
            f"must be from 0 to {MAX_DAYS} days (nothing was removed)")
    return value


def _prune(args: argparse.Namespace) -> int:
    from core.engine.open import open_engine
    from core.fleet.retention import prune, retention_days, summary_lines
    from navigator.commands.output import emit

    engine = open_engine()
    report = prune(engine, retention_days(engine, args.older_than), dry_run=args.dry_run)
    emit(report, as_json=args.json, text="\n".join(summary_lines(report)))
    return 0
