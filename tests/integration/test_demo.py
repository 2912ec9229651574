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


def _seeding(home: Path) -> bool:
    """The demo's seeder still holds its lock (it is pushing tasks)."""
    import fcntl

    with open(home / "demo-seed.log.lock", "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        return False


def test_demo_returns_before_its_tasks_are_pushed(tmp_path: Path) -> None:
    """A newcomer attaches at once: the workspace is shown, the tasks come after."""
    home = Path(os.path.realpath("/tmp")) / f"sbdemo-{os.getpid()}-{tmp_path.name[-8:]}f"
    socket = home / "tmux.sock"
    try:
        done = _cli(home, "demo", "--home", str(home), "--no-attach")
        assert done.returncode == 0, done.stderr
        frames = json.loads(_cli(home, "frame", "list", "--json").stdout)
        # the workspace is there when the command returns; the tasks follow
        assert any(f["role"] == "workspace" for f in frames)
        nav = next(line.split()[0] for line in tmux(socket, "list-panes", "-a", "-F",
                   "#{pane_id} #{@sb_role}").splitlines() if line.endswith(" navigator"))
        assert retry_until(lambda: "demo" in tmux(socket, "capture-pane", "-p", "-t", nav)
                           and "Projects" in tmux(socket, "capture-pane", "-p", "-t", nav), 20)
        assert retry_until(lambda: not _seeding(home), 90)
        assert len(json.loads(_cli(home, "frame", "list", "--json").stdout)) == 3
    finally:
        subprocess.run(["tmux", "-S", str(socket), "kill-server"], capture_output=True)
        subprocess.run(["rm", "-rf", str(home)])


def test_demo_sets_up_a_view_with_a_workspace_and_two_tasks(tmp_path: Path) -> None:
    home = Path(os.path.realpath("/tmp")) / f"sbdemo-{os.getpid()}-{tmp_path.name[-8:]}"
    socket = home / "tmux.sock"
    try:
        done = _cli(home, "demo", "--home", str(home), "--no-attach")
        assert done.returncode == 0, done.stderr
        assert f"tmux -S {socket} attach" in done.stdout
        # the tasks are pushed after the command returned (the person attaches at once)
        expected = [("task", "Add tests", "open"), ("task", "Write the parser", "open"),
                    ("workspace", "demo", "open")]

        def tree() -> list[tuple[str, str, str]]:
            frames = json.loads(_cli(home, "frame", "list", "--json").stdout)
            return sorted((f["role"], f["title"], f["lifecycle_state"]) for f in frames)

        def shown() -> str:
            (view,) = json.loads(_cli(home, "state", "navigator", "--json").stdout)["views"]
            return view["title"]

        assert retry_until(lambda: tree() == expected, 90), tree()
        assert retry_until(lambda: shown() == "Add tests"
                           and not (home / "demo-seed.log").read_text().strip()
                           and not _seeding(home), 60), (home / "demo-seed.log").read_text()
        state = json.loads(_cli(home, "state", "navigator", "--json").stdout)
        (view,) = state["views"]
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
