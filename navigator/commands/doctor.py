"""`switchboard doctor`: registry, broker, session files, tmux, providers, hooks."""

from __future__ import annotations

import argparse

from navigator.commands.output import emit


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("doctor", help="check the installation: one verdict per part")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_doctor)


def _doctor(args: argparse.Namespace) -> int:
    from core.apps.doctor import Verdict, run_doctor
    from core.config.home import Home
    from core.model.text import shown

    findings = run_doctor(Home.from_env())
    lines = []
    for f in findings:
        line = f"{f.verdict.value:4}  {f.part}: {shown(f.detail)}"
        if f.fix and f.verdict is not Verdict.OK:
            line += f"\n      do: {shown(f.fix)}"
        lines.append(line)
    failed = any(f.verdict is Verdict.FAIL for f in findings)
    lines.append("verdict: " + ("problems found (see `do:` lines)" if failed else "healthy"))
    emit(findings, as_json=args.json, text="\n".join(lines))
    return 1 if failed else 0
