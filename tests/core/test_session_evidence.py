"""The hook path writes privacy-safe evidence into the session's own file.

Replays the recorded Claude fixture through ``handle_hook`` (same live surface
as test_hook_handler) and reads the result back through ``session_detail``
and ``switchboard session show --json``.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from core.evidence import session_detail
from core.home import Home
from core.hook_handler import handle_hook
from storage.session_db import APPLICATION_ID, session_db_path
from tests.core.test_hook_handler import (
    FOREIGN_ID,
    LiveSurface,
    fixture_lines,
    live,  # noqa: F401  (fixture)
)

PROMPT = "TOOLTEST please run it"
SECRETS = (PROMPT, "tooltest_ran", "fake tool call", "FAKE-OK", "transcript_path",
           "/home/dev/.claude", "Claude needs your permission", "permission_suggestions")


def replay(live: LiveSurface) -> None:  # noqa: F811
    for event, document in fixture_lines():
        if document["session_id"] == FOREIGN_ID:
            continue
        document = dict(document, session_id=live.provider_session_id)
        assert handle_hook("claude", event, json.dumps(document).encode(), live.env()).handled


def db_bytes(path: Path) -> bytes:
    return b"".join(p.read_bytes() for p in (path, Path(f"{path}-wal")) if p.exists())


def test_replay_records_events_and_one_tool_run(live: LiveSurface) -> None:  # noqa: F811
    path = session_db_path(live.root, live.session_key)
    for created in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        created.unlink(missing_ok=True)  # the fake agent's own SessionStart wrote here
    replay(live)
    conn = sqlite3.connect(path)
    try:
        types = [(r[0], r[1]) for r in conn.execute(
            "SELECT source_id, type FROM events ORDER BY timestamp, rowid")]
        assert types == [
            ("UserPromptSubmit", "prompt_submitted"), ("PreToolUse", "tool_started"),
            ("PermissionRequest", "permission_requested"), ("Notification", "notification"),
            ("PostToolUse", "tool_finished"), ("Stop", "turn_stopped"),
            ("SessionEnd", "session_ended"), ("SessionStart", "session_started"),
            ("UserPromptSubmit", "prompt_submitted"), ("Stop", "turn_stopped"),
            ("Notification", "notification"), ("SessionEnd", "session_ended"),
        ]
        runs = conn.execute("SELECT tool_name, status, input_json, output_json, error_json,"
                            " duration_ms FROM tool_runs").fetchall()
        assert len(runs) == 1
        name, status, tool_input, output, error, duration = runs[0]
        assert (name, status, tool_input, output, error) == ("Bash", "ok", "{}", None, None)
        assert duration is not None and duration >= 0
        payloads = [json.loads(r[0]) for r in conn.execute("SELECT payload_json FROM events")]
        allowed = {"event", "kind", "tool_name", "turn_id", "notification_type", "activity"}
        assert all(set(p) <= allowed for p in payloads)
        first = conn.execute("SELECT agent_type, source_kind, route_text, route_json"
                             " FROM events ORDER BY timestamp, rowid LIMIT 1").fetchone()
        assert first[:2] == ("claude", "hook")
        assert first[2] == (f"session/{live.session_key}/turn/"
                            "b4a98e45-d406-48c3-98ef-7380eacddfaf")
        session = conn.execute("SELECT id, status, model_provider_id, exited_at, project_id"
                               " FROM sessions").fetchall()
        assert len(session) == 1 and session[0][:3] == (live.session_key, "active", "claude")
        assert session[0][3] is not None  # the last SessionEnd
        assert conn.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
    finally:
        conn.close()
    data = db_bytes(path)
    for secret in SECRETS:
        assert secret.encode() not in data, secret

    detail = session_detail(Home.from_env({"SWITCHBOARD_HOME": str(live.root)}),
                            live.session_key)
    assert detail.recorded and detail.counts.events == 12
    assert detail.counts.tool_runs == 1 and detail.counts.ok == 1
    assert detail.events[0].type == "session_ended"  # newest first
    assert detail.tool_runs[0].tool_name == "Bash" and detail.tool_runs[0].status == "ok"


def test_a_refused_evidence_file_never_breaks_the_hook(
        live: LiveSurface, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: F811
    path = session_db_path(live.root, live.session_key)
    path.parent.mkdir(parents=True, exist_ok=True)
    for leftover in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        leftover.unlink(missing_ok=True)
    path.write_bytes(b"someone else's file\n" * 64)
    before = path.read_bytes()
    event, document = fixture_lines()[0]
    document = dict(document, session_id=live.provider_session_id)
    outcome = handle_hook("claude", event, json.dumps(document).encode(), live.env())
    assert outcome.handled and outcome.activity == "working"
    assert path.read_bytes() == before
    assert "session evidence not recorded" in capsys.readouterr().err


def test_cli_session_show_json(live: LiveSurface,  # noqa: F811
                               capsys: pytest.CaptureFixture[str]) -> None:
    from navigator.cli import main

    replay(live)
    frame_id = live.engine.conn.execute(
        "SELECT frame_id FROM frames WHERE current_session_key = ?",
        (live.session_key,)).fetchone()[0]
    capsys.readouterr()
    assert main(["session", "show", frame_id, "--json", "--limit", "5"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["session_key"] == live.session_key and shown["recorded"] is True
    assert len(shown["events"]) == 5
    assert shown["counts"]["ok"] == 1
    assert shown["tool_runs"][0]["tool_name"] == "Bash"
    assert {"timestamp", "type", "tool_name"} <= set(shown["events"][0])
    assert main(["session", "show", frame_id]) == 0
    text = capsys.readouterr().out
    assert "Bash" in text and "ok" in text
    assert main(["session", "show", "no-such-frame"]) != 0
