"""The hook's part in conflicts and review: start the change worker after a turn that
ran tools.

A turn that ran no tool changed no file, so a Stop only starts the detached
``core.review.worker`` when this session recorded a tool run since its last
prompt: once per change a hook saw, not once per refresh. The worker (git
plumbing, the review file) runs after the hook has returned. Lean: the hook
imports this on every Stop.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import sqlite3

    from core.config.home import Home

WORKER_MODULE = "core.review.worker"


def turn_ran_tools(conn: sqlite3.Connection, session_key: str) -> bool:
    """A tool run started since the session's last prompt (both indexed by session, time)."""
    row = conn.execute(
        "SELECT EXISTS (SELECT 1 FROM tool_runs WHERE session_id = ? AND started_at >="
        " COALESCE((SELECT max(created_at) FROM messages WHERE session_id = ?"
        " AND role = 'user'), ''))", (session_key, session_key)).fetchone()
    return bool(row[0])


def after_stop(conn: sqlite3.Connection, home: Home, session_key: str,
               frame_id: str | None) -> bool:
    """Start the change worker for ``frame_id`` when the turn ran tools; True if started.

    The worker gets the hook's home and environment minus the capability: it reads
    git and writes the review file, it needs no authority over the registry."""
    if not frame_id or not turn_ran_tools(conn, session_key):
        return False
    from core.config.capabilities import ENV_CAPABILITY
    from core.model.spawn import spawn_detached

    root = Path(__file__).resolve().parents[2]
    child = {k: v for k, v in os.environ.items() if k != ENV_CAPABILITY}
    child.update(home.child_env())
    env = child
    child["PYTHONPATH"] = os.pathsep.join(filter(None, [str(root), env.get("PYTHONPATH")]))
    try:
        spawn_detached([sys.executable, "-m", WORKER_MODULE, frame_id], child)
    except OSError as exc:
        print(f"switchboard: change worker not started: {exc}", file=sys.stderr)
        return False
    return True
