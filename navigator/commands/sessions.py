"""`switchboard session show FRAME_ID`: the evidence of a frame's current session."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from core.model.text import shown, shown_block
from navigator.commands.output import emit

if TYPE_CHECKING:
    from core.evidence.store import SessionDetail


def register(sub: argparse._SubParsersAction) -> None:
    session = sub.add_parser("session", help="provider sessions: recorded evidence")
    ss = session.add_subparsers(dest="session_command", metavar="ACTION", required=True)
    p = ss.add_parser("show", help="a frame's session: its timeline (prompts, tools, commands "
                      "with exit status), failures by signature, changes and handoff")
    p.add_argument("frame_id")
    p.add_argument("--limit", type=int, default=50, help="newest N events and tool runs")
    p.add_argument("--only", choices=["all", "commands", "failures", "tools"], default="all",
                   help="which timeline lines to print (the i screen's a/c/f/t)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_show)


def _show(args: argparse.Namespace) -> int:
    from core.engine.open import open_engine
    from core.evidence.store import session_detail, session_key_for_frame

    engine = open_engine()
    try:
        key = session_key_for_frame(engine.conn, args.frame_id)
    finally:
        engine.conn.close()
    detail = session_detail(engine.require_home(), key, limit=args.limit)
    if args.only != "all":
        from dataclasses import replace

        from core.evidence.store import TimelineFilter, filter_timeline
        detail = replace(detail, timeline=tuple(
            filter_timeline(detail.timeline, TimelineFilter(args.only))))
    emit(detail, as_json=args.json, text=render_text(detail))
    return 0


def render_text(detail: SessionDetail) -> str:
    """Short lines for people: counts, the checkout and what changed, the timeline
    (oldest first), failures by signature, the handoff, then the agent, tool runs and
    events, newest first."""
    if not detail.recorded:
        return f"{detail.session_key}: no evidence recorded yet"
    c = detail.counts
    failed = sum(1 for command in detail.commands if command.outcome == "failed")
    lines = [f"{detail.session_key}: {c.events} events, {len(detail.commands)} commands "
             f"({failed} failed), {c.tool_runs} tool runs "
             f"({c.running} running, {c.ok} ok, {c.error} error, {c.cancelled} cancelled)"]
    if detail.workspace is not None:
        w = detail.workspace
        branch = f" on {w.branch_name}" if w.branch_name else ""
        lines.append(f"checkout: {w.path} ({w.strategy}{branch})")
        if w.base_ref:
            lines.append(f"changes since {w.base_ref[:12]}:")
            lines += [f"  {line.strip()}" for line in (w.changes or "git could not say")
                      .splitlines()]
    if detail.timeline:
        exits = {cmd.command_run_id: cmd.exit_code for cmd in detail.commands}
        outputs = {cmd.command_run_id: cmd.artifacts for cmd in detail.commands}
        lines.append("timeline:")
        for entry in detail.timeline:
            status = entry.status or ""
            code = exits.get(entry.command_run_id or "")
            if code is not None:
                status += f" exit {code}"
            took = f" {entry.duration_ms} ms" if entry.duration_ms is not None else ""
            lines.append(f"  {entry.at}  {entry.kind.value:<8} {shown(entry.text)}"
                         f"{'  ' + status if status else ''}{took}".rstrip())
            for artifact in outputs.get(entry.command_run_id or "", ()):
                cut = ", cut" if artifact.truncated else ""
                lines.append(f"    {artifact.stream}: {artifact.path} "
                             f"({artifact.size_bytes} bytes{cut})")
    if detail.diagnostics:
        lines.append("failures by signature:")
        for group in detail.diagnostics:
            where = " ".join(x for x in (group.file, group.code) if x)
            state = "fixed" if group.fixed else "open"
            lines.append(f"  [{state}] {group.toolchain} {where}: {shown(group.message)} "
                         f"(x{group.count} in {group.runs} run(s); {group.signature[:12]})")
    if detail.handoff is not None:
        lines.append(f"handoff ({detail.handoff.evidence_refs} evidence refs):")
        lines.append("  " + shown_block(detail.handoff.summary).replace("\n", "\n  "))
        if detail.handoff.next_action:
            lines.append("  next: " + shown_block(detail.handoff.next_action)
                         .replace("\n", "\n  "))
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
            lines.append(f"  {run.started_at}  {shown(run.tool_name):<16} {run.status:<9} {took}")
    if detail.events:
        lines.append("events:")
        for event in detail.events:
            extra = shown(event.tool_name or event.notification_type or "")
            lines.append(f"  {event.timestamp}  {event.type:<20} {event.source or '':<18}"
                         f" {extra}".rstrip())
    return "\n".join(lines)
