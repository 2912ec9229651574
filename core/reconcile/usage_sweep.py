"""The next reconcile reads usage a Stop never announced (issue 26).

Codex fires no Stop hook for a turn the service refused (its usage limit): the
agent sits at its prompt while the registry still says ``working``. The session's
rollout file is known from its first hook (``core.hooks.usage_handoff`` records the
reader's cursor then), so a reconcile looks at each live session that has said
nothing for ``QUIET_MS``: if its file grew past the cursor, the usage reader runs
(detached, as after a Stop; by module name, this layer imports no reader), and a
turn that ended on a limit makes the frame limited. At most one start per session
and growth: the cursor moves, or the next pass sees the same size and starts none.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

    from core.context.context import Context

QUIET_MS = 30_000
"""No hook for this long while working: the turn may have ended without its Stop."""
_STARTED: dict[str, tuple[str, int]] = {}
"""session -> (file, size) a reader was started for, in this process."""
_CURSORS: dict[str, tuple[tuple[int, ...], list[tuple[str, int]]]] = {}
"""session -> (its evidence file's signature, its usage cursors), in this process."""


def quiet_sessions(ctx: Context, now: int) -> list[str]:
    rows = ctx.conn.execute(
        "SELECT session_key FROM provider_sessions WHERE runtime_presence = 'live'"
        " AND activity IN ('working', 'unknown') AND last_observed_at < ?",
        (now - QUIET_MS,)).fetchall()
    return [str(r[0]) for r in rows]


def sweep_usage(ctx: Context, now: int) -> int:
    """Start the reader for each quiet session whose file grew; returns how many."""
    from storage import session_db

    if ctx.home is None:
        return 0
    started = 0
    for key in quiet_sessions(ctx, now):
        path = session_db.session_db_path(ctx.home.root, key)
        for source, offset in _cursors(path, key):
            try:
                size = os.stat(source).st_size
            except OSError:
                continue
            if size <= offset or _STARTED.get(key) == (source, size):
                continue
            provider = key.split(":")[1] if key.count(":") >= 2 else ""
            if _start(ctx, key, provider, source):
                _STARTED[key] = (source, size)
                started += 1
    return started


def _signature(path: Path) -> tuple[int, ...] | None:
    """What changes when the evidence file (or its -wal) is written; None: no file."""
    try:
        found = os.stat(path)
    except OSError:
        return None
    try:
        wal = os.stat(f"{path}-wal")
        return found.st_mtime_ns, found.st_size, wal.st_mtime_ns, wal.st_size
    except OSError:
        return found.st_mtime_ns, found.st_size


def _cursors(path: Path, key: str) -> list[tuple[str, int]]:
    """The session's usage cursors (source file, bytes read), re-read only when its
    evidence file changed since the last turn read them: a fleet whose agents all sit
    quiet (200 of them in bench_scale's idle) cost the reconcile-turn holder 200 file
    opens a turn, ~1 % of a core, for cursors that had not moved."""
    from storage import session_db

    signature = _signature(path)
    if signature is None:
        _CURSORS.pop(key, None)
        return []
    known = _CURSORS.get(key)
    if known is not None and known[0] == signature:
        return known[1]
    try:
        conn = session_db.open_session_db_readonly(path)
    except Exception:  # noqa: BLE001 - a refused file is the evidence code's to report
        return []
    try:
        cursors = [(str(r[0]), int(r[1])) for r in conn.execute(
            "SELECT source_path, byte_offset FROM usage_cursors WHERE session_id = ?",
            (key,))] if session_db.has_usage_tables(conn) else []
    finally:
        conn.close()
    _CURSORS[key] = (signature, cursors)
    return cursors


def _start(ctx: Context, key: str, provider: str, source: str) -> bool:
    from core.model.spawn import spawn_detached

    home = ctx.home
    assert home is not None
    env = {k: v for k, v in os.environ.items() if k != "SWITCHBOARD_CAPABILITY"}
    env.update(home.child_env())
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
    try:
        home.run_dir.mkdir(parents=True, exist_ok=True)
        spawn_detached([sys.executable, "-m", "core.usage.worker", key, provider, source, ""],
                       env, log_path=str(home.run_dir / "usage-worker.log"))
    except OSError:
        return False
    return True
