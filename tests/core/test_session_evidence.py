"""The hook path writes privacy-safe evidence into the session's own file.

Replays the recorded Claude and Codex fixtures through ``handle_hook`` (same
live surface as test_hook_handler) and reads the result back through
``session_detail`` and ``switchboard session show``.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.config.capabilities import ENV_CAPABILITY, ENV_GENERATION
from core.config.home import Home
from core.evidence.store import session_detail
from core.hooks.hook_handler import handle_hook
from core.model.ports import FixedClock
from storage.session_db import APPLICATION_ID, iso, session_db_path
from tests.core.test_hook_handler import (
    FIXTURES,
    FOREIGN_ID,
    LiveSurface,
    fixture_lines,
    launch_live_surface,
)
from tests.waiting import retry_until

CODEX_FIXTURE = FIXTURES / "codex-0.171.0.tsv"
CLAUDE_TOOL_USE_ID = "toolu_edac0b05e4c64ff8a0d6"

PROMPT = "TOOLTEST please run it"
#: Never kept anywhere: the transcript, tool descriptions, replies, notification text.
SECRETS = ("fake tool call", "FAKE-OK", "transcript_path", "/home/dev/.claude",
           "Claude needs your permission", "permission_suggestions")
#: Kept only in the session's own file (messages, command_runs), never elsewhere.
SESSION_ONLY = (PROMPT, "tooltest_ran")


def own_lines(live: LiveSurface, path: Path | None = None) -> list[tuple[str, dict]]:  # noqa: F811
    """The fixture's lines of the recorded session, rewritten to the launched one."""
    lines = []
    for event, document in fixture_lines(*(path,) if path else ()):
        key = "thread-id" if event == "notify" else "session_id"
        if document[key] != FOREIGN_ID:
            lines.append((event, dict(document, **{key: live.provider_session_id})))
    return lines


def send(live: LiveSurface, provider: str, event: str, document: dict,  # noqa: F811
         clock: FixedClock | None = None) -> None:
    outcome = handle_hook(provider, event, json.dumps(document).encode(), live.env(),
                          clock=clock)
    assert outcome.handled, (event, outcome)


def replay(live: LiveSurface, clock: FixedClock | None = None) -> None:  # noqa: F811
    for event, document in own_lines(live):
        if clock is not None:
            clock.advance(1000)
        send(live, "claude", event, document, clock)


def db_bytes(path: Path) -> bytes:
    return b"".join(p.read_bytes() for p in (path, Path(f"{path}-wal")) if p.exists())


def agent_written(live: LiveSurface) -> bool:  # noqa: F811
    """The fake agent's own SessionStart evidence has landed (it is written after the
    registry commit that launch_live_surface waits for)."""
    path = session_db_path(live.root, live.session_key)
    if not path.exists():
        return False
    conn = sqlite3.connect(path)
    try:
        return conn.execute("SELECT count(*) FROM agents").fetchone()[0] > 0
    except sqlite3.OperationalError:
        return False
    finally:
        conn.close()


def read(path: Path, sql: str, *args: object) -> list[tuple]:
    conn = sqlite3.connect(path)
    try:
        return [tuple(r) for r in conn.execute(sql, args)]
    finally:
        conn.close()


def now_clock() -> FixedClock:
    """Hook times under test control, near the real clock (capabilities expire)."""
    return FixedClock(time.time_ns() // 1_000_000)


def test_replay_records_events_and_one_tool_run(live: LiveSurface) -> None:  # noqa: F811
    path = session_db_path(live.root, live.session_key)
    assert retry_until(lambda: agent_written(live), 10)
    for created in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        created.unlink(missing_ok=True)  # the fake agent's own SessionStart wrote here
    replay(live)
    conn = sqlite3.connect(path)
    try:
        # The first hook of the (recreated) file also records the attempt (engine kind).
        assert [r[0] for r in conn.execute("SELECT type FROM events WHERE source_kind ="
                                           " 'engine'")] == ["attempt_started"]
        types = [(r[0], r[1]) for r in conn.execute(
            "SELECT source_id, type FROM events WHERE source_kind = 'hook'"
            " ORDER BY timestamp, rowid")]
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
        payloads = [json.loads(r[0]) for r in conn.execute("SELECT payload_json FROM events"
                                                           " WHERE source_kind = 'hook'")]
        allowed = {"event", "kind", "tool_name", "tool_use_id", "turn_id", "notification_type",
                   "activity"}
        assert all(set(p) <= allowed for p in payloads)
        # Paired by Claude's tool-use id; the recorded PermissionRequest carries none,
        # so it is not linked to a run by guesswork.
        run_id, meta = conn.execute("SELECT id, metadata_json FROM tool_runs").fetchone()
        assert json.loads(meta)["tool_use_id"] == CLAUDE_TOOL_USE_ID
        linked = dict(conn.execute("SELECT source_id, tool_run_id FROM events"
                                   " WHERE type LIKE 'tool_%' OR type LIKE 'permission%'"))
        assert linked == {"PreToolUse": run_id, "PostToolUse": run_id,
                          "PermissionRequest": None}
        first = conn.execute("SELECT agent_type, source_kind, route_text, route_json"
                             " FROM events WHERE source_kind = 'hook'"
                             " ORDER BY timestamp, rowid LIMIT 1").fetchone()
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
    for kept in SESSION_ONLY:
        assert kept.encode() in data, kept
        elsewhere = [p for p in live.root.rglob("*") if p.is_file()
                     and not p.is_relative_to(path.parent) and kept.encode() in p.read_bytes()]
        # the search index (issue 27) holds prompts and commands too: private like this file
        index = [p for p in elsewhere if p.name.startswith("search.db")]
        assert all(p.stat().st_mode & 0o777 == 0o600 for p in index), index
        assert [p for p in elsewhere if p not in index] == [], (kept, elsewhere)
    conn = sqlite3.connect(path)
    try:
        assert [json.loads(r[0])[0]["text"] for r in conn.execute(
            "SELECT content_json FROM messages WHERE role = 'user'")][:1] == [PROMPT]
        (command,) = conn.execute("SELECT command, cwd, exit_code, duration_ms,"
                                  " json_extract(metadata_json, '$.exit_code'),"
                                  " json_extract(metadata_json, '$.outcome'),"
                                  " tool_run_id, stdout_artifact_id FROM command_runs")
        assert command[:6] == ("touch /home/dev/src/demo/tooltest_ran", "/home/dev/src/demo",
                               None, 63, "unknown", "passed")
        assert command[6] == run_id and command[7] is None  # empty output: no artifact
    finally:
        conn.close()

    detail = session_detail(Home.from_env({"SWITCHBOARD_HOME": str(live.root)}),
                            live.session_key)
    assert detail.recorded and detail.counts.events == 13  # 12 hooks + the attempt
    assert detail.counts.tool_runs == 1 and detail.counts.ok == 1
    assert detail.events[0].type == "session_ended"  # newest first
    assert detail.tool_runs[0].tool_name == "Bash" and detail.tool_runs[0].status == "ok"


# The agent row after each of the replayed Claude lines (foreign-session lines skipped).
AGENT_AFTER_LINE = [
    ("UserPromptSubmit", "running"), ("PreToolUse", "running"),
    ("PermissionRequest", "running"), ("Notification", "running"),
    ("PostToolUse", "running"), ("Stop", "running"), ("SessionEnd", "completed"),
    ("SessionStart", "starting"),  # resumed: a new lifetime
    ("UserPromptSubmit", "running"), ("Stop", "running"),
    ("Notification", "running"), ("SessionEnd", "completed"),
]


def test_replay_moves_the_agent_row_line_by_line(live: LiveSurface) -> None:  # noqa: F811
    path = session_db_path(live.root, live.session_key)
    assert retry_until(lambda: agent_written(live), 10)
    (launched,) = read(path, "SELECT started_at FROM agents")
    clock = now_clock()
    started = launched[0]  # the fake agent's own SessionStart
    completed = None
    lines = own_lines(live)
    assert [e for e, _ in lines] == [e for e, _ in AGENT_AFTER_LINE]
    for (event, document), (_, status) in zip(lines, AGENT_AFTER_LINE, strict=True):
        clock.advance(1000)
        send(live, "claude", event, document, clock)
        at = iso(clock.now_ms())
        started = at if event == "SessionStart" else started
        completed = at if status == "completed" else None if event == "SessionStart" \
            else completed
        rows = read(path, "SELECT id, session_id, type, status, model_id, started_at,"
                    " completed_at, last_heartbeat_at FROM agents")
        assert rows == [(live.session_key, live.session_key, "claude", status, None,
                         started, completed, at)], event
    agents = read(path, "SELECT DISTINCT agent_id FROM events UNION"
                  " SELECT DISTINCT agent_id FROM tool_runs")
    assert agents == [(live.session_key,)]


@pytest.fixture
def live_codex(tmp_path: Path, tmux_socket: Path,
               monkeypatch: pytest.MonkeyPatch) -> Iterator[LiveSurface]:
    monkeypatch.setenv("SWITCHBOARD_HOME", str(tmp_path))
    for name in ("TMUX", "TMUX_PANE", ENV_CAPABILITY, ENV_GENERATION):
        monkeypatch.delenv(name, raising=False)
    surface = launch_live_surface(tmp_path, tmux_socket, provider="codex")
    yield surface
    surface.engine.conn.close()


def test_codex_replay_records_its_model_and_pairs_by_call_id(
        live_codex: LiveSurface) -> None:
    codex = live_codex
    path = session_db_path(codex.root, codex.session_key)  # the thread id's key, after rekey
    assert retry_until(lambda: agent_written(codex), 10)
    clock = now_clock()
    for event, document in own_lines(codex, CODEX_FIXTURE):
        clock.advance(1000)
        send(codex, "codex", event, document, clock)
    (row,) = read(path, "SELECT id, type, status, model_id, completed_at, last_heartbeat_at,"
                  " model_provider_id FROM agents")
    # Codex sends no SessionEnd: the agent is still running after its turn.
    assert row == (codex.session_key, "codex", "running", "fake-model", None,
                   iso(clock.now_ms()), None)
    (run,) = read(path, "SELECT tool_name, status, duration_ms, agent_id,"
                  " json_extract(metadata_json, '$.tool_use_id') FROM tool_runs")
    assert run == ("Bash", "ok", 2000, codex.session_key, "call_0458fa03c3b9")
    # Codex's PostToolUse states no exit code and its output is empty: the command run says
    # unknown (neither passed nor failed) and stores no artifact.
    (command,) = read(path, "SELECT command, cwd, exit_code, json_extract(metadata_json,"
                      " '$.exit_code'), json_extract(metadata_json, '$.outcome'),"
                      " combined_artifact_id, duration_ms FROM command_runs")
    assert command == ("touch /home/dev/src/demo/codex_tooltest_ran", "/home/dev/src/demo",
                       None, "unknown", "unknown", None, 2000)
    detail = session_detail(Home.from_env({"SWITCHBOARD_HOME": str(codex.root)}),
                            codex.session_key)
    assert [(a.type, a.status, a.model_id) for a in detail.agents] == \
        [("codex", "running", "fake-model")]


def test_concurrent_runs_of_one_tool_close_by_id_through_the_hook(
        live: LiveSurface) -> None:  # noqa: F811
    path = session_db_path(live.root, live.session_key)
    lines = dict(own_lines(live)[:5])  # one of each tool event
    pre, post = lines["PreToolUse"], lines["PostToolUse"]
    clock = now_clock()
    start = clock.now_ms()
    for event, document, after in (
            ("PreToolUse", dict(pre, tool_use_id="toolu_first"), 0),
            ("PreToolUse", dict(pre, tool_use_id="toolu_second"), 10),
            ("PostToolUse", dict(post, tool_use_id="toolu_second"), 30),
            ("PostToolUseFailure", dict(post, tool_use_id="toolu_first",
                                        hook_event_name="PostToolUseFailure"), 100)):
        clock.current_ms = start + after
        send(live, "claude", event, document, clock)
    runs = read(path, "SELECT json_extract(metadata_json, '$.tool_use_id'), tool_name, status,"
                " started_at, duration_ms FROM tool_runs WHERE json_extract(metadata_json,"
                " '$.tool_use_id') LIKE 'toolu_%' ORDER BY started_at")
    assert runs == [("toolu_first", "Bash", "error", iso(start), 100),
                    ("toolu_second", "Bash", "ok", iso(start + 10), 20)]


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

    assert retry_until(lambda: agent_written(live), 10)  # no late SessionStart mid-replay
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
    assert [(a["type"], a["status"]) for a in shown["agents"]] == [("claude", "completed")]
    assert shown["agents"][0]["agent_id"] == live.session_key
    assert main(["session", "show", frame_id]) == 0
    text = capsys.readouterr().out
    assert "Bash" in text and "ok" in text
    agent_line = text.splitlines()[text.splitlines().index("agents:") + 1]
    assert agent_line.split()[1:3] == ["claude", "completed"] and "last seen" in agent_line
    assert main(["session", "show", "no-such-frame"]) != 0


def test_a_call_auto_mode_denied_ends_its_tool_run_failed(live: LiveSurface) -> None:  # noqa: F811
    """Claude Code 2.1.332's auto mode, recorded: the service's check blocked a risky
    command (PermissionDenied). The frame is never shown working for it after the
    turn: its tool run ends ``error`` in the session's evidence (the ``i`` screen's
    failures), the turn's Stop makes it ready."""
    recording = FIXTURES / "claude-2.1.332.tsv"
    lines = fixture_lines(recording)
    denied_session = next(doc["session_id"] for event, doc in lines
                          if event == "PermissionDenied")
    assert retry_until(lambda: agent_written(live), 10)
    clock = now_clock()
    states = []
    for event, document in lines:
        if document["session_id"] != denied_session or event == "SessionEnd":
            continue
        clock.advance(1000)
        send(live, "claude", event, dict(document, session_id=live.provider_session_id), clock)
        states.append((event, live.engine.conn.execute(
            "SELECT activity FROM provider_sessions WHERE session_key = ?",
            (live.session_key,)).fetchone()[0]))
    assert states == [("SessionStart", states[0][1]), ("UserPromptSubmit", "working"),
                      ("PreToolUse", "working"), ("PermissionDenied", "working"),
                      ("Stop", "ready")]
    path = session_db_path(live.root, live.session_key)
    assert read(path, "SELECT tool_name, status FROM tool_runs") == [("Bash", "error")]
    # the command never ran: its run ends failed, no exit code, the reason as its output
    assert read(path, "SELECT exit_code, json_extract(metadata_json, '$.outcome'),"
                      " completed_at IS NOT NULL FROM command_runs") == [(None, "failed", 1)]
    assert ("PermissionDenied",) in read(path, "SELECT json_extract(payload_json, '$.event')"
                                               " FROM events")
