"""A newcomer's first commands, through the real `switchboard` entry point on a fresh home
(issue 40 item 8): `init` then `prune --dry-run` works as written, and `project add`
in a folder that is not a git repository says what that means.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from core.config.config import INIT_EVIDENCE_DAYS

BIN = Path(sys.executable).parent  # holds the `switchboard` entry point of this install


@pytest.fixture
def run(tmp_path: Path):
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("SWITCHBOARD_") and k not in ("TMUX", "TMUX_PANE")}
    env.update(SWITCHBOARD_HOME=str(home), SWITCHBOARD_CONFIG=str(home / "config.toml"))

    def switchboard(*args: str, cwd: Path = tmp_path, expect: int = 0
                    ) -> subprocess.CompletedProcess[str]:
        done = subprocess.run([str(BIN / "switchboard"), *args], env=env, cwd=cwd,
                              capture_output=True, text=True, timeout=60,
                              stdin=subprocess.DEVNULL)
        assert done.returncode == expect, (done.stdout, done.stderr)
        return done

    switchboard("init")
    switchboard.config = home / "config.toml"  # type: ignore[attr-defined]
    return switchboard


def test_prune_dry_run_works_right_after_init(run) -> None:
    config = tomllib.loads(run.config.read_text(encoding="utf-8"))
    assert config["retention"]["evidence_days"] == INIT_EVIDENCE_DAYS == 30
    done = run("prune", "--dry-run")
    assert done.stdout.splitlines() == [
        "nothing to prune: no closed frame's evidence is older than 30 days"]


def test_project_add_outside_git_says_the_folder_is_the_project(run, tmp_path: Path) -> None:
    plain = tmp_path / "notes"
    plain.mkdir()
    done = run("project", "add", cwd=plain)
    assert (f"note: {plain.resolve()} is not in a git repository, so the folder itself is the "
            "project; diff review, conflicts and worktrees need git (`git init` there)"
            in done.stdout.splitlines())
    repo = tmp_path / "code"
    (repo / "src").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True, timeout=30)
    inside = run("project", "add", cwd=repo / "src")  # the git root becomes the project
    assert f"added project 'code' ({repo.resolve()})" in inside.stdout
    assert "note:" not in inside.stdout
