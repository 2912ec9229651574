"""`switchboard usage` and `switchboard limits`: tokens, cost estimates and usage limits.

Both read only: the registry (titles, names, config) and every session's evidence
file, where the Stop hook's reader stored each turn's usage as the CLI recorded it.
"""

from __future__ import annotations

import argparse
import re
from typing import TYPE_CHECKING

from navigator.commands.output import emit

if TYPE_CHECKING:
    from core.usage.report import Limited, Summary

_SINCE = re.compile(r"^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?)?$")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("usage", help="tokens used and estimated cost, per agent, project "
                                     "and fleet")
    p.add_argument("--project", help="only this project (name or id)")
    p.add_argument("--since", help="only turns ended on or after DATE (YYYY-MM-DD, or "
                                   "YYYY-MM-DDTHH:MM in UTC)")
    p.add_argument("--turns", action="store_true", help="also list every turn")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_usage)
    p = sub.add_parser("limits", help="agents whose last turn ended on a usage or rate "
                                      "limit")
    p.add_argument("--resume-all", action="store_true",
                   help="type the fixed continue line into each limited agent now, once "
                        "(without waiting for its reset)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_limits)


def _since(value: str | None) -> str | None:
    from core.model.errors import SwitchboardError
    from core.model.text import shown

    if value is None:
        return None
    if not _SINCE.fullmatch(value):
        raise SwitchboardError(f"--since {shown(value)!r} is not a date; give YYYY-MM-DD or "
                               "YYYY-MM-DDTHH:MM (UTC)", code="since_invalid")
    return value.replace(" ", "T")


def _usage(args: argparse.Namespace) -> int:
    from core.config.registry import open_current
    from core.usage.report import summarize

    since = _since(args.since)
    opened = open_current(readonly=True)
    try:
        project_id = opened.config.project_id_for(args.project) if args.project else None
        summary = summarize(opened.home.root, opened.conn, opened.config.prices,
                            project_id=project_id, since=since)
    finally:
        opened.conn.close()
    emit(_usage_document(summary, args.turns), as_json=args.json, text=_usage_text(summary,
                                                                                  args.turns))
    return 0


def _tokens(tokens: object) -> dict[str, int]:
    from core.model.usage import Tokens

    assert isinstance(tokens, Tokens)
    return {"input": tokens.input, "output": tokens.output, "cache_read": tokens.cache_read,
            "cache_write": tokens.cache_write, "reasoning": tokens.reasoning}


def _usage_document(summary: Summary, with_turns: bool = True) -> dict[str, object]:
    document: dict[str, object] = {
        "estimate": True,
        "total": {**_tokens(summary.total.tokens), "turns": summary.total.turns,
                  "usd": summary.total.usd, "unpriced_turns": summary.total.unpriced},
        "projects": {name: {**_tokens(t.tokens), "turns": t.turns, "usd": t.usd,
                            "unpriced_turns": t.unpriced}
                     for name, t in summary.projects.items()},
        "agents": [{"session_key": a.session_key, "provider": a.provider,
                    "project": a.project, "frame_id": a.frame_id, "title": a.title,
                    "models": list(a.models), "turns": a.turns, **_tokens(a.tokens),
                    "usd": a.usd, "unpriced_turns": a.unpriced} for a in summary.agents],
        "turns": [{"session_key": t.session_key, "turn_id": t.turn_id, "model": t.model,
                   **_tokens(t.tokens), "requests": t.requests, "ended_at": t.ended_at,
                   "usd": t.usd, "price_taken_on": t.price_taken_on,
                   "limit": t.limit_kind.value if t.limit_kind else None,
                   "limit_reset_at": t.limit_reset_at} for t in summary.turns],
        "unreadable": summary.unreadable,
        "skipped_lines": summary.skipped_lines,
    }
    if not with_turns:
        document.pop("turns")
    return document


def _usage_text(summary: Summary, with_turns: bool) -> str:
    from core.model.text import shown
    from core.usage.report import tokens_short, usd_short

    lines = []
    for agent in summary.agents:
        name = shown(agent.title or agent.session_key)
        used = agent.tokens
        lines.append(f"{shown(agent.project)} / {name} ({agent.provider}, "
                     f"{shown(', '.join(agent.models)) or 'model unknown'}): {agent.turns} "
                     f"turns, in {tokens_short(used.input)} out {tokens_short(used.output)} "
                     f"cache {tokens_short(used.cache_read)}/{tokens_short(used.cache_write)}"
                     f", {usd_short(agent.usd, agent.unpriced)}")
    for name, project in summary.projects.items():
        lines.append(f"project {shown(name)}: {tokens_short(project.tokens.total)} tokens, "
                     f"{usd_short(project.usd, project.unpriced)}")
    t = summary.total
    lines.append(f"all: {t.turns} turns, {tokens_short(t.tokens.total)} tokens, "
                 f"{usd_short(t.usd, t.unpriced)} (estimate from the price table)")
    if with_turns:
        lines += [f"  {turn.ended_at} {shown(turn.model or '?')}: in {turn.tokens.input} out "
                  f"{turn.tokens.output} cache {turn.tokens.cache_read}/"
                  f"{turn.tokens.cache_write} {usd_short(turn.usd)}"
                  + (f" [limited: {turn.limit_kind.value}]" if turn.limit_kind else "")
                  for turn in summary.turns]
    lines += [f"unreadable: {shown(u)}" for u in summary.unreadable]
    if summary.skipped_lines:
        lines.append(f"skipped: {summary.skipped_lines} unreadable line(s) of the CLIs' files "
                     "(not counted; run/usage-worker.log says which)")
    return "\n".join(lines) if summary.turns else "no usage recorded yet\n" + "\n".join(lines)


def _limits(args: argparse.Namespace) -> int:
    from core.config.registry import open_current
    from core.usage.report import fleet_turns, limited, registry_names, working_sessions

    resumed: list[str] = []
    if args.resume_all:
        from core.engine.open import open_engine
        from core.reconcile.limits import resume_limited

        engine = open_engine(with_stage=True)
        try:
            resumed = resume_limited(engine, engine.now(), after_reset=False)
        finally:
            engine.conn.close()
    opened = open_current(readonly=True)
    try:
        found = limited(fleet_turns(opened.home.root, opened.config.prices).turns,
                        working_sessions(opened.conn))
        frames, _projects = registry_names(opened.conn)
    finally:
        opened.conn.close()
    emit({"limited": [_limit_document(item, frames) for item in found],
          "resumed": [{"frame_id": f, "title": frames.get(f)} for f in resumed]},
         as_json=args.json, text=_limits_text(found, frames, resumed))
    return 0


def _limit_document(item: Limited, frames: dict[str, str]) -> dict[str, object]:
    return {"session_key": item.session_key, "provider": item.provider,
            "frame_id": item.frame_id, "title": frames.get(item.frame_id or ""),
            "kind": item.kind.value, "message": item.message, "reset_at": item.reset_at,
            "reset_passed": item.reset_passed(), "ended_at": item.ended_at}


def _limits_text(found: list[Limited], frames: dict[str, str], resumed: list[str]) -> str:
    from core.model.text import shown

    typed = [f"continue typed into {shown(frames.get(f, f))}" for f in resumed]
    if not found:
        return "\n".join(["no agent is limited", *typed])
    lines = [f"{shown(frames.get(i.frame_id or '', i.session_key))} ({i.provider}): "
             f"{i.kind.value}, "
             + (f"resets {i.reset_at}" if i.reset_at else "reset time not stated")
             + f" - {shown(i.message)}" for i in found]
    return "\n".join(lines + typed)
