"""The hook's side of broker delivery: after a trusted Stop, hand pending lines on.

Stdlib only (the hook path stays lean: no Textual, no engine, no libtmux): one
read-only SQLite query says whether the stopped frame's member has a message
that was never typed; only then a detached ``python -m core.apps.workers kick``
does the real work (reconcile, gate, type under the pane lock) while the hook
returns at once. With the home's server running, that work is handed to it instead
(``core.model.turn_end``), and no process is started.
"""

from __future__ import annotations

import sqlite3
import sys
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING

from storage.uri import open_uri

if TYPE_CHECKING:
    from core.config.home import Home

MANAGED_PREFIX = "switchboard-frame:"
"""Description prefix of a member that is a Switchboard-launched agent's frame."""


def frame_description(frame_id: str) -> str:
    return MANAGED_PREFIX + frame_id


def pending_for_frame(broker_path: Path, frame_id: str) -> bool:
    """Cheap read-only check for the hook: does this frame's member wait for a line?

    Plain SQLite, no diagnosis, no engine: a few milliseconds on a Stop.
    """
    if not broker_path.exists():
        return False
    try:
        conn = open_uri(broker_path, "ro", timeout=0.5)
    except sqlite3.Error:
        return False
    try:
        row = conn.execute(
            "SELECT 1 FROM messages ms JOIN members m ON m.member_id = ms.to_member_id"
            " WHERE m.description = ? AND m.status = 'active'"
            " AND ms.status_state <> 'completed' AND ms.notified_at IS NULL LIMIT 1",
            (frame_description(frame_id),)).fetchone()
        return row is not None
    except sqlite3.Error:
        return False
    finally:
        conn.close()


def kick_after_stop(broker_path: Path, frame_id: str, env: dict[str, str], *,
                    home: Home | None = None) -> bool:
    """Hand the delivery on when this frame has undelivered messages; hook stays fast.

    To the home's running server when ``home`` is given and it runs
    (``core.model.turn_end``), else to a detached deliverer."""
    if not pending_for_frame(broker_path, frame_id):
        return False
    if home is not None:
        from core.model.turn_end import KICK, hand_off

        if hand_off(home.run_dir, KICK, frame_id, [frame_id]):
            return True
    from core.model.spawn import spawn_detached

    with suppress(OSError):
        spawn_detached([sys.executable, "-m", "core.apps.workers", "kick", frame_id], env)
        return True
    return False


def witness_notice(broker_path: Path, frame_id: str, message_id: int, now_ms: int) -> bool:
    """The frame's agent submitted the notification line of ``message_id``: stamp it.

    Its prompt hook is the witness that the line arrived, so a typist that died
    before its own stamp does not leave it to be typed twice
    (``core.broker.delivery.Notifier._witnessed``)."""
    from storage.broker_witness import stamp_witnessed

    return stamp_witnessed(broker_path, frame_description(frame_id), message_id, now_ms)
