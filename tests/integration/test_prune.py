"""`switchboard prune`: closed frames' session evidence older than N days goes, nothing else.

A task pushed and closed 40 days ago (the engine's clock set back) has an evidence
folder (session DB, WAL, an artifact) and a run folder; the workspace, still open,
has evidence too. A dry run lists the task's session and removes nothing; a limit
of 50 days finds nothing; 30 days (from the command or the config's
``[retention] evidence_days``) removes exactly the task's folders, and the registry
keeps every row, so the closed frame can still be reopened.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from core.context.requests import new_request_id
from core.fleet.retention import DAY_MS
from core.runtime.claims import claim_for_frame
from storage.session_db import safe_key
from tests.integration.transitions_env import (
    OffsetClock,
    make_engine,
    pane_of,
    run_cli,
    session_of,
    wait_prompt,
)
from tests.waiting import retry_until

# The engine's clock is 40 days back; the server's pass (real clock) would park and
# reconcile those frames as 40 days unseen while the test steps through them.
pytestmark = [pytest.mark.tmux, pytest.mark.usefixtures("no_server_pass")]


def _evidence(root: Path, key: str) -> Path:
    folder = root / "sessions" / safe_key(key)
    (folder / "artifacts").mkdir(parents=True, exist_ok=True)
    (folder / "session.db").write_bytes(b"x" * 4096)
    (folder / "session.db-wal").write_bytes(b"w" * 1024)
    (folder / "artifacts" / "run.stdout.log").write_text("output\n")
    return folder


def _rows(root: Path) -> list[tuple]:
    from tests.integration.transitions_env import open_stage_engine

    engine = open_stage_engine(root)
    return [tuple(r) for r in engine.conn.execute(
        "SELECT f.frame_id, f.lifecycle_state, s.session_key FROM frames f"
        " JOIN frame_sessions m ON m.frame_id = f.frame_id"
        " JOIN provider_sessions s ON s.session_key = m.session_key ORDER BY f.frame_id")]


def test_prune_removes_only_old_closed_frames_evidence(tmp_path: Path,
                                                       tmux_socket: Path) -> None:
    engine = make_engine(tmp_path, tmux_socket)
    engine.clock = OffsetClock(-40 * DAY_MS)
    route = engine.project_enter(new_request_id(), "alpha")
    engine.frame_start(new_request_id(), route.frame_id)
    wait_prompt(tmux_socket, pane_of(engine, route.frame_id))
    pushed = engine.frame_push(new_request_id(), route.frame_id, "Old task", "brief")
    task = pushed.target_frame_id
    wait_prompt(tmux_socket, pane_of(engine, task))
    claim_for_frame(engine, task, session_of(engine, task))
    engine.frame_close(new_request_id(), task)
    assert retry_until(lambda: engine.conn.execute(
        "SELECT lifecycle_state FROM frames WHERE frame_id = ?", (task,)).fetchone()[0]
        == "closed", 10)
    task_key, workspace_key = session_of(engine, task), session_of(engine, route.frame_id)
    old = _evidence(tmp_path, task_key)
    kept = _evidence(tmp_path, workspace_key)
    run_folder = engine.require_home().run_dir / task_key.replace(":", "_")
    assert run_folder.is_dir()  # the launch's settings and MCP files
    rows = _rows(tmp_path)

    dry = run_cli(tmp_path, "prune", "--older-than", "30", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    lines = dry.stdout.splitlines()
    assert lines[0].startswith(f"would remove: “Old task” session {task_key} (closed 40 days")
    assert lines[-1].startswith("would remove 1 session(s), ")
    assert lines[-1].endswith("(dry run: nothing was removed)")
    assert old.is_dir() and run_folder.is_dir()

    younger = run_cli(tmp_path, "prune", "--older-than", "50")
    assert younger.returncode == 0, younger.stderr
    assert younger.stdout.splitlines() == [
        "nothing to prune: no closed frame's evidence is older than 50 days"]
    assert old.is_dir()

    unset = run_cli(tmp_path, "prune")
    assert unset.returncode != 0 and unset.stdout == ""
    assert "--older-than DAYS" in unset.stderr and "[retention]" in unset.stderr
    assert old.is_dir()

    config = tmp_path / "config.toml"
    config.write_text(config.read_text() + "\n[retention]\nevidence_days = 30\n")
    done = run_cli(tmp_path, "prune")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0].startswith(f"removed: “Old task” session {task_key}")
    assert not old.exists() and not run_folder.exists()
    assert kept.is_dir() and (kept / "session.db").is_file()  # its frame is open
    assert _rows(tmp_path) == rows  # the registry keeps the frame and its session

    again = run_cli(tmp_path, "prune")
    assert again.stdout.splitlines() == [
        "nothing to prune: no closed frame's evidence is older than 30 days"]


@pytest.mark.parametrize("days", ["-1", "ten", "36501"])
def test_a_bad_age_is_refused_in_one_line(tmp_path: Path, tmux_socket: Path,
                                          days: str) -> None:
    make_engine(tmp_path, tmux_socket)
    done = run_cli(tmp_path, "prune", "--older-than", days)
    assert done.returncode == 2 and done.stdout == ""
    assert "nothing was removed" in done.stderr


def test_a_bad_retention_limit_in_the_config_is_named(tmp_path: Path,
                                                      tmux_socket: Path) -> None:
    make_engine(tmp_path, tmux_socket)
    config = tmp_path / "config.toml"
    config.write_text(config.read_text() + "\n[retention]\nevidence_days = -3\n")
    done = run_cli(tmp_path, "prune", "--dry-run")
    assert done.returncode != 0 and done.stdout == ""
    assert "retention.evidence_days" in done.stderr and "0 to 36500" in done.stderr
