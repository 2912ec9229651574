"""The agent's own witness of a notification line: its prompt hook stamps ``notified_at``.

A Switchboard-launched agent's prompt hook sees the exact text it received. When
that text is the notification line of a message still waiting for this agent
(``core.model.notice_line``), the line provably reached it, so the message is
stamped here as the typist would have: only while it is pending and unstamped,
only for the member that stands for the hook's own frame, and only in a file that
is plainly a current broker. The typist stamps too; whichever comes first wins and
the other touches no row. This is what keeps a typist that died between typing
and stamping from having the line typed a second time.

Stdlib only, one short write: it runs inside the provider's hook process.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from storage.uri import sqlite_uri

_APPLICATION_ID = 1128351288  # storage.broker_schema.APPLICATION_ID (a test keeps them equal)
_LEDGER_VERSION = 1  # storage.broker_schema.LEDGER_VERSION
_INPUT_REQUIRED = "input_required"  # MessageState.INPUT_REQUIRED


def iso_utc_ms(ms: int) -> str:
    """The broker's timestamp form (``core.broker.reading.iso_utc``), without datetime."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms // 1000)) + f".{ms % 1000:03d}Z"


def stamp_witnessed(broker_path: Path, description: str, message_id: int, now_ms: int) -> bool:
    """Stamp message ``message_id`` notified if it waits, unstamped, for the active member
    ``description`` names. True when this call stamped it; any failure is False (the
    typist's own stamp, or its next attempt, still covers the message)."""
    if not broker_path.exists():
        return False
    try:
        conn = sqlite3.connect(sqlite_uri(broker_path, mode="rw"), uri=True, timeout=2.0,
                               isolation_level=None)
    except sqlite3.Error:
        return False
    try:
        identity = (conn.execute("PRAGMA application_id").fetchone()[0],
                    conn.execute("PRAGMA user_version").fetchone()[0])
        if identity != (_APPLICATION_ID, _LEDGER_VERSION):
            return False
        cur = conn.execute(
            "UPDATE messages SET notified_at = ? WHERE message_id = ? AND status_state = ?"
            " AND notified_at IS NULL AND from_member_id <> to_member_id"
            " AND to_member_id IN (SELECT member_id FROM members"
            "                      WHERE description = ? AND status = 'active')",
            (iso_utc_ms(now_ms), message_id, _INPUT_REQUIRED, description))
        return cur.rowcount == 1
    except sqlite3.Error:
        return False
    finally:
        conn.close()
