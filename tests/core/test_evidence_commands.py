"""Shell tool runs become command runs, artifacts, diagnostics and debug records.

The hooks are the recorded Claude/Codex tool payloads (tests/fixtures/hooks)
with their command and output replaced by a real pytest run in a real folder:
first failing, then, after the fix, passing. They go through
``switchboard hook`` as a subprocess, against a real registry and a live fake
agent on a private tmux server (the ``live`` surface of test_hook_handler).
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from core.config.capabilities import ENV_CAPABILITY, ENV_GENERATION
from core.model.spawn import fast_cli_argv
from storage.project_db import (
    DEBUG_RECORDS,
    LEARNED_MEMORY,
    ProjectDbRefused,
    open_project_db,
    project_db_path,
)
from storage.session_db import session_db_path
from storage.session_evidence import ARTIFACT_CAP, bound
from tests.core.test_hook_handler import (
    FOREIGN_ID,
    LiveSurface,
    fixture_lines,
)
from tests.core.test_session_evidence import (
    CODEX_FIXTURE,
    live_codex,  # noqa: F401  (fixture)
)
from tests.waiting import retry_until

ROOT = Path(__file__).resolve().parents[2]
FAILING = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"
TEST = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"


def recorded(event: str, path: Path | None = None) -> dict:
    """The recorded payload of ``event`` (the launched session's, not the foreign one)."""
    for name, document in fixture_lines(*(path,) if path else ()):
        if name == event and document.get("session_id") != FOREIGN_ID:
            return document
    raise AssertionError(f"no recorded {event}")


def hook(live: LiveSurface, event: str, document: dict, provider: str = "claude",  # noqa: F811
         *, fast: bool = False) -> subprocess.CompletedProcess[bytes]:
    """``switchboard hook --provider P EVENT`` with the payload on stdin, as a provider runs it
    (``fast``: through the hook's own entry, which ends with its files open)."""
    document = dict(document, session_id=live.provider_session_id)
    env = {k: v for k, v in os.environ.items()
           if k not in (ENV_CAPABILITY, ENV_GENERATION, "TMUX", "TMUX_PANE")}
    env.update(live.env(), PYTHONPATH=str(ROOT))
    program = fast_cli_argv() if fast else [sys.executable, "-m", "navigator.cli"]
    done = subprocess.run([*program, "hook", "--provider", provider,
                           event], input=json.dumps(document).encode(), env=env,
                          capture_output=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr.decode()
    assert b"evidence not recorded" not in done.stderr, done.stderr.decode()
    return done


def pytest_run(folder: Path) -> tuple[str, int]:
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-p", "no:randomly", "test_calc.py"], cwd=folder,
                          capture_output=True, text=True, timeout=120, check=False,
                          env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    return done.stdout, done.returncode


def claude_tool(live: LiveSurface, command: str, cwd: Path, tool_use_id: str,  # noqa: F811
                output: str, code: int) -> None:
    """PreToolUse, then PostToolUse (exit 0) or PostToolUseFailure (Claude's error text)."""
    pre = recorded("PreToolUse")
    tool_input = {"command": command, "description": "run the tests"}
    hook(live, "PreToolUse", dict(pre, cwd=str(cwd), tool_input=tool_input,
                                  tool_use_id=tool_use_id))
    post = dict(recorded("PostToolUse"), cwd=str(cwd), tool_input=tool_input,
                tool_use_id=tool_use_id)
    if code == 0:
        post["tool_response"] = {"stdout": output, "stderr": "", "interrupted": False,
                                 "isImage": False, "noOutputExpected": False}
        hook(live, "PostToolUse", post)
    else:
        post.pop("tool_response")
        post.pop("duration_ms")
        post.update(hook_event_name="PostToolUseFailure", error=f"Exit code {code}\n{output}",
                    is_interrupt=False)
        hook(live, "PostToolUseFailure", post)


def rows(path: Path, sql: str, *args: object) -> list[sqlite3.Row]:
    conn = sqlite3.connect(path)
    conn.row_factory = sqlite3.Row
    try:
        return list(conn.execute(sql, args))
    finally:
        conn.close()


def project_of(live: LiveSurface) -> str:  # noqa: F811
    return live.engine.conn.execute(
        "SELECT project_id FROM provider_sessions WHERE session_key = ?",
        (live.session_key,)).fetchone()[0]


def test_failing_then_passing_pytest_gives_runs_artifacts_diagnostics_and_a_debug_record(
        live: LiveSurface, tmp_path: Path) -> None:  # noqa: F811
    work = tmp_path / "work"
    work.mkdir()
    (work / "calc.py").write_text(FAILING)
    (work / "test_calc.py").write_text(TEST)
    failed_output, failed_code = pytest_run(work)
    assert failed_code == 1 and "FAILED test_calc.py::test_add" in failed_output
    command = "python -m pytest -q test_calc.py"
    claude_tool(live, command, work, "toolu_first", failed_output, failed_code)
    (work / "calc.py").write_text(FIXED)
    passed_output, passed_code = pytest_run(work)
    assert passed_code == 0
    claude_tool(live, command, work, "toolu_second", passed_output, passed_code)

    path = session_db_path(live.root, live.session_key)
    runs = rows(path, "SELECT c.*, t.status AS tool_status FROM command_runs c"
                " JOIN tool_runs t ON t.id = c.tool_run_id ORDER BY c.started_at, c.rowid")
    assert [(r["command"], r["cwd"], r["exit_code"], r["tool_status"]) for r in runs] == [
        (command, str(work), 1, "error"), (command, str(work), None, "ok")]
    first, second = (json.loads(r["metadata_json"]) for r in runs)
    assert (first["outcome"], first["exit_code"], first["exit_source"]) == \
        ("failed", "provided", "claude_error_text")
    # Claude states no exit code for a success: unknown, never guessed as 0.
    assert (second["outcome"], second["exit_code"]) == ("passed", "unknown")
    assert "exit_source" not in second
    assert all(r["duration_ms"] is not None and r["completed_at"] for r in runs)
    events = rows(path, "SELECT source_id, command_run_id FROM events"
                  " WHERE command_run_id IS NOT NULL ORDER BY timestamp, rowid")
    assert [e["command_run_id"] for e in events] == [runs[0]["id"]] * 2 + [runs[1]["id"]] * 2

    artifacts = {a["command_run_id"]: a for a in rows(path, "SELECT * FROM artifacts")}
    assert set(artifacts) == {runs[0]["id"], runs[1]["id"]}
    failing_artifact = artifacts[runs[0]["id"]]
    assert runs[0]["combined_artifact_id"] == failing_artifact["id"]  # Claude's error text
    assert runs[1]["stdout_artifact_id"] == artifacts[runs[1]["id"]]["id"]
    stored = Path(failing_artifact["path"]).read_bytes()
    assert stored == f"Exit code 1\n{failed_output}".encode()
    assert failing_artifact["size_bytes"] == len(stored)
    assert failing_artifact["sha256"] == hashlib.sha256(stored).hexdigest()
    assert failing_artifact["type"] == "log"
    assert failing_artifact["uri"] == Path(failing_artifact["path"]).as_uri()
    assert Path(failing_artifact["path"]).parent == path.parent / "artifacts"
    assert stat.S_IMODE(Path(failing_artifact["path"]).stat().st_mode) == 0o600
    for folder in (path.parent, path.parent / "artifacts"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE(path.stat().st_mode) == 0o600

    diagnostics = rows(path, "SELECT * FROM diagnostics")
    assert len(diagnostics) == 1  # pytest's FAILED line, linked to its run and artifact
    (diagnostic,) = diagnostics
    assert (diagnostic["toolchain"], diagnostic["severity"], diagnostic["file"],
            diagnostic["code"], diagnostic["command_run_id"], diagnostic["artifact_id"]) == \
        ("pytest", "error", "test_calc.py", "test_add", runs[0]["id"], failing_artifact["id"])
    assert json.loads(runs[0]["parsed_diagnostics_json"]) == {
        "count": 1, "signatures": [diagnostic["semantic_signature"]], "state": "parsed"}

    db = project_db_path(live.root, project_of(live), DEBUG_RECORDS)
    (record,) = rows(db, "SELECT * FROM debug_records")
    assert record["failure_signature"] == diagnostic["semantic_signature"]
    assert record["fix_ref"].endswith(f"/command_run/{runs[1]['id']}")
    evidence = json.loads(record["evidence_json"])
    assert evidence["failing_command_runs"] == [runs[0]["id"]]
    assert evidence["artifacts"] == [failing_artifact["id"]]
    assert evidence["diagnostics"] == [diagnostic["id"]]
    verification = json.loads(record["verification_json"])
    assert (verification["command_run"], verification["outcome"]) == (runs[1]["id"], "passed")
    frame_id = json.loads(record["metadata_json"])["frame_id"]
    assert frame_id == live.engine.conn.execute(
        "SELECT frame_id FROM frames WHERE current_session_key = ?",
        (live.session_key,)).fetchone()[0]
    # Memory is off by default: no learned-memory file, nothing promoted.
    assert not project_db_path(live.root, project_of(live), LEARNED_MEMORY).exists()

    # The same pass seen again (another passing run) records nothing new.
    claude_tool(live, command, work, "toolu_third", passed_output, 0)
    assert len(rows(db, "SELECT * FROM debug_records")) == 1


def test_codex_exit_code_comes_from_its_output_header() -> None:
    """Codex's PostToolUse carries the output text; its ``Exit code:`` header is the
    provider's own statement. A bare text (the recorded one) leaves the exit unknown."""
    from core.evidence.capture import Outcome, command_facts

    post = recorded("PostToolUse", CODEX_FIXTURE)
    bare = command_facts("codex", "PostToolUse", post)
    assert bare is not None and (bare.exit_code, bare.outcome) == (None, Outcome.UNKNOWN)
    headed = command_facts("codex", "PostToolUse", dict(
        post, tool_response="Exit code: 2\nWall time: 0.3 seconds\nOutput:\nboom\n"))
    assert headed is not None
    assert (headed.exit_code, headed.exit_source, headed.combined, headed.outcome) == \
        (2, "codex_header", "boom\n", Outcome.FAILED)
    wrapped = command_facts("codex", "PostToolUse", dict(post, tool_response=json.dumps(
        {"output": "ok\n", "metadata": {"exit_code": 0, "duration_seconds": 0.1}})))
    assert wrapped is not None and (wrapped.exit_code, wrapped.outcome) == (0, Outcome.PASSED)
    argv = command_facts("codex", "PreToolUse", dict(post, tool_input={"command": [
        "bash", "-lc", "ls -la"]}))
    assert argv is not None and argv.command == "bash -lc 'ls -la'" and not argv.finished
    assert command_facts("codex", "PostToolUse", dict(post, tool_input={})) is None
    assert command_facts("claude", "Stop", recorded("Stop")) is None


def test_big_output_is_bounded_and_parsed_by_the_detached_worker(
        live: LiveSurface, tmp_path: Path) -> None:  # noqa: F811
    noise = "".join(f"line {i} of a long build log\n" for i in range(60_000))  # ~1.6 MB
    output = noise + "FAILED tests/test_big.py::test_it - AssertionError: boom\n"
    claude_tool(live, "make check", tmp_path, "toolu_big", output, 2)
    path = session_db_path(live.root, live.session_key)
    (run,) = rows(path, "SELECT * FROM command_runs")
    (artifact,) = rows(path, "SELECT * FROM artifacts")
    assert artifact["size_bytes"] <= ARTIFACT_CAP
    meta = json.loads(artifact["metadata_json"])
    assert meta["truncated"] is True and meta["original_bytes"] > 1_500_000
    data = Path(artifact["path"]).read_bytes()
    assert b"bytes cut by Switchboard" in data and data.endswith(b"AssertionError: boom\n")
    assert data.startswith(b"Exit code 2\nline 0 of a long build log")

    def parsed() -> bool:
        (state,) = rows(path, "SELECT parsed_diagnostics_json FROM command_runs")
        return json.loads(state[0])["state"] == "parsed"

    assert retry_until(parsed, 30), rows(path, "SELECT parsed_diagnostics_json FROM command_runs")
    (diagnostic,) = rows(path, "SELECT * FROM diagnostics")
    assert (diagnostic["command_run_id"], diagnostic["artifact_id"], diagnostic["file"]) == \
        (run["id"], artifact["id"], "tests/test_big.py")
    assert not (path.parent / "evidence-worker.log").exists()


def test_bound_keeps_head_and_tail_within_the_cap() -> None:
    data = bytes(range(256)) * 4096  # 1 MiB
    stored, cut = bound(data, 10_000)
    assert cut and len(stored) <= 10_000
    assert stored.startswith(data[:2500]) and stored.endswith(data[-5000:])
    assert bound(b"short", 10_000) == (b"short", False)


def test_session_cap_stops_storing_output_and_says_so(
        live: LiveSurface, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    """In-process (the cap is patched lower): past the budget, output is not stored and
    the run's metadata names the streams and the reason."""
    import storage.session_evidence as evidence
    from core.hooks.hook_handler import handle_hook

    monkeypatch.setattr(evidence, "SESSION_CAP", 40_000)
    pre = recorded("PreToolUse")
    post = recorded("PostToolUse")
    for index in range(3):
        tool_input = {"command": f"cat big{index}.txt"}
        for event, document in (("PreToolUse", dict(pre)), ("PostToolUse", dict(
                post, tool_response={"stdout": "x" * 30_000, "stderr": ""}))):
            document.update(session_id=live.provider_session_id, tool_input=tool_input,
                            tool_use_id=f"toolu_cap{index}")
            assert handle_hook("claude", event, json.dumps(document).encode(),
                               live.env()).handled
    path = session_db_path(live.root, live.session_key)
    sizes = [r[0] for r in rows(path, "SELECT size_bytes FROM artifacts ORDER BY rowid")]
    assert sum(sizes) <= 40_000 and sizes[0] == 30_000 and len(sizes) == 2
    assert b"bytes cut by Switchboard" in Path(rows(
        path, "SELECT path FROM artifacts ORDER BY rowid")[1][0]).read_bytes()
    last = json.loads(rows(path, "SELECT metadata_json FROM command_runs"
                           " ORDER BY started_at DESC, rowid DESC LIMIT 1")[0][0])
    assert last["not_stored"]["streams"] == ["stdout"]


@pytest.mark.parametrize("kind", ["debug", "memory"])
def test_foreign_project_file_is_refused_byte_identical(tmp_path: Path, kind: str) -> None:
    which = DEBUG_RECORDS if kind == "debug" else LEARNED_MEMORY
    path = project_db_path(tmp_path, "proj", which)
    path.parent.mkdir(parents=True)
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("CREATE TABLE debug_records (id TEXT)")
    conn.commit()
    conn.close()
    before = path.read_bytes()
    with pytest.raises(ProjectDbRefused, match="another application"):
        open_project_db(path, which)
    assert path.read_bytes() == before
    # The other kind's file is foreign too: one is never mistaken for the other.
    other = DEBUG_RECORDS if which is LEARNED_MEMORY else LEARNED_MEMORY
    fresh = project_db_path(tmp_path, "other", other)
    open_project_db(fresh, other).close()
    fresh.rename(path.with_name("swapped.db"))
    with pytest.raises(ProjectDbRefused, match="another application"):
        open_project_db(path.with_name("swapped.db"), which)


def test_project_file_has_the_spec_schema_and_closed_enums(tmp_path: Path) -> None:
    path = project_db_path(tmp_path, "proj", LEARNED_MEMORY)
    conn = open_project_db(path, LEARNED_MEMORY, now_ms=1_000)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        columns = [r[1] for r in conn.execute("PRAGMA table_info(learned_memories)")]
        assert columns == ["id", "memory_type", "summary", "content", "source_entity_type",
                           "source_entity_id", "status", "created_at", "updated_at",
                           "metadata_json"]
        with pytest.raises(sqlite3.IntegrityError, match="learned_memories_status_closed"):
            conn.execute("INSERT INTO learned_memories VALUES ('1', 'project_rule', 's', NULL,"
                         " NULL, NULL, 'auto_promoted', 'a', 'a', NULL)")
    finally:
        conn.close()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    conn = open_project_db(project_db_path(tmp_path, "proj", DEBUG_RECORDS), DEBUG_RECORDS)
    try:
        columns = [r[1] for r in conn.execute("PRAGMA table_info(debug_records)")]
        assert columns == ["id", "task_id", "failure_signature", "summary", "root_cause",
                           "fix_ref", "evidence_json", "verification_json", "created_at",
                           "updated_at", "metadata_json"]
        indexes = {r[1] for r in conn.execute("PRAGMA index_list(debug_records)")}
        assert {"idx_debug_records_signature", "idx_debug_records_task"} <= indexes
    finally:
        conn.close()


def _command(conn: sqlite3.Connection, session_dir: Path, at: int, tool_use_id: str,
             output: str, code: int) -> str:
    """One finished command through the same writers the hook uses; its run id."""
    from core.evidence.capture import CommandFacts, Outcome
    from core.evidence.hook import prepare_command
    from storage.session_db import record_hook_event

    facts = CommandFacts("pytest -q", "/src", True, stdout=output, exit_code=code,
                         exit_source="tool_response",
                         outcome=Outcome.PASSED if code == 0 else Outcome.FAILED)
    record = prepare_command(conn, session_dir, "k", facts)
    event = record_hook_event(conn, session_key="k", provider="claude", project_id="proj",
                              project_root="/src", event="PostToolUse", kind="tool_finished",
                              now_ms=at, tool_name="Bash", tool_use_id=tool_use_id,
                              command=record, frame_id="frame-1")
    return conn.execute("SELECT command_run_id FROM events WHERE id = ?", (event,)).fetchone()[0]


def test_memory_enabled_adds_candidates_never_promoted(tmp_path: Path) -> None:
    from core.config.home import Home
    from core.evidence.debug import record_fixes
    from storage.session_db import open_session_db

    home = Home(root=tmp_path, config_path=tmp_path / "missing.toml")
    path = session_db_path(tmp_path, "k")
    conn = open_session_db(path, now_ms=1_000)
    try:
        _command(conn, path.parent, 2_000, "u1", "FAILED t.py::test_x - assert 0\n", 1)
        passed = _command(conn, path.parent, 3_000, "u2", "1 passed\n", 0)
        # Unreadable config: memory is off, only the debug record is written.
        assert record_fixes(home, "proj", conn, "k", passed, "frame-1", 4_000) == 1
        assert not project_db_path(tmp_path, "proj", LEARNED_MEMORY).exists()
        _command(conn, path.parent, 5_000, "u3", "FAILED t.py::test_y - assert 1\n", 1)
        again = _command(conn, path.parent, 6_000, "u4", "1 passed\n", 0)
        assert record_fixes(home, "proj", conn, "k", again, "frame-1", 7_000,
                            memory_enabled=True) == 1
    finally:
        conn.close()
    (memory,) = rows(project_db_path(tmp_path, "proj", LEARNED_MEMORY),
                     "SELECT * FROM learned_memories")
    assert (memory["memory_type"], memory["status"], memory["source_entity_type"]) == \
        ("debug_experience", "candidate", "debug_record")
    records = rows(project_db_path(tmp_path, "proj", DEBUG_RECORDS),
                   "SELECT id, summary FROM debug_records ORDER BY created_at")
    assert memory["source_entity_id"] == records[1]["id"]
    assert "test_y" not in records[0]["summary"]


def test_session_end_sweeps_unnamed_artifact_files_after_a_grace(tmp_path: Path) -> None:
    from storage.session_db import open_session_db
    from storage.session_evidence import artifacts_dir, sweep_orphans

    path = session_db_path(tmp_path, "k")
    conn = open_session_db(path, now_ms=1_000)
    try:
        _command(conn, path.parent, 2_000, "u1", "some output\n", 0)
        orphan = artifacts_dir(path.parent) / "dead.stdout.log"
        orphan.write_text("a hook died before its commit")
        named = rows(path, "SELECT path FROM artifacts")[0][0]
        mtime = orphan.stat().st_mtime
        assert sweep_orphans(conn, path.parent, mtime + 1) == []  # maybe still committing
        assert sweep_orphans(conn, path.parent, mtime + 120) == ["dead.stdout.log"]
        assert Path(named).exists() and not orphan.exists()
    finally:
        conn.close()


def test_a_fix_seen_while_the_failure_is_still_parsing_is_recorded_by_its_worker(
        tmp_path: Path) -> None:
    """Big failing output (parse deferred), then a quick pass: the pass does not record a
    guess; the failing run's worker records the fix with the real signature."""
    from core.config.home import Home
    from core.evidence.debug import later_pass, record_fixes
    from core.evidence.hook import diagnostic_rows
    from storage.session_db import iso, new_id, open_session_db
    from storage.session_evidence import complete_parse

    home = Home(root=tmp_path, config_path=tmp_path / "missing.toml")
    path = session_db_path(tmp_path, "k")
    conn = open_session_db(path, now_ms=1_000)
    try:
        big = "x" * 70_000 + "\nFAILED t.py::test_x - assert 0\n"
        failed = _command(conn, path.parent, 2_000, "u1", big, 1)
        assert json.loads(rows(path, "SELECT parsed_diagnostics_json FROM command_runs"
                               " WHERE id = ?", failed)[0][0])["state"] == "pending"
        passed = _command(conn, path.parent, 3_000, "u2", "1 passed\n", 0)
        assert record_fixes(home, "proj", conn, "k", passed, "frame-1", 3_500) == 0
        # What the worker does for the failing run:
        (artifact_id, artifact_path) = rows(path, "SELECT id, path FROM artifacts"
                                            " WHERE command_run_id = ?", failed)[0]
        parsed = diagnostic_rows(Path(artifact_path).read_text(), artifact_id)
        assert complete_parse(conn, "k", failed, parsed, iso(4_000), new_id)
        assert later_pass(conn, "k", failed) == passed
        assert record_fixes(home, "proj", conn, "k", passed, "frame-1", 4_000) == 1
    finally:
        conn.close()
    (record,) = rows(project_db_path(tmp_path, "proj", DEBUG_RECORDS),
                     "SELECT failure_signature FROM debug_records")
    assert record[0] == parsed[0].semantic_signature


def test_a_stated_non_zero_exit_makes_the_tool_run_an_error(
        live_codex: LiveSurface) -> None:  # noqa: F811
    """Codex has no PostToolUseFailure: its ``Exit code: 2`` is what says the run failed."""
    codex = live_codex
    pre = dict(recorded("PreToolUse", CODEX_FIXTURE), tool_use_id="call_exit2")
    post = dict(recorded("PostToolUse", CODEX_FIXTURE), tool_use_id="call_exit2",
                tool_response="Exit code: 2\nWall time: 0.1 seconds\nOutput:\nno such file\n")
    hook(codex, "PreToolUse", pre, provider="codex")
    hook(codex, "PostToolUse", post, provider="codex")
    path = session_db_path(codex.root, codex.session_key)
    (run,) = rows(path, "SELECT c.exit_code, t.status, c.combined_artifact_id,"
                  " json_extract(c.metadata_json, '$.exit_source') FROM command_runs c"
                  " JOIN tool_runs t ON t.id = c.tool_run_id")
    assert tuple(run)[:2] == (2, "error") and run[3] == "codex_header"
    (artifact,) = rows(path, "SELECT path FROM artifacts WHERE id = ?", run[2])
    assert Path(artifact[0]).read_text() == "no such file\n"


def test_the_timeline_covers_the_frames_earlier_sessions(tmp_path: Path) -> None:
    """A restarted frame keeps its history: the new session's attempt names the earlier
    one, and the detail merges both (timeline, commands, failures by signature)."""
    from core.config.home import Home
    from core.evidence.store import session_detail
    from storage.session_db import open_session_db
    from storage.session_lineage import SessionFacts, record_attempt

    home = Home(root=tmp_path, config_path=tmp_path / "config.toml")
    for key, at, earlier, output, code in (
            ("old", 10_000, [], "FAILED t.py::test_x - assert 0\n", 1),
            ("new", 20_000, ["old"], "FAILED t.py::test_x - assert 0\n", 1)):
        path = session_db_path(tmp_path, key)
        conn = open_session_db(path, now_ms=at)
        try:
            record_attempt(conn, SessionFacts(key, "claude", "proj", "/src", "frame-1"), None,
                           len(earlier) + 1, None, at, earlier_sessions=earlier)
            from core.evidence.capture import CommandFacts, Outcome
            from core.evidence.hook import prepare_command
            from storage.session_db import record_hook_event

            record = prepare_command(conn, path.parent, key, CommandFacts(
                f"pytest # {key}", "/src", True, stdout=output, exit_code=code,
                outcome=Outcome.FAILED))
            record_hook_event(conn, session_key=key, provider="claude", project_id="proj",
                              project_root="/src", event="PostToolUse", kind="tool_finished",
                              now_ms=at + 1_000, tool_name="Bash", command=record,
                              frame_id="frame-1")
        finally:
            conn.close()
    detail = session_detail(home, "new")
    assert [c.command for c in detail.commands] == ["pytest # old", "pytest # new"]
    assert [e.text for e in detail.timeline] == ["attempt 1 started", "pytest # old",
                                                 "attempt 2 started", "pytest # new"]
    (group,) = detail.diagnostics
    assert (group.count, group.runs) == (2, 2)
    # A missing earlier file is skipped, not an error.
    for leftover in session_db_path(tmp_path, "old").parent.glob("session.db*"):
        leftover.unlink()
    assert [c.command for c in session_detail(home, "new").commands] == ["pytest # new"]


def test_hooks_that_end_with_the_file_open_keep_its_log_bounded(live: LiveSurface  # noqa: F811
                                                                ) -> None:
    """A hook process ends with its session connection open (``core.model.fast_exit``);
    the next opener finds nothing marked as checkpointed, so SQLite never restarted the
    log and every hook grew it (40 turns: 4 MB). Past ``WAL_SIZE_LIMIT_BYTES`` the hook
    closes instead."""
    from storage.session_db import WAL_SIZE_LIMIT_BYTES

    pre = recorded("PreToolUse")
    hook(live, "PreToolUse", pre, fast=True)
    path = session_db_path(live.root, live.session_key)
    wal = Path(f"{path}-wal")
    # another process that wrote ~3 MB and ended with its connection open, as hooks do
    grow = ("import os, sqlite3, sys; c = sqlite3.connect(sys.argv[1], isolation_level=None);"
            " c.execute('PRAGMA wal_autocheckpoint = 0');"
            " c.execute('CREATE TABLE IF NOT EXISTS scratch (x BLOB)'); c.execute('BEGIN');"
            " [c.execute('INSERT INTO scratch VALUES (?)', (os.urandom(4000),))"
            " for _ in range(700)]; c.execute('COMMIT'); os._exit(0)")
    subprocess.run([sys.executable, "-c", grow, str(path)], check=True, timeout=60)
    assert wal.stat().st_size > 2 * WAL_SIZE_LIMIT_BYTES
    hook(live, "PreToolUse", dict(pre, tool_use_id="toolu_bounded"), fast=True)
    assert not wal.exists() or wal.stat().st_size <= WAL_SIZE_LIMIT_BYTES, wal.stat()
    assert rows(path, "SELECT count(*) FROM scratch")[0][0] == 700  # nothing lost on the way
