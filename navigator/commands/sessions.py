"""`switchboard session show FRAME_ID`: the evidence of a frame's current session."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from navigator.commands.output import emit

if TYPE_CHECKING:
    from core.evidence import SessionDetail


def register(sub: argparse._SubParsersAction) -> None:
    session = sub.add_parser("session", help="provider sessions: recorded evidence")
    ss = session.add_subparsers(dest="session_command", metavar="ACTION", required=True)
    p = ss.add_parser("show", help="a frame's session: its agent, recent tool runs and events")
    p.add_argument("frame_id")
    p.add_argument("--limit", type=int, default=50, help="newest N events and tool runs")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_show)


def _show(args: argparse.Namespace) -> int:
    from core.evidence import session_detail, session_key_for_frame
    from core.session import open_engine

    engine = open_engine()
    try:
        key = session_key_for_frame(engine.conn, args.frame_id)
    finally:
        engine.conn.close()
    detail = session_detail(engine.home, key, limit=args.limit)  # type: ignore[attr-defined]
    emit(detail, as_json=args.json, text=render_text(detail))
    return 0


def render_text(detail: SessionDetail) -> str:
    """Short lines for people: counts, then the agent, tool runs and events, newest
    first."""
    if not detail.recorded:
        return f"{detail.session_key}: no evidence recorded yet"
    c = detail.counts
    lines = [f"{detail.session_key}: {c.events} events, {c.tool_runs} tool runs "
             f"({c.running} running, {c.ok} ok, {c.error} error, {c.cancelled} cancelled)"]
    if detail.agents:
        lines.append("agents:")
        for agent in detail.agents:
            seen = f"last seen {agent.last_heartbeat_at}" if agent.last_heartbeat_at else ""
            lines.append(f"  {agent.started_at}  {agent.type:<16} {agent.status:<9} "
                         f"{agent.model_id or '-'}  {seen}".rstrip())
    if detail.tool_runs:
        lines.append("tool runs:")
        for run in detail.tool_runs:
            took = f"{run.duration_ms} ms" if run.duration_ms is not None else "-"
            lines.append(f"  {run.started_at}  {run.tool_name:<16} {run.status:<9} {took}")
    if detail.events:
        lines.append("events:")
        for event in detail.events:
            extra = event.tool_name or event.notification_type or ""
            lines.append(f"  {event.timestamp}  {event.type:<20} {event.source or '':<18}"
                         f" {extra}".rstrip())
    return "\n".join(lines)
