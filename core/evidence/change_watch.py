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


def last_tool_run(conn: sqlite3.Connection, session_key: str) -> str | None:
    """When the newest tool run since the session's last prompt started (None: the turn
    ran no tool). Both tables are indexed by session and time."""
    row = conn.execute(
        "SELECT max(started_at) FROM tool_runs WHERE session_id = ? AND started_at >="
        " COALESCE((SELECT max(created_at) FROM messages WHERE session_id = ?"
        " AND role = 'user'), '')", (session_key, session_key)).fetchone()
    return row[0] if row is not None else None


def _already_seen(home: Home, frame_id: str, latest: str) -> bool:
    """Whether a worker was started for this very change (Codex ends a turn twice: its
    Stop hook and its notify); records ``latest`` when not."""
    from core.model.files import FolderNotPrivate, own_dir

    folder = home.run_dir / "review-seen"
    name = "".join(c for c in frame_id if c.isalnum() or c in "-_") or "frame"
    stamp = folder / name
    try:
        if stamp.read_text(encoding="utf-8") == latest:
            return True
    except OSError:
        pass
    try:
        own_dir(folder)
        fd = os.open(stamp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(latest)
    except (OSError, FolderNotPrivate):
        pass  # no stamp: at worst a second worker, which computes the same
    return False


def after_stop(conn: sqlite3.Connection, home: Home, session_key: str,
               frame_id: str | None) -> bool:
    """Start the change worker for ``frame_id`` when the turn ran tools; True if started.

    The worker gets the hook's home and environment minus the capability: it reads
    git and writes the review file, it needs no authority over the registry."""
    if not frame_id:
        return False
    latest = last_tool_run(conn, session_key)
    if latest is None or _already_seen(home, frame_id, latest):
        return False
    from core.model.turn_end import CHANGES, hand_off

    if hand_off(home.run_dir, CHANGES, frame_id, [frame_id]):
        return True  # the home's running server refreshes it, no process started
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
