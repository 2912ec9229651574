"""Push -> claim -> work -> complete-return -> claim leaves the frame's lineage evidence.

Real tmux (private socket), real registry, fake Claude agents whose hooks and
agent tools reach this registry. The child's shell work is two recorded-shape
tool hooks (a real failing pytest run, then the passing one after the fix)
sent through ``switchboard hook`` with a capability bound to the child's launch.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
import sys
import uuid
from pathlib import Path

from core.config.capabilities import ENV_CAPABILITY, ENV_GENERATION
from core.config.home import ENV_HOME
from core.context.requests import new_request_id
from core.model.enums import Provider
from storage.project_db import DEBUG_RECORDS, project_db_path
from storage.session_db import session_db_path
from tests.core.test_evidence_commands import FAILING, FIXED, TEST, pytest_run, recorded
from tests.core.test_hook_handler import mint_capability
from tests.integration.journey_env import make_live_engine, one, tmux, type_line
from tests.waiting import retry_until

ROOT = Path(__file__).resolve().parents[2]
BRIEF = "Make test_calc pass"




def _rows(path: Path, sql: str, *args: object) -> list[sqlite3.Row]:
    conn = sqlite3.connect(path)
    conn.row_factory = sqlite3.Row
    try:
        return list(conn.execute(sql, args))
    finally:
        conn.close()


def _git(folder: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(folder), *args], capture_output=True, text=True,
                          check=True, env={**os.environ, "GIT_AUTHOR_NAME": "t",
                                           "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t",
                                           "GIT_COMMITTER_EMAIL": "t@e"}).stdout.strip()


def _hook(env: dict[str, str], event: str, document: dict) -> None:
    done = subprocess.run([sys.executable, "-m", "navigator.cli", "hook", "--provider",
                           "claude", event], input=json.dumps(document).encode(), env=env,
                          capture_output=True, timeout=60, check=False)
    assert done.returncode == 0 and b"not recorded" not in done.stderr, done.stderr.decode()


def test_push_claim_complete_records_task_attempt_workspace_summary_and_refs(
        tmp_path: Path, tmux_socket: Path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("SWITCHBOARD_HOME", str(tmp_path))
    checkout = tmp_path / "src" / "alpha"
    engine = make_live_engine(tmp_path, tmux_socket)
    _git(checkout, "init", "-q")
    (checkout / "calc.py").write_text(FAILING)
    (checkout / "test_calc.py").write_text(TEST)
    _git(checkout, "add", ".")
    _git(checkout, "commit", "-qm", "start")
    base = _git(checkout, "rev-parse", "HEAD")

    route = engine.project_enter(new_request_id(), "alpha")
    started = engine.frame_start(new_request_id(), route.frame_id, Provider.CLAUDE)
    main = one(engine, "SELECT main_pane_id FROM user_views")[0]
    assert retry_until(lambda: one(engine, "SELECT state FROM launch_intents WHERE launch_id = ?",
                                    started.launch_id)[0] == "bound", 30)
    parent_key = one(engine, "SELECT current_session_key FROM frames WHERE frame_id = ?",
                      route.frame_id)[0]

    type_line(tmux_socket, main, f"/push Fix the bug :: {BRIEF}")
    assert retry_until(lambda: one(engine, "SELECT state FROM view_transitions"
                                            " WHERE kind = 'push'") == ("completed",), 30)
    child_id, child_key = one(engine, "SELECT frame_id, current_session_key FROM frames"
                                       " WHERE title = 'Fix the bug'")
    child_launch, child_sid = one(
        engine, "SELECT l.launch_id, s.provider_session_id FROM launch_intents l"
                " JOIN provider_sessions s ON s.session_key = l.session_key"
                " WHERE l.frame_id = ?", child_id)
    assert retry_until(lambda: one(engine, "SELECT state FROM launch_intents WHERE launch_id = ?",
                                    child_launch)[0] == "bound", 30)

    # The child's shell work: pytest fails, the agent fixes calc.py, pytest passes.
    raw = "sbcap1_test-" + uuid.uuid4().hex
    mint_capability(engine, child_launch, raw)
    env = {k: v for k, v in os.environ.items()
           if k not in (ENV_CAPABILITY, ENV_GENERATION, "TMUX", "TMUX_PANE")}
    env.update({ENV_CAPABILITY: raw, ENV_GENERATION: engine.generation_id,
                ENV_HOME: str(tmp_path), "PYTHONPATH": str(ROOT)})
    command = "python -m pytest -q test_calc.py"
    for index, (source, tool_use_id) in enumerate(((FAILING, "toolu_a"), (FIXED, "toolu_b"))):
        (checkout / "calc.py").write_text(source)
        output, code = pytest_run(checkout)
        tool_input = {"command": command, "description": "tests"}
        head = {"session_id": child_sid, "cwd": str(checkout), "tool_input": tool_input,
                "tool_use_id": tool_use_id}
        _hook(env, "PreToolUse", {**recorded("PreToolUse"), **head})
        post = {**recorded("PostToolUse"), **head}
        if index == 0:
            assert code == 1
            post.pop("tool_response")
            post.update(hook_event_name="PostToolUseFailure", error=f"Exit code 1\n{output}")
            _hook(env, "PostToolUseFailure", post)
        else:
            assert code == 0
            post["tool_response"] = {"stdout": output, "stderr": "", "interrupted": False}
            _hook(env, "PostToolUse", post)

    child_pane = one(engine, "SELECT main_pane_id FROM user_views")[0]
    type_line(tmux_socket, child_pane, "/complete Fixed calc.add :: review and merge")
    assert retry_until(lambda: one(engine, "SELECT state FROM view_transitions"
                                            " WHERE kind = 'complete_return'") == ("completed",),
                       40), tmux(tmux_socket, "capture-pane", "-p", "-t", child_pane)
    assert retry_until(lambda: one(engine, "SELECT first_claimed_at FROM completion_handoffs")[0]
                       is not None, 30)

    child_db = session_db_path(tmp_path, child_key)
    parent_db = session_db_path(tmp_path, parent_key)
    spec = {"title": "Fix the bug", "brief_sha256": hashlib.sha256(BRIEF.encode()).hexdigest(),
            "parent_frame_id": route.frame_id}

    # The pushing session's file: the child task, completed once its handoff was claimed.
    def parent_task() -> tuple:
        rows = _rows(parent_db, "SELECT id, type, status, title, task_spec_json,"
                     " worker_result_json FROM tasks")
        return tuple(rows[0]) if rows else ()

    assert retry_until(lambda: parent_task()[2:3] == ("completed",), 20), parent_task()
    task = parent_task()
    assert task[:4] == (child_id, "execute", "completed", "Fix the bug")
    assert {k: json.loads(task[4])[k] for k in spec} == spec
    assert BRIEF not in task[4]  # the spec is the brief's hash, never its text
    assert json.loads(task[5])["summary"] == "Fixed calc.add"
    parent_events = [r[0] for r in _rows(parent_db, "SELECT type FROM events"
                                         " WHERE source_kind = 'engine' ORDER BY timestamp")]
    assert "task_pushed" in parent_events and "handoff_claimed" in parent_events

    # The child's own file: task, attempt, workspace at the starting commit.
    (child_task,) = _rows(child_db, "SELECT * FROM tasks")
    assert (child_task["id"], child_task["status"], child_task["assigned_agent_id"]) == \
        (child_id, "completed", child_key)
    (attempt,) = _rows(child_db, "SELECT * FROM task_attempts")
    assert (attempt["task_id"], attempt["attempt_index"], attempt["agent_id"],
            attempt["status"]) == (child_id, 1, child_key, "completed")
    (workspace,) = _rows(child_db, "SELECT * FROM workspaces")
    assert (workspace["path"], workspace["strategy"], workspace["status"],
            workspace["base_ref"], workspace["task_id"]) == \
        (str(checkout), "main", "active", base, child_id)
    assert child_task["workspace_id"] == workspace["id"]

    # Commands of the task carry its id; the claimed handoff is a summary with refs.
    runs = _rows(child_db, "SELECT * FROM command_runs WHERE command = ?", command)
    assert [r["task_id"] for r in runs] == [child_id, child_id]
    (summary,) = _rows(child_db, "SELECT * FROM summaries")
    assert summary["type"] == "checkpoint"
    assert json.loads(summary["content_json"]) == {"summary": "Fixed calc.add",
                                                   "next_action": "review and merge"}
    refs = _rows(child_db, "SELECT * FROM evidence_refs")
    by_run = {r["command_run_id"] for r in refs if r["diagnostic_id"] is None}
    assert {r["id"] for r in runs} <= by_run
    (diagnostic,) = _rows(child_db, "SELECT * FROM diagnostics WHERE command_run_id = ?",
                          runs[0]["id"])
    (diag_ref,) = [r for r in refs if r["diagnostic_id"] == diagnostic["id"]]
    assert (diag_ref["kind"], diag_ref["artifact_id"], diag_ref["task_id"]) == \
        ("test_output", diagnostic["artifact_id"], child_id)
    assert all(r["claim"] for r in refs)

    # The debug record of the fix learned the handoff summary.
    (record,) = _rows(project_db_path(tmp_path, route.project_id, DEBUG_RECORDS),
                      "SELECT * FROM debug_records")
    assert record["task_id"] == child_id
    assert record["failure_signature"] == diagnostic["semantic_signature"]
    assert json.loads(record["metadata_json"])["handoff"]["summary"] == "Fixed calc.add"

    # `switchboard session show` prints the same timeline, text and JSON.
    from navigator.cli import main

    capsys.readouterr()
    assert main(["session", "show", child_id, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    commands = [c for c in shown["commands"] if c["command"] == command]
    assert [(c["outcome"], c["exit_code"]) for c in commands] == [("failed", 1),
                                                                  ("passed", None)]
    assert commands[0]["artifacts"][0]["stream"] == "output"
    assert shown["workspace"]["base_ref"] == base
    assert "calc.py" in shown["workspace"]["changes"]  # add() was fixed since the start
    assert shown["handoff"]["summary"] == "Fixed calc.add"
    assert [(g["toolchain"], g["fixed"]) for g in shown["diagnostics"]] == [("pytest", True)]
    kinds = [e["kind"] for e in shown["timeline"]]
    assert kinds[0] == "task" and "command" in kinds and kinds[-1] == "handoff"
    assert main(["session", "show", child_id, "--only", "failures"]) == 0
    text = capsys.readouterr().out
    assert f"command  {command}  failed exit 1" in text
    assert "passed" not in text.split("timeline:")[1].split("failures by signature:")[0]
    assert "[fixed] pytest test_calc.py test_add" in text
    assert "calc.py | 2 +-" in text and "Fixed calc.add" in text
