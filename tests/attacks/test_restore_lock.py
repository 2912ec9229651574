"""Two `switchboard restore` runs at once: one acts, the other waits for it (issue 37.7).

Before the lock, two restores started together each read the same plan and each
rebuilt and resumed the same views and agents: both exited 1 with contradictory
reports, a different frame ended in main, a "could not resume" recovery stayed open
for a live agent, and a later single restore still said NOT resumed. Here two real
restores of one home run side by side after `tmux kill-server` (as two terminals, or
bare `switchboard` typed twice, would): exactly one rebuilds and resumes, the other
waits for it and then finds nothing to do, and the fleet is what one restore makes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from core.config.home import Home
from core.fleet.restore import RestoreRunning, one_restore
from tests.integration.test_restore import _fleet_rows, _placement, kill_server
from tests.integration.transitions_env import (
    build_world,
    open_stage_engine,
    pane_of,
    run_cli,
    session_of,
)

pytestmark = pytest.mark.tmux


def start_restore(root: Path) -> subprocess.Popen[str]:
    """``switchboard restore --json`` for the home at ``root``, as a person outside tmux."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("TMUX", "TMUX_PANE", "SWITCHBOARD_VIEW_ID")}
    env.update(SWITCHBOARD_HOME=str(root), SWITCHBOARD_CONFIG=str(root / "config.toml"))
    return subprocess.Popen([sys.executable, "-m", "navigator.cli", "restore", "--json"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, stdin=subprocess.DEVNULL)


def acted(report: dict) -> bool:
    return any(v["outcome"] == "rebuilt" for v in report["views"]) or \
        any(a["outcome"] == "resumed" for a in report["agents"])


def test_two_restores_at_once_one_acts_and_the_other_waits(tmp_path: Path,
                                                          tmux_socket: Path) -> None:
    engine, world = build_world(tmp_path, tmux_socket)  # workspace parked, task in main
    assert world.child_id is not None
    before = {frame: session_of(engine, frame) for frame in (world.workspace_id,
                                                              world.child_id)}
    engine.conn.close()
    kill_server(tmux_socket)

    runs = [start_restore(tmp_path), start_restore(tmp_path)]
    done = [run.communicate(timeout=300) for run in runs]
    for run, (_out, err) in zip(runs, done, strict=True):
        assert run.returncode == 0, err
    reports = [json.loads(out) for out, _err in done]
    assert sorted(acted(r) for r in reports) == [False, True], reports
    [first] = [r for r in reports if acted(r)]
    [second] = [r for r in reports if not acted(r)]
    [second_err] = [err for (out, err), r in zip(done, reports, strict=True) if r is second]
    assert second["waited"] is True and first["waited"] is False
    assert "another `switchboard restore` of this home is running; waiting" in second_err
    assert [v["outcome"] for v in second["views"]] == ["open"]
    assert second["agents"] == []
    assert {a["frame_id"]: (a["outcome"], a["place"]) for a in first["agents"]} == {
        world.workspace_id: ("resumed", "parked"), world.child_id: ("resumed", "main")}

    fresh = open_stage_engine(tmp_path)
    for frame, key in before.items():
        assert session_of(fresh, frame) == key
        resumes = fresh.conn.execute(
            "SELECT COUNT(*) FROM launch_intents WHERE frame_id = ? AND action = 'resume'",
            (frame,)).fetchone()[0]
        assert resumes == 1  # one restore resumed it, once
    assert fresh.conn.execute("SELECT COUNT(*) FROM provider_sessions").fetchone()[0] == 2
    assert _placement(fresh, world.child_id) == "active"  # the same frame is in main
    assert _placement(fresh, world.workspace_id) == "parked"
    live = fresh.require_stage().snapshot()
    assert live is not None
    layout = live.view(world.view_id)
    assert layout is not None and layout.main is not None
    assert layout.main.pane_id == pane_of(fresh, world.child_id)
    assert not fresh.conn.execute("SELECT kind, bounded_explanation FROM recoveries"
                                  " WHERE state = 'open'").fetchall()  # no false recovery
    settled = _fleet_rows(fresh)
    fresh.conn.close()

    again = run_cli(tmp_path, "restore")  # a later single restore agrees
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines() == [
        "alpha: view already open",
        "nothing to restore: every view is open and no agent waits to be resumed"]
    assert _fleet_rows(open_stage_engine(tmp_path)) == settled


def test_a_restore_held_too_long_is_refused_in_one_line(tmp_path: Path) -> None:
    """The wait is bounded: while this process holds the lock, another process's restore
    gives up after its wait with one line naming this pid, and runs nothing."""
    home = Home(root=tmp_path / "home", config_path=tmp_path / "home" / "config.toml")
    script = ("from pathlib import Path\n"
              "from core.config.home import Home\n"
              "from core.fleet.restore import RestoreRunning, one_restore\n"
              f"home = Home(root=Path({str(home.root)!r}), "
              f"config_path=Path({str(home.config_path)!r}))\n"
              "try:\n"
              "    with one_restore(home, wait_s=0.3):\n"
              "        print('ran')\n"
              "except RestoreRunning as exc:\n"
              "    print(exc.message)\n")
    with one_restore(home) as waited:
        assert waited is False
        waiter = subprocess.run([sys.executable, "-c", script], capture_output=True,
                                text=True, timeout=60, cwd=Path(__file__).parents[2])
    said = waiter.stdout
    assert waiter.returncode == 0, waiter.stderr
    assert said.count("\n") == 1 and "ran" not in said.split()
    assert f"(pid {os.getpid()})" in said and "is still running after 0 s" in said
    assert "nothing was changed" in said
    assert RestoreRunning.code == "restore_running"
    with one_restore(home, wait_s=0.0) as waited:  # let go: the next one runs at once
        assert waited is False
