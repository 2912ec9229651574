"""The hook's part in usage (issue 26): at a turn's end, hand the CLI's file to the reader.

Called by ``core.hooks.hook_handler`` after the registry commit, best effort (a
failure is said on stderr; the provider's hook still succeeds). Only the Stop
and StopFailure of a managed session do anything, and then only one
``posix_spawn`` of ``python -m core.usage.worker``: the hook imports none of the
readers and never waits for the read, so a long transcript costs the agent's
turn end nothing. When the home's server runs, the read is handed to it instead
(``core.model.turn_end``: no interpreter started per turn end). The read is
incremental and idempotent, so a worker that did not run is made up by the next
turn end's.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import sqlite3

    from core.config.home import Home

TURN_END_EVENTS = frozenset({"Stop", "StopFailure", "session.idle", "AfterAgent"})
"""Claude Code's and Codex's turn ends (StopFailure: the turn ended on an API error,
such as a rate limit; the transcript holds the error line), and OpenCode's
(``session.idle``; its ``transcript_path`` is the plugin's usage file) and Gemini CLI's
(``AfterAgent``; its ``transcript_path`` is the session's chat record)."""
WORKER_MODULE = "core.usage.worker"
LOG_NAME = "usage-worker.log"


def after_turn(home: Home, provider: str, event: str, document: dict[str, object],
               session_key: str | None, turn_id: str | None, *,
               first_hook: bool = False) -> bool:
    """Start the usage read of this turn; True when a reader was started.

    ``first_hook``: the hook that bound a Codex session (its first prompt). Its read
    finds no usage yet but records where the rollout file is, so a turn that ends
    without a Stop (Codex fires none for a turn the service refused) is read by the
    next reconcile (``core.reconcile.usage_sweep``)."""
    if (event not in TURN_END_EVENTS and not first_hook) or not session_key:
        return False
    source = document.get("transcript_path")
    if not isinstance(source, str) or not source or "\x00" in source:
        return False
    # a turn end's reader waits for its turn's lines (``core.usage.worker.SETTLE``)
    tail = [""] if first_hook else [turn_id or "", "settle"]
    from core.model.turn_end import USAGE, hand_off, path_key

    if hand_off(home.run_dir, USAGE, path_key(session_key, source),
                [session_key, provider, source, *tail]):
        return True  # the running server reads it (one item per session, coalesced)
    try:
        from core.model.spawn import spawn_detached

        env = {k: v for k, v in os.environ.items() if k != "SWITCHBOARD_CAPABILITY"}
        env.update(home.child_env())
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
        home.run_dir.mkdir(parents=True, exist_ok=True)
        spawn_detached([sys.executable, "-m", WORKER_MODULE, session_key, provider, source,
                        *tail], env,
                       log_path=str(home.run_dir / LOG_NAME))
    except OSError as exc:  # never break the provider over usage
        print(f"switchboard: usage reader not started: {exc}", file=sys.stderr)
        return False
    return True


def open_limit_recovery(conn: sqlite3.Connection, host_id: str, frame_id: str, words: str,
                        now: int) -> None:
    """The frame's agent stopped on a usage or rate limit: the person learns it as a
    recovery (the badge says ``limited``); the agent's next prompt resolves it. Inside
    the caller's write transaction (the hook's, or the usage reader's for Codex)."""
    from core.model.enums import Actionability, RecoveryKind
    from storage.operations import recoveries as recoveries_ops
    from storage.session_db import new_id

    title = conn.execute("SELECT title FROM frames WHERE frame_id = ?",
                         (frame_id,)).fetchone()
    recoveries_ops.open_recovery(
        conn, recovery_id=new_id(), host_id=host_id, kind=RecoveryKind.USAGE_LIMIT,
        subject_type="frame", subject_id=frame_id, actionability=Actionability.OPEN_VIEW,
        explanation=f"“{title[0] if title else frame_id}” stopped on its provider's usage or "
                    f"rate limit: {words} Press Enter to go there; type a line to it once "
                    "the limit resets (`switchboard limits` lists every limited agent).",
        now=now)
