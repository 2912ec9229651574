"""Moving a task to the other provider (issue 26): the brief the new agent claims.

``switchboard frame switch-provider`` stops the frame's agent and starts one of the
other provider in the same checkout. The new agent starts with the fixed claim line
(the only text ever typed or passed to an agent), so what it learns comes through
``transition_claim()`` like a pushed task's brief: a handover written here, in the
home's ``run/handover/<frame id>.json`` (0600 in a 0700 folder), built from what
Switchboard already holds: the task's brief (its push), its last handoff, and the
evidence of the session so far (commands and their outcomes, failures by signature,
what changed in the checkout). A claim returns it while no transition for the frame
is waiting to be claimed; a later switch replaces it. The earlier session is not
touched: it stays the frame's history (``frame_sessions``) and its evidence file.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from core.model.errors import SwitchboardError
from core.model.files import own_dir, read_bounded, write_private

if TYPE_CHECKING:
    from core.config.home import Home
    from core.evidence.store import SessionDetail

MAX_HANDOVER_BYTES = 64 * 1024
COMMANDS_LISTED = 12
FAILURES_LISTED = 8


@dataclass(frozen=True)
class Handover:
    """What the new agent claims: who it takes over from, and the brief."""

    frame_id: str
    from_provider: str
    to_provider: str
    brief: str


def handover_path(home: Home, frame_id: str) -> Path:
    return home.run_dir / "handover" / f"{frame_id}.json"


def task_brief(conn: sqlite3.Connection, frame_id: str) -> str | None:
    """The brief the task was pushed with (None for a project's workspace)."""
    row = conn.execute(
        "SELECT b.brief FROM view_transitions t JOIN transition_briefs b"
        " ON b.transition_id = t.transition_id WHERE t.target_frame_id = ?"
        " AND t.kind = 'push' ORDER BY t.created_at DESC LIMIT 1", (frame_id,)).fetchone()
    return None if row is None else str(row[0])


def build_brief(title: str, brief: str | None, detail: SessionDetail | None,
                from_provider: str, to_provider: str) -> str:
    """The handover text: the task, its last handoff and the evidence so far."""
    lines = [f"You are taking over the task “{title}” from a {from_provider} agent; the "
             f"person moved it to {to_provider}. Its session was stopped; you work in the "
             "same checkout. Continue the task from where it stands.", "",
             "Task brief:", brief or "(the project's workspace: no brief of its own)"]
    if detail is not None and detail.handoff is not None:
        lines += ["", "Last handoff:", detail.handoff.summary]
        if detail.handoff.next_action:
            lines.append(f"Next action: {detail.handoff.next_action}")
    if detail is not None and detail.recorded:
        commands = detail.commands[-COMMANDS_LISTED:]
        if commands:
            lines += ["", f"Commands so far (newest {len(commands)}):"]
            lines += [f"- {c.command} -> {c.outcome}"
                      + (f" (exit {c.exit_code})" if c.exit_code is not None else "")
                      for c in commands]
        failures = [d for d in detail.diagnostics if not d.fixed][:FAILURES_LISTED]
        if failures:
            lines += ["", "Failures not fixed yet:"]
            lines += [f"- {' '.join(x for x in (d.toolchain, d.file, d.code) if x)}: "
                      f"{d.message} (x{d.count})" for d in failures]
        if detail.workspace is not None and detail.workspace.changes:
            lines += ["", "Changes in the checkout since the task started:",
                      detail.workspace.changes]
    lines += ["", "When the outcome is done, call task_complete_return(summary, "
                  "next_action)."]
    text = "\n".join(lines)
    return text[:MAX_HANDOVER_BYTES // 2]


def write_handover(home: Home, handover: Handover) -> Path:
    path = handover_path(home, handover.frame_id)
    own_dir(path.parent)
    path.with_suffix(".claimed").unlink(missing_ok=True)  # a new handover, not claimed yet
    return write_private(path, json.dumps({
        "frame_id": handover.frame_id, "from_provider": handover.from_provider,
        "to_provider": handover.to_provider, "brief": handover.brief}))


def read_handover(home: Home | None, frame_id: str) -> Handover | None:
    """The frame's handover, if a switch wrote one (None when unreadable: a claim never
    fails over it)."""
    if home is None:
        return None
    path = handover_path(home, frame_id)
    if not path.is_file():
        return None
    try:
        data = json.loads(read_bounded(path, MAX_HANDOVER_BYTES, "the handover"))
        return Handover(str(data["frame_id"]), str(data["from_provider"]),
                        str(data["to_provider"]), str(data["brief"]))
    except (OSError, ValueError, KeyError, TypeError, SwitchboardError):
        return None


def mark_claimed(home: Home, frame_id: str) -> bool:
    """Record the handover's first claim; True when this was it."""
    marker = handover_path(home, frame_id).with_suffix(".claimed")
    if marker.exists():
        return False
    write_private(marker, "")
    return True
