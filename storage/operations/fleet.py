"""Fleet-wide writes: what `switchboard restore` records about an agent it could not resume.

Restore (``core.fleet.restore``) resumes every agent a tmux server took down; the
``server_restarted`` recovery reconcile opened about each lost pane is what says
"this agent was live". When a resume is refused (the provider is gone, the
session's exact id is unknown), that recovery stays open and its sentence is
rewritten to say why, so the person sees the cause where they look for it and a
later `n` (or `switchboard restore`) closes it by running the agent again.
"""

from __future__ import annotations

import sqlite3

from storage.operations.common import cas


def explain_open_recovery(conn: sqlite3.Connection, recovery_id: str, explanation: str,
                          now: int) -> None:
    """Replace an open recovery's sentence (bounded like every recovery's)."""
    cas(conn, "UPDATE recoveries SET bounded_explanation = ?, updated_at = ?"
        " WHERE recovery_id = ? AND state = 'open'",
        (explanation[:1024], now, recovery_id), f"open recovery {recovery_id}")
