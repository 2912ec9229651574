"""session.db: exactly the spec's schema, the spec's PRAGMAs, closed enums, and refusal.

The expected tables, columns and indexes are parsed from the spec text when it
is available (``SWITCHBOARD_SPEC_DIR`` or /work/shared/spec) and otherwise
checked against the transcription in ``storage/session_schema.py``.
"""

from __future__ import annotations

import os
import re
import sqlite3
from pathlib import Path

import pytest

from core.model.evidence_enums import (
    CLOSED_COLUMNS,
    AgentStatus,
    EventSourceKind,
    SessionStatus,
    ToolRunStatus,
)
from storage import session_db
from storage.session_db import (
    SessionDbRefused,
    open_session_db,
    open_session_db_readonly,
    record_hook_event,
    safe_key,
    session_db_path,
)
from storage.session_schema import INDEXES, TABLES, USAGE_INDEXES, USAGE_TABLES

SPEC = Path(os.environ.get("SWITCHBOARD_SPEC_DIR", "/work/shared/spec")) \
    / "session-db-schema.txt"
KEY = "7f1c2d3e-0000-4000-8000-000000000001:claude:5e99a90b-28b7-4b4f-a775-ed6f2fda6f44"
NOW = 1_780_000_000_000


def spec_schema() -> tuple[dict[str, list[tuple[str, str, bool]]], dict[str, tuple]]:
    """(table -> [(column, type, not null)], index -> (table, columns, unique)) of
    the session DB section (sections 2-18) of the spec text."""
    text = SPEC.read_text(encoding="utf-8").split("19. V1 Summary")[0]
    tables = {}
    for name, body in re.findall(r"CREATE TABLE (\w+) \((.*?)\n\);", text, re.S):
        columns = []
        for line in body.splitlines():
            line = line.strip().rstrip(",")
            if line:
                parts = line.split()
                columns.append((parts[0], parts[1], "NOT NULL" in line))
        tables[name] = columns
    indexes = {name: (table, cols.replace(" ", ""), bool(unique))
               for unique, name, table, cols in re.findall(
                   r"CREATE (UNIQUE )?INDEX (\w+)\s+ON (\w+)\(([^)]*)\);", text)}
    return tables, indexes


def file_schema(conn: sqlite3.Connection) -> tuple[dict, dict]:
    tables = {}
    for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'"):
        tables[name] = [(r[1], r[2], bool(r[3]))
                        for r in conn.execute(f"PRAGMA table_info({name})")]
    indexes = {}
    for name, table in conn.execute("SELECT name, tbl_name FROM sqlite_master"
                                    " WHERE type = 'index' AND sql IS NOT NULL"):
        cols = ",".join(r[2] for r in conn.execute(f"PRAGMA index_info({name})"))
        unique = conn.execute(f"PRAGMA index_list({table})").fetchall()
        indexes[name] = (table, cols, any(r[1] == name and r[2] for r in unique))
    return tables, indexes


@pytest.fixture
def db(tmp_path: Path) -> sqlite3.Connection:
    conn = open_session_db(session_db_path(tmp_path, KEY), now_ms=NOW)
    yield conn
    conn.close()


def test_path_uses_a_safe_folder_name(tmp_path: Path) -> None:
    path = session_db_path(tmp_path, KEY)
    assert path == tmp_path / "sessions" / KEY.replace(":", "%3A") / "session.db"
    assert safe_key("..") == "%2E%2E" and "/" not in safe_key("a/b")
    assert safe_key("a:b") != safe_key("a_b")


def test_tables_columns_and_indexes_equal_the_spec(db: sqlite3.Connection) -> None:
    tables, indexes = file_schema(db)
    # V2's additions (usage, issue 26) are Switchboard's own, beside the spec's V1
    assert {name: tables.pop(name) is not None for name in USAGE_TABLES} == \
        dict.fromkeys(USAGE_TABLES, True)
    assert {name: indexes.pop(name)[0] for name in USAGE_INDEXES} == \
        {name: table for name, (table, _c, _u) in USAGE_INDEXES.items()}
    if SPEC.exists():
        want_tables, want_indexes = spec_schema()
        assert len(want_tables) == 17 and len(want_indexes) == 37
    else:
        want_tables = {name: [(line.split()[0], line.split()[1], "NOT NULL" in line)
                              for line in body.strip().splitlines()]
                       for name, body in TABLES.items()}
        want_indexes = {n: (t, c.replace(" ", ""), u) for n, (t, c, u) in INDEXES.items()}
    assert tables == want_tables
    assert indexes == want_indexes
    retry = db.execute("SELECT dflt_value FROM pragma_table_info('tasks')"
                       " WHERE name = 'retry_count'").fetchone()[0]
    assert retry == "0"


def test_pragmas_and_meta(db: sqlite3.Connection) -> None:
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert db.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
    assert db.execute("PRAGMA foreign_keys").fetchone()[0] == 0
    assert db.execute("PRAGMA application_id").fetchone()[0] == session_db.APPLICATION_ID
    meta = dict(db.execute("SELECT key, value FROM schema_meta"))
    assert meta["schema_version"] == "2" and meta["created_by"] == "switchboard"
    assert set(meta) == {"schema_version", "created_by", "created_at",
                         "switchboard_version_created", "switchboard_version_last_opened"}
    assert meta["created_at"].startswith("2026-")


@pytest.mark.parametrize(("table", "column"), sorted(CLOSED_COLUMNS))
def test_closed_enums_are_checked(db: sqlite3.Connection, table: str, column: str) -> None:
    sql = db.execute("SELECT sql FROM sqlite_master WHERE name = ?", (table,)).fetchone()[0]
    assert f"CONSTRAINT {table}_{column}_closed CHECK" in sql
    values = ", ".join(f"'{v.value}'" for v in CLOSED_COLUMNS[(table, column)])
    assert f"{column} IN ({values})" in sql


def test_tool_run_status_outside_the_set_is_refused(db: sqlite3.Connection) -> None:
    with pytest.raises(sqlite3.IntegrityError, match="tool_runs_status_closed"):
        db.execute("INSERT INTO tool_runs (id, session_id, tool_name, status, input_json,"
                   " started_at) VALUES ('x', 's', 'Bash', 'finished', '{}', 'now')")


def hook(db: sqlite3.Connection, event: str, kind: str, at: int, **facts: object) -> str:
    return record_hook_event(db, session_key=KEY, provider="claude", project_id="proj",
                             project_root="/src/demo", frame_id="frame-1", event=event,
                             kind=kind, now_ms=at, **facts)


def test_written_constants_are_the_enum_values() -> None:
    assert tuple(ToolRunStatus) == \
        (session_db.RUNNING, session_db.OK, session_db.ERROR, session_db.CANCELLED)
    assert session_db.SESSION_ACTIVE == SessionStatus.ACTIVE
    assert session_db.SOURCE_HOOK == EventSourceKind.HOOK
    assert (session_db.AGENT_STARTING, session_db.AGENT_RUNNING, session_db.AGENT_COMPLETED) \
        == (AgentStatus.STARTING, AgentStatus.RUNNING, AgentStatus.COMPLETED)
    assert set(session_db.AGENT_STATUS_BY_KIND.values()) <= set(AgentStatus)


def test_event_and_tool_run_share_one_transaction(db: sqlite3.Connection) -> None:
    hook(db, "PreToolUse", "tool_started", NOW, turn_id="t1", tool_name="Bash")
    hook(db, "PostToolUse", "tool_finished", NOW + 63, turn_id="t1", tool_name="Bash")
    run = db.execute("SELECT * FROM tool_runs").fetchone()
    assert (run["status"], run["duration_ms"], run["input_json"]) == ("ok", 63, "{}")
    linked = [r[0] for r in db.execute("SELECT tool_run_id FROM events ORDER BY timestamp")]
    assert linked == [run["id"], run["id"]]
    # a failing domain update rolls the event back too
    before = db.execute("SELECT count(*) FROM events").fetchone()[0]
    db.execute("CREATE TRIGGER boom BEFORE INSERT ON tool_runs BEGIN"
               " SELECT RAISE(ABORT, 'boom'); END")
    with pytest.raises(sqlite3.IntegrityError):
        hook(db, "PreToolUse", "tool_started", NOW + 100, turn_id="t2", tool_name="Read")
    assert db.execute("SELECT count(*) FROM events").fetchone()[0] == before


def test_stop_cancels_a_tool_that_never_finished(db: sqlite3.Connection) -> None:
    hook(db, "PreToolUse", "tool_started", NOW, turn_id="t1", tool_name="Bash")
    hook(db, "PostToolUseFailure", "tool_finished", NOW + 5, tool_name="Read", failed=True)
    hook(db, "Stop", "turn_stopped", NOW + 1000, turn_id="t1")
    rows = db.execute("SELECT tool_name, status, duration_ms FROM tool_runs"
                      " ORDER BY started_at").fetchall()
    assert [tuple(r) for r in rows] == [("Bash", "cancelled", 1000), ("Read", "error", None)]


def runs(db: sqlite3.Connection) -> dict[str, tuple]:
    """tool-use id (or tool name when there is none) -> (status, duration_ms, id)."""
    rows = db.execute("SELECT id, tool_name, status, duration_ms,"
                      " json_extract(metadata_json, '$.tool_use_id') FROM tool_runs").fetchall()
    return {r[4] or r[1]: (r[2], r[3], r[0]) for r in rows}


def test_concurrent_runs_of_one_tool_close_by_their_own_id(db: sqlite3.Connection) -> None:
    hook(db, "PreToolUse", "tool_started", NOW, tool_name="Bash", tool_use_id="toolu_A")
    hook(db, "PreToolUse", "tool_started", NOW + 10, tool_name="Bash", tool_use_id="toolu_B")
    # B finishes first: first-in first-out by name would wrongly close A here.
    finished_b = hook(db, "PostToolUse", "tool_finished", NOW + 30, tool_name="Bash",
                      tool_use_id="toolu_B")
    assert runs(db)["toolu_A"][:2] == ("running", None)
    assert runs(db)["toolu_B"][:2] == ("ok", 20)
    hook(db, "PostToolUseFailure", "tool_finished", NOW + 100, tool_name="Bash",
         tool_use_id="toolu_A", failed=True)
    by_id = runs(db)
    assert {k: v[:2] for k, v in by_id.items()} == {"toolu_A": ("error", 100),
                                                    "toolu_B": ("ok", 20)}
    linked = db.execute("SELECT tool_run_id FROM events WHERE id = ?",
                        (finished_b,)).fetchone()[0]
    assert linked == by_id["toolu_B"][2]
    payload = db.execute("SELECT payload_json FROM events WHERE id = ?",
                         (finished_b,)).fetchone()[0]
    assert '"tool_use_id":"toolu_B"' in payload


def test_an_id_never_closes_a_run_started_with_another_id(db: sqlite3.Connection) -> None:
    hook(db, "PreToolUse", "tool_started", NOW, tool_name="Bash", tool_use_id="toolu_A")
    hook(db, "PostToolUse", "tool_finished", NOW + 5, tool_name="Bash", tool_use_id="toolu_C")
    by_id = runs(db)
    assert by_id["toolu_A"][:2] == ("running", None)
    assert by_id["toolu_C"][:2] == ("ok", None)  # a finish whose start was never seen
    meta = db.execute("SELECT metadata_json FROM tool_runs WHERE id = ?",
                      (by_id["toolu_C"][2],)).fetchone()[0]
    assert '"start_seen": false' in meta


def test_without_ids_runs_pair_by_name_first_in_first_out(db: sqlite3.Connection) -> None:
    hook(db, "PreToolUse", "tool_started", NOW, tool_name="Read")
    hook(db, "PreToolUse", "tool_started", NOW + 10, tool_name="Read")
    hook(db, "PostToolUse", "tool_finished", NOW + 40, tool_name="Read")
    rows = db.execute("SELECT status, duration_ms FROM tool_runs ORDER BY started_at").fetchall()
    assert [tuple(r) for r in rows] == [("ok", 40), ("running", None)]
    # An id-carrying finish may close an id-less start of its tool (a start recorded
    # before ids were kept), but only when no run carries its id.
    hook(db, "PostToolUse", "tool_finished", NOW + 50, tool_name="Read", tool_use_id="toolu_R")
    rows = db.execute("SELECT status, duration_ms FROM tool_runs ORDER BY started_at").fetchall()
    assert [tuple(r) for r in rows] == [("ok", 40), ("ok", 40)]


def test_a_permission_links_to_its_run_only_by_id(db: sqlite3.Connection) -> None:
    hook(db, "PreToolUse", "tool_started", NOW, tool_name="Bash", tool_use_id="toolu_A")
    with_id = hook(db, "PermissionRequest", "permission_requested", NOW + 1,
                   tool_name="Bash", tool_use_id="toolu_A")
    without_id = hook(db, "PermissionRequest", "permission_requested", NOW + 2,
                      tool_name="Bash")
    linked = dict(db.execute("SELECT id, tool_run_id FROM events WHERE type = ?",
                             ("permission_requested",)).fetchall())
    assert linked == {with_id: runs(db)["toolu_A"][2], without_id: None}


def agent(db: sqlite3.Connection) -> tuple:
    rows = db.execute("SELECT id, session_id, type, status, model_id, started_at, completed_at,"
                      " last_heartbeat_at, model_provider_id, pid, task_id FROM agents").fetchall()
    assert len(rows) == 1, rows
    return tuple(rows[0])


def test_agent_row_follows_the_session_lifecycle(db: sqlite3.Connection) -> None:
    iso = session_db.iso
    steps = [  # (event, kind, facts, status, started, completed)
        ("SessionStart", "session_started", {}, "starting", NOW, None),
        ("UserPromptSubmit", "prompt_submitted", {"turn_id": "t1"}, "running", NOW, None),
        ("PreToolUse", "tool_started", {"tool_name": "Bash", "tool_use_id": "u1"},
         "running", NOW, None),
        ("Stop", "turn_stopped", {"turn_id": "t1"}, "running", NOW, None),
        ("SessionEnd", "session_ended", {}, "completed", NOW, 4),
        ("Notification", "notification", {"notification_type": "idle_prompt"},
         "completed", NOW, 4),
        ("SessionStart", "session_started", {}, "starting", NOW + 6000, None),  # resumed
        ("StopFailure", "other", {}, "starting", NOW + 6000, None),
    ]
    for index, (event, kind, facts, status, started, completed) in enumerate(steps):
        at = NOW + index * 1000
        hook(db, event, kind, at, **facts)
        row = agent(db)
        assert row[:4] == (KEY, KEY, "claude", status), (index, event)
        assert row[5:8] == (iso(started), iso(NOW + completed * 1000) if completed else None,
                            iso(at)), (index, event)
    assert row[4] is None and row[8:] == (None, None, None)  # no model named: NULL
    linked = {r[0] for r in db.execute("SELECT agent_id FROM events UNION"
                                       " SELECT agent_id FROM tool_runs")}
    assert linked == {KEY}


def test_agent_model_comes_from_the_payload_and_is_kept(db: sqlite3.Connection) -> None:
    hook(db, "Stop", "turn_stopped", NOW)  # first sight without SessionStart: it lives
    assert agent(db)[3:6] == ("running", None, session_db.iso(NOW))
    hook(db, "UserPromptSubmit", "prompt_submitted", NOW + 1, model_id="gpt-5-codex")
    hook(db, "Stop", "turn_stopped", NOW + 2)
    assert agent(db)[4] == "gpt-5-codex"
    hook(db, "UserPromptSubmit", "prompt_submitted", NOW + 3, model_id="gpt-5")
    assert agent(db)[4] == "gpt-5"


def test_agent_heartbeat_never_moves_back(db: sqlite3.Connection) -> None:
    hook(db, "UserPromptSubmit", "prompt_submitted", NOW + 500)
    hook(db, "Notification", "notification", NOW)  # a hook process that ran late
    assert agent(db)[7] == session_db.iso(NOW + 500)


def test_agent_update_shares_the_event_transaction(db: sqlite3.Connection) -> None:
    hook(db, "SessionStart", "session_started", NOW)
    db.execute("CREATE TRIGGER boom BEFORE UPDATE ON agents BEGIN"
               " SELECT RAISE(ABORT, 'boom'); END")
    with pytest.raises(sqlite3.IntegrityError):
        hook(db, "UserPromptSubmit", "prompt_submitted", NOW + 1)
    assert db.execute("SELECT count(*) FROM events").fetchone()[0] == 1
    assert agent(db)[3] == "starting"
    db.execute("DROP TRIGGER boom")
    with pytest.raises(sqlite3.IntegrityError, match="agents_status_closed"):
        db.execute("UPDATE agents SET status = 'idle'")


def _foreign_spec_file(path: Path, *, created_by: str = "aircoding", version: int = 1,
                       app_id: int = 0) -> None:
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA application_id = {app_id}")
    conn.execute(f"PRAGMA user_version = {version}")
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("CREATE TABLE schema_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    conn.executemany("INSERT INTO schema_meta VALUES (?, ?)",
                     [("schema_version", str(version)), ("created_by", created_by)])
    conn.commit()
    conn.close()


@pytest.mark.parametrize(("kind", "message"), [
    ("not_sqlite", "not a SQLite"),
    ("foreign_app", "another application"),
    ("newer_header", "newer than this Switchboard"),
    ("foreign_meta", "created by 'aircoding'"),
    ("newer_meta", "upgrade Switchboard"),
])
def test_foreign_or_newer_file_is_refused_byte_identical(tmp_path: Path, kind: str,
                                                         message: str) -> None:
    path = session_db_path(tmp_path, KEY)
    path.parent.mkdir(parents=True)
    if kind == "not_sqlite":
        path.write_bytes(b"not a database\n" * 100)
    elif kind == "foreign_app":
        _foreign_spec_file(path, app_id=0x41495243)
    elif kind == "newer_header":
        _foreign_spec_file(path, created_by="switchboard",
                           version=session_db.SCHEMA_VERSION + 1,
                           app_id=session_db.APPLICATION_ID)
    elif kind == "foreign_meta":
        _foreign_spec_file(path, app_id=session_db.APPLICATION_ID)
    else:  # header says the current version, schema_meta a newer one (a newer writer's)
        _foreign_spec_file(path, created_by="switchboard", version=session_db.SCHEMA_VERSION,
                           app_id=session_db.APPLICATION_ID)
        conn = sqlite3.connect(path)
        conn.execute("UPDATE schema_meta SET value = ? WHERE key = 'schema_version'",
                     (str(session_db.SCHEMA_VERSION + 1),))
        conn.commit()
        conn.close()
    before = path.read_bytes()
    siblings = sorted(p.name for p in path.parent.iterdir())
    for opener in (lambda: open_session_db(path, now_ms=NOW),
                   lambda: open_session_db_readonly(path)):
        with pytest.raises(SessionDbRefused, match=message):
            opener()
        assert path.read_bytes() == before
    assert sorted(p.name for p in path.parent.iterdir()) == siblings


def test_readonly_open_never_creates(tmp_path: Path) -> None:
    path = session_db_path(tmp_path, KEY)
    with pytest.raises(SessionDbRefused):
        open_session_db_readonly(path)
    assert not path.parent.exists()


def test_a_session_files_log_shrinks_back_after_a_reader_held_it_long(tmp_path: Path) -> None:
    """SQLite never shrinks a -wal by itself: a reader that kept the checkpoint from
    finishing once left the log at its largest for good (the soak's 32 MB). Every
    writer now truncates it to ``WAL_SIZE_LIMIT_BYTES`` when it starts the log again."""
    path = tmp_path / "session.db"
    writer = session_db.open_session_db(path, now_ms=1_796_500_000_000)
    reader = session_db.open_session_db_readonly(path)
    try:
        writer.execute("CREATE TABLE scratch (x BLOB)")
        wal = Path(f"{path}-wal")
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM schema_meta").fetchone()  # an old snapshot
        for _ in range(2000):  # ~8 MB while the snapshot keeps every page in the log
            writer.execute("INSERT INTO scratch VALUES (?)", (b"x" * 4000,))
        grown = wal.stat().st_size
        assert grown > 6 * session_db.WAL_SIZE_LIMIT_BYTES
        reader.execute("COMMIT")
        for _ in range(300):  # past the next checkpoint, then the log starts again
            writer.execute("INSERT INTO scratch VALUES (?)", (b"x" * 4000,))
        assert wal.stat().st_size < grown / 2, (grown, wal.stat().st_size)
    finally:
        reader.close()
        writer.close()
