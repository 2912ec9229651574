"""The main job: `switchboard demo` builds a working view on a private tmux server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.integration.journey_env import tmux
from tests.waiting import retry_until


def _cli(home: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}
    env.update(SWITCHBOARD_HOME=str(home), SWITCHBOARD_CONFIG=str(home / "config.toml"))
    return subprocess.run([sys.executable, "-m", "navigator.cli", *args], env=env,
                          capture_output=True, text=True, timeout=120)


def test_demo_sets_up_a_view_with_a_workspace_and_two_tasks(tmp_path: Path) -> None:
    home = Path(os.path.realpath("/tmp")) / f"sbdemo-{os.getpid()}-{tmp_path.name[-8:]}"
    socket = home / "tmux.sock"
    try:
        done = _cli(home, "demo", "--home", str(home), "--no-attach")
        assert done.returncode == 0, done.stderr
        assert f"tmux -S {socket} attach" in done.stdout
        frames = json.loads(_cli(home, "frame", "list", "--json").stdout)
        assert sorted((f["role"], f["title"], f["lifecycle_state"]) for f in frames) == [
            ("task", "Add tests", "open"), ("task", "Write the parser", "open"),
            ("workspace", "demo", "open")]
        state = json.loads(_cli(home, "state", "navigator", "--json").stdout)
        (view,) = state["views"]
        assert view["title"] == "Add tests"
        assert [c["title"] for c in view["breadcrumb"]] == ["demo", "Add tests"]
        # the view window has the navigator pane and one provider pane in main
        window = tmux(socket, "list-panes", "-a", "-F",
                      "#{session_name} #{@sb_role}").splitlines()
        assert sorted(line for line in window if line.startswith("switchboard ")
                      and line.split()[1:]) == ["switchboard navigator", "switchboard provider"]
        # every parked agent is input-disabled in the holding session
        parked = [line.split() for line in tmux(socket, "list-panes", "-a", "-F",
                  "#{session_name} #{@sb_role} #{pane_input_off}").splitlines()
                  if line.startswith("_sb_holding provider")]
        assert len(parked) == 2 and all(p[2] == "1" for p in parked)
        # the navigator pane renders the project tree
        nav = next(line.split()[0] for line in tmux(socket, "list-panes", "-a", "-F",
                   "#{pane_id} #{@sb_role}").splitlines() if line.endswith(" navigator"))
        assert retry_until(lambda: "Write the parser" in tmux(socket, "capture-pane", "-p",
                                                              "-t", nav), 20)
        # running the demo again reuses the same home: nothing is duplicated
        again = _cli(home, "demo", "--home", str(home), "--no-attach")
        assert again.returncode == 0, again.stderr
        assert len(json.loads(_cli(home, "frame", "list", "--json").stdout)) == 3
    finally:
        subprocess.run(["tmux", "-S", str(socket), "kill-server"], capture_output=True)
        subprocess.run(["rm", "-rf", str(home)])
