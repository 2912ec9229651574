"""`switchboard open` / bare `switchboard`: find the project and its view in tmux."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from core.model.errors import NotFound
from navigator.commands.open import pick_project
from tests.integration.journey_env import make_live_engine, tmux


def test_pick_project_prefers_the_deepest_root_holding_the_cwd(tmp_path: Path) -> None:
    outer, inner = tmp_path / "mono", tmp_path / "mono" / "svc"
    inner.mkdir(parents=True)
    projects = [("mono", str(outer)), ("svc", str(inner))]
    assert pick_project(projects, inner / "src") == "svc"
    assert pick_project(projects, outer) == "mono"
    assert pick_project([("only", str(outer))], tmp_path) == "only"
    with pytest.raises(NotFound) as refused:
        pick_project(projects, tmp_path)
    assert "(mono, svc)" in refused.value.message
    assert "switchboard project add" in refused.value.message
    with pytest.raises(NotFound) as none_configured:
        pick_project([], tmp_path)
    assert "switchboard project add" in none_configured.value.message


def test_bare_switchboard_opens_the_cwd_project_view(tmp_path: Path, tmux_socket: Path) -> None:
    engine = make_live_engine(tmp_path, tmux_socket)
    engine.conn.close()
    env = {k: v for k, v in os.environ.items()
           if k not in ("TMUX", "TMUX_PANE", "SWITCHBOARD_VIEW_ID")}
    env.update(SWITCHBOARD_HOME=str(tmp_path), SWITCHBOARD_CONFIG=str(tmp_path / "config.toml"))
    done = subprocess.run([sys.executable, "-m", "navigator.cli"], cwd=tmp_path / "src" / "beta",
                          env=env, capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(
        f"attach: env -u TMUX -u TMUX_PANE tmux -S {tmux_socket} attach -t @")
    window = done.stdout.split()[-1]
    names = tmux(tmux_socket, "list-windows", "-a", "-F", "#{window_id} #{window_name}")
    assert f"{window} beta" in names.splitlines()
    again = subprocess.run([sys.executable, "-m", "navigator.cli", "open", "beta",
                            "--no-attach"], env=env, capture_output=True, text=True, timeout=60)
    assert again.returncode == 0, again.stderr
    assert again.stdout.split()[-1] == window  # the same view, not a second one
