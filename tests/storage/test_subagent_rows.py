"""A subagent's lifetime in its session's evidence file (``record_subagent``).

SubagentStart makes its row running, SubagentStop completes it; a stop whose start was
never seen is recorded completed (the count never goes below zero); an event without an
``agent_id`` cannot say which subagent it is and writes no subagent row; SessionEnd
cancels the ones still running; the session's own agent row is never counted.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from storage.session_db import (
    open_session_db,
    record_hook_event,
    running_subagents,
    session_db_path,
)

KEY = "h:claude:5e99a90b-28b7-4b4f-a775-ed6f2fda6f44"


def _hook(conn: sqlite3.Connection, event: str, kind: str, at: int,
          agent: str | None = None) -> None:
    record_hook_event(conn, session_key=KEY, provider="claude", project_id="p",
                      project_root="/src", event=event, kind=kind, now_ms=at,
                      subagent_id=agent, subagent_type="Explore" if agent else None)


def _rows(conn: sqlite3.Connection) -> list[tuple[str, str]]:
    return [(r[0].rsplit("/", 1)[-1], r[1]) for r in conn.execute(
        "SELECT id, status FROM agents WHERE type = 'subagent' ORDER BY id")]


def test_start_stop_unknown_and_session_end(tmp_path: Path) -> None:
    conn = open_session_db(session_db_path(tmp_path, KEY), now_ms=1_000)
    try:
        _hook(conn, "UserPromptSubmit", "prompt_submitted", 1_000)
        assert running_subagents(conn, KEY) == 0  # the session's own row is no subagent
        _hook(conn, "SubagentStart", "subagent_started", 1_100, "a1")
        _hook(conn, "SubagentStart", "subagent_started", 1_200, "a2")
        _hook(conn, "SubagentStart", "subagent_started", 1_250, "a2")  # twice: still one
        assert running_subagents(conn, KEY) == 2
        _hook(conn, "SubagentStop", "subagent_stopped", 1_300, "a1")
        _hook(conn, "SubagentStop", "subagent_stopped", 1_350, "zz")  # start never seen
        _hook(conn, "SubagentStart", "subagent_started", 1_400, None)  # no agent_id
        assert running_subagents(conn, KEY) == 1
        assert _rows(conn) == [("a1", "completed"), ("a2", "running"), ("zz", "completed")]
        _hook(conn, "Stop", "turn_stopped", 1_500)  # a background subagent outlives the turn
        assert running_subagents(conn, KEY) == 1
        _hook(conn, "SessionEnd", "session_ended", 1_600)
        assert running_subagents(conn, KEY) == 0
        assert _rows(conn) == [("a1", "completed"), ("a2", "cancelled"), ("zz", "completed")]
        meta = conn.execute("SELECT metadata_json FROM agents WHERE id LIKE '%/a2'").fetchone()
        assert meta[0] == '{"agent_id": "a2", "agent_type": "Explore"}'
    finally:
        conn.close()
