"""`switchboard search TEXT [--project P]`: every session's evidence on this host."""

from __future__ import annotations

import argparse

from core.model.text import shown
from navigator.commands.output import emit


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("search", help="search briefs, handoffs, prompts, commands and "
                                      "failures of every frame on this host")
    p.add_argument("text", nargs="?", default="", help="words to find (all of them)")
    p.add_argument("--project", help="only this project (name or id)")
    p.add_argument("--limit", type=int, default=50,
                   help="at most this many matches, newest first (default 50)")
    p.add_argument("--rebuild", action="store_true",
                   help="index every frame again from the registry and the session files")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_search)


def _search(args: argparse.Namespace) -> int:
    from core.config.home import Home
    from core.review.search import rebuild, search

    home = Home.from_env()
    if args.rebuild:
        entries = rebuild(home)
        if not args.text:
            emit({"entries": entries}, as_json=args.json, text=f"indexed {entries} entries")
            return 0
    results = search(home, args.text, project=args.project, limit=args.limit)
    if args.json:
        emit([_plain(r) for r in results], as_json=True)
        return 0
    lines = [f"{r.at[:19].replace('T', ' ')}  {r.kind:<8} {shown(r.project_name)} / "
             f"{shown(r.frame_title)}{' (closed)' if r.frame_state == 'closed' else ''}  "
             f"{r.frame_id or '-'}\n    {shown(r.text)}" for r in results]
    emit(results, as_json=False, text="\n".join(lines) or "no matches")
    return 0


def _plain(result):
    from dataclasses import asdict

    values = asdict(result)
    values["snippet"] = result.text
    return values
