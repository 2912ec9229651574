"""Journey steps every real CLI goes through the same way: back / focus / close on a
pushed task, and a lost tmux server brought back by ``switchboard restore``.

The steps drive the engine (``frame_back``, ``view_focus``, ``frame_close``) and the
person's own command (``switchboard restore``, a subprocess in the test's environment:
the person's HOME and XDG folders), and check what a person sees: the parked child's
CLI is the same process when it comes back, a closed child's CLI ends and the tree no
longer lists it, a restored agent runs again in its place by its exact session id.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from core.context.requests import new_request_id
from core.engine.engine import Engine
from core.state.state_builder import build_navigator_state
from tests.integration.journey_env import one, pane_ids, tmux
from tests.waiting import fail_unless

REPO = Path(__file__).resolve().parents[2]


def pane_pid(socket: Path, pane: str) -> int:
    """The pid of the process the pane runs (the CLI's launcher)."""
    return int(tmux(socket, "display-message", "-p", "-t", pane, "#{pane_pid}").strip())


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def main_of(engine: Engine, view_id: str) -> str:
    return str(one(engine, "SELECT main_pane_id FROM user_views WHERE view_id = ?",
                   view_id)[0])  # type: ignore[index]


def placement(engine: Engine, frame_id: str) -> str:
    return str(one(engine, "SELECT state FROM frame_placements WHERE frame_id = ?"
                           " AND state <> 'orphaned'", frame_id)[0])  # type: ignore[index]


def open_frames(engine: Engine) -> set[str]:
    """The frames the navigator's tree lists (closed ones left out, as it shows them)."""
    state = build_navigator_state(engine, include_closed=False)
    return {frame.frame_id for project in state.projects for frame in project.frames}


def back_focus_close(engine: Engine, socket: Path, view_id: str, parent_pane: str,
                     child: str, timeout: float) -> None:
    """The child is in main: back shows the parent and parks the child (its CLI still
    running in its pane), focus shows the child again with the same process, close ends
    the child's CLI, the parent is in main again and the tree drops the child."""
    child_pane = main_of(engine, view_id)
    assert child_pane != parent_pane
    pid = pane_pid(socket, child_pane)
    engine.frame_back(new_request_id(), view_id)
    assert main_of(engine, view_id) == parent_pane
    assert placement(engine, child) == "parked"
    assert child_pane in pane_ids(socket) and pane_pid(socket, child_pane) == pid
    assert alive(pid)
    engine.view_focus(new_request_id(), view_id, child)
    assert main_of(engine, view_id) == child_pane
    assert placement(engine, child) == "active"
    assert pane_pid(socket, child_pane) == pid and alive(pid)  # the same CLI, never restarted
    assert child in open_frames(engine)
    engine.frame_close(new_request_id(), child)
    assert one(engine, "SELECT lifecycle_state FROM frames WHERE frame_id = ?",
               child) == ("closed",)
    fail_unless(lambda: main_of(engine, view_id) == parent_pane, timeout,
                lambda: main_of(engine, view_id))
    fail_unless(lambda: child_pane not in pane_ids(socket) and not alive(pid), timeout,
                lambda: f"the closed child's pane {child_pane} (pid {pid}) is still there")
    assert child not in open_frames(engine)


def kill_server(socket: Path) -> None:
    """``tmux kill-server``, then wait until the server process is really gone."""
    pid = int(tmux(socket, "display-message", "-p", "#{pid}").strip())
    tmux(socket, "kill-server")
    fail_unless(lambda: not alive(pid), 15, lambda: f"tmux server {pid} still running")


def restore() -> list[str]:
    """``switchboard restore`` as the person types it outside tmux; its output lines."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("TMUX", "TMUX_PANE", "SWITCHBOARD_VIEW_ID")}
    done = subprocess.run([sys.executable, "-m", "navigator.cli", "restore"], env=env,
                          cwd=REPO, capture_output=True, text=True, timeout=180,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, (done.stdout, done.stderr)
    return done.stdout.splitlines()
