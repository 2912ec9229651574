"""`switchboard restore` after a reboot: every view back, every live agent resumed in place.

A fleet of two projects (alpha: a workspace parked behind a pushed task in main,
zoomed; beta: one agent, direct mode) loses its tmux server (`tmux kill-server`).
The command a person types brings back each view on a new server, resumes each
agent by its exact session id where it was (main or parked), with the view's mode
and zoom; a second run changes nothing. An agent that cannot be resumed by exact
id stays stopped, and its recovery says why.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from core.context.requests import new_request_id
from core.engine.engine import Engine
from core.model.enums import Provider, ViewMode
from tests.integration.journey_env import tmux
from tests.integration.transitions_env import (
    build_world,
    open_stage_engine,
    pane_of,
    problems,
    run_cli,
    screen,
    session_of,
    wait_prompt,
)
from tests.waiting import retry_until

pytestmark = pytest.mark.tmux


def kill_server(socket: Path) -> None:
    """`tmux kill-server`, then wait until the old server process is really gone."""
    pid = int(tmux(socket, "display-message", "-p", "#{pid}").strip())
    tmux(socket, "kill-server")

    def gone() -> bool:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        return False

    assert retry_until(gone, 10, interval=0.02)


def _fleet_rows(engine: Engine) -> dict[str, object]:
    """What must not move on a second restore: launches, sessions, panes, recoveries."""
    conn = engine.conn
    return {
        "launches": conn.execute("SELECT COUNT(*) FROM launch_intents").fetchone()[0],
        "sessions": sorted(r[0] for r in conn.execute(
            "SELECT session_key FROM provider_sessions")),
        "surfaces": sorted(tuple(r) for r in conn.execute(
            "SELECT surface_id, lifecycle_state, pane_id FROM surfaces")),
        "placements": sorted(tuple(r) for r in conn.execute(
            "SELECT frame_id, state, surface_id FROM frame_placements")),
        "views": sorted(tuple(r) for r in conn.execute(
            "SELECT view_id, mode, zoomed, tmux_window_id, active_frame_id, revision"
            " FROM user_views")),
        "recoveries": sorted(tuple(r) for r in conn.execute(
            "SELECT recovery_id, state, bounded_explanation FROM recoveries")),
    }


def _shows(socket: Path, pane: str, text: str) -> Callable[[], bool]:
    return lambda: text in screen(socket, pane)


def _placement(engine: Engine, frame_id: str) -> str:
    return engine.conn.execute("SELECT state FROM frame_placements WHERE frame_id = ?"
                               " AND state <> 'orphaned'", (frame_id,)).fetchone()[0]


def test_restore_brings_the_fleet_back_after_kill_server(tmp_path: Path,
                                                         tmux_socket: Path) -> None:
    engine, world = build_world(tmp_path, tmux_socket)
    assert world.child_id is not None
    beta = engine.project_enter(new_request_id(), "beta")
    engine.frame_start(new_request_id(), beta.frame_id)
    wait_prompt(tmux_socket, pane_of(engine, beta.frame_id))
    engine.view_mode(new_request_id(), beta.view_id, ViewMode.DIRECT)
    alpha_main = engine.conn.execute("SELECT main_pane_id FROM user_views WHERE view_id = ?",
                                     (world.view_id,)).fetchone()[0]
    tmux(tmux_socket, "resize-pane", "-Z", "-t", alpha_main)  # the person zooms alpha
    from core.reconcile.reconcile import reconcile
    reconcile(engine)  # commits the zoom tmux shows
    before = {frame: session_of(engine, frame)
              for frame in (world.workspace_id, world.child_id, beta.frame_id)}
    assert _placement(engine, world.workspace_id) == "parked"
    engine.conn.close()
    kill_server(tmux_socket)

    done = run_cli(tmp_path, "restore")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "alpha: view reopened (navigator mode, zoomed)" in lines
    assert "beta: view reopened (direct mode)" in lines
    assert "  “alpha” (parked): resumed session " + before[world.workspace_id] in lines
    assert "  “Task” (main): resumed session " + before[world.child_id] in lines
    assert "  “beta” (main): resumed session " + before[beta.frame_id] in lines

    fresh = open_stage_engine(tmp_path)
    for frame, key in before.items():
        assert session_of(fresh, frame) == key
        launch = fresh.conn.execute(
            "SELECT action, target_session_key, state FROM launch_intents WHERE frame_id = ?"
            " ORDER BY created_at DESC LIMIT 1", (frame,)).fetchone()
        assert tuple(launch) == ("resume", key, "started")
        session_id = key.rsplit(":", 1)[1]
        pane = pane_of(fresh, frame)
        assert pane is not None
        assert retry_until(_shows(tmux_socket, pane, f"session: {session_id} (resumed)"), 10)
    assert fresh.conn.execute("SELECT COUNT(*) FROM provider_sessions").fetchone()[0] == 3
    assert _placement(fresh, world.child_id) == "active"
    assert _placement(fresh, world.workspace_id) == "parked"
    assert _placement(fresh, beta.frame_id) == "active"
    live = fresh.require_stage().snapshot()
    assert live is not None
    alpha_layout, beta_layout = live.view(world.view_id), live.view(beta.view_id)
    assert alpha_layout is not None and beta_layout is not None
    assert alpha_layout.mode is ViewMode.NAVIGATOR and alpha_layout.zoomed
    assert beta_layout.mode is ViewMode.DIRECT
    assert alpha_layout.main is not None
    assert alpha_layout.main.pane_id == pane_of(fresh, world.child_id)
    for view_id in (world.view_id, beta.view_id):
        assert problems(fresh, view_id) == []
    assert not fresh.conn.execute("SELECT kind, subject_type FROM recoveries"
                                  " WHERE state = 'open'").fetchall()
    settled = _fleet_rows(fresh)

    again = run_cli(tmp_path, "restore")
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines() == [
        "alpha: view already open", "beta: view already open",
        "nothing to restore: every view is open and no agent waits to be resumed"]
    assert _fleet_rows(open_stage_engine(tmp_path)) == settled


def test_an_agent_that_cannot_resume_by_exact_id_is_a_recovery_that_says_why(
        tmp_path: Path, tmux_socket: Path) -> None:
    engine, world = build_world(tmp_path, tmux_socket, with_child=False)
    beta = engine.project_enter(new_request_id(), "beta")
    # A Codex agent whose first hook never came: its thread id is still provisional.
    engine.frame_start(new_request_id(), beta.frame_id, Provider.CODEX)
    wait_prompt(tmux_socket, pane_of(engine, beta.frame_id))
    pending = session_of(engine, beta.frame_id)
    assert pending.split(":")[2].startswith("pending-")
    engine.conn.close()
    kill_server(tmux_socket)

    done = run_cli(tmp_path, "restore", "--json")
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    outcomes = {a["frame_id"]: (a["outcome"], a["place"]) for a in report["agents"]}
    assert outcomes == {world.workspace_id: ("resumed", "main"),
                        beta.frame_id: ("failed", "main")}
    fresh = open_stage_engine(tmp_path)
    [why] = [r[0] for r in fresh.conn.execute(
        "SELECT bounded_explanation FROM recoveries WHERE state = 'open'"
        " AND kind = 'server_restarted' AND subject_type = 'surface'")]
    assert "could not resume its session" in why and "session id" in why
    assert "press n" in why
    assert _placement(fresh, beta.frame_id) == "stopped_affinity"
    assert fresh.conn.execute("SELECT COUNT(*) FROM provider_sessions").fetchone()[0] == 2
    settled = _fleet_rows(fresh)

    again = run_cli(tmp_path, "restore", "--json")
    assert again.returncode == 1
    assert [a["outcome"] for a in json.loads(again.stdout)["agents"]] == ["failed"]
    assert _fleet_rows(open_stage_engine(tmp_path)) == settled


def _bare(root: Path) -> subprocess.CompletedProcess[str]:
    """Bare `switchboard` typed in alpha's folder, outside tmux."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("TMUX", "TMUX_PANE", "SWITCHBOARD_VIEW_ID")}
    env.update(SWITCHBOARD_HOME=str(root), SWITCHBOARD_CONFIG=str(root / "config.toml"))
    return subprocess.run([sys.executable, "-m", "navigator.cli"], env=env, cwd=root / "src" /
                          "alpha", capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)


def test_bare_switchboard_restores_before_it_opens(tmp_path: Path, tmux_socket: Path) -> None:
    engine, world = build_world(tmp_path, tmux_socket, with_child=False)
    key = session_of(engine, world.workspace_id)
    engine.conn.close()
    kill_server(tmux_socket)

    done = _bare(tmp_path)  # no terminal: it prints how to attach
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "alpha: view reopened (navigator mode)"
    assert lines[1] == "  “alpha” (main): resumed session " + key
    assert lines[-1].startswith(
        f"attach: env -u TMUX -u TMUX_PANE tmux -S {tmux_socket} attach -t @")
    fresh = open_stage_engine(tmp_path)
    assert _placement(fresh, world.workspace_id) == "active"
    again = _bare(tmp_path)
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines() == [lines[-1]]  # only the open: nothing to restore
