"""`switchboard worktree add|remove` as a person runs it: the CLI in a subprocess, a real
git repository, a real tmux server and the fake provider for the live-agent refusal."""

from __future__ import annotations

import json
import subprocess
import tomllib
from dataclasses import replace
from pathlib import Path

import pytest

from core.config.config import ProviderConfig, TmuxConfig, default_config, render_config
from core.model.enums import Provider
from tests.core.test_project_add import _sb
from tests.integration.journey_env import fake_provider_command
from tests.waiting import retry_until


def _repo(path: Path) -> Path:
    path.mkdir(parents=True)
    for args in (["init", "-q", "-b", "main"], ["config", "user.email", "t@example.invalid"],
                 ["config", "user.name", "t"]):
        subprocess.run(["git", "-C", str(path), *args], check=True)
    (path / "README").write_text("hello\n")
    subprocess.run(["git", "-C", str(path), "add", "README"], check=True)
    subprocess.run(["git", "-C", str(path), "commit", "-qm", "first"], check=True)
    return path


@pytest.fixture
def home(tmp_path: Path, tmux_socket: Path) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    template = replace(
        default_config(generation_id="", host_id="6c1a1d7e-2b1e-4a51-9f0e-1f2a3b4c5d6e",
                       display_name="t"),
        providers={p: ProviderConfig(command=fake_provider_command(p.value)) for p in Provider},
        tmux=TmuxConfig(socket_path=str(tmux_socket)))
    (home / "config.toml").write_text(render_config(template))
    _sb(home, "init", cwd=tmp_path)
    return home


def test_worktree_is_its_own_project_and_removal_protects_work(home: Path,
                                                               tmp_path: Path) -> None:
    repo = _repo(tmp_path / "widget")
    _sb(home, "project", "add", cwd=repo)
    out = _sb(home, "worktree", "add", "fix", cwd=repo)
    assert "is project 'widget-fix'" in out
    tree = tmp_path / "widget-fix"
    assert (tree / "README").read_text() == "hello\n"
    branch = subprocess.run(["git", "-C", str(tree), "branch", "--show-current"],
                            capture_output=True, text=True).stdout.strip()
    assert branch == "fix"
    config = tomllib.loads((home / "config.toml").read_text())
    base, wt = config["projects"]
    assert wt["name"] == "widget-fix" and wt["root"] == str(tree.resolve())
    checkouts = {c["checkout_id"]: c for c in config["checkouts"]}
    assert checkouts[wt["checkout_id"]]["repository_id"] == \
        checkouts[base["checkout_id"]]["repository_id"]  # one repository, two checkouts
    assert len(config["repositories"]) == 1

    # its own view, and a live agent in it blocks removal
    route = json.loads(_sb(home, "project", "enter", "widget-fix", "--json", cwd=tree))
    _sb(home, "frame", "start", route["frame_id"], cwd=tree)
    before = (home / "config.toml").read_bytes()
    busy = _sb(home, "worktree", "remove", "widget-fix", cwd=tmp_path, expect=2)
    assert "1 live agent(s)" in busy and "stop them" in busy
    _sb(home, "frame", "stop", route["frame_id"], cwd=tree)

    (tree / "scratch.txt").write_text("unsaved work")
    dirty = _sb(home, "worktree", "remove", "widget-fix", cwd=tmp_path, expect=2)
    assert "1 uncommitted change(s)" in dirty and "commit or stash" in dirty
    assert (home / "config.toml").read_bytes() == before and tree.exists()

    (tree / "scratch.txt").unlink()
    assert retry_until(lambda: "widget-fix" in _sb(home, "worktree", "remove", "widget-fix",
                                                    cwd=tmp_path), timeout=30)
    assert not tree.exists()
    config = tomllib.loads((home / "config.toml").read_text())
    assert [p["name"] for p in config["projects"]] == ["widget"]
    listed = subprocess.run(["git", "-C", str(repo), "worktree", "list"], capture_output=True,
                            text=True).stdout
    assert "widget-fix" not in listed
    views = json.loads(_sb(home, "view", "list", "--json", cwd=tmp_path))
    assert [v["state"] for v in views if v["project_name"] == "widget-fix"] == ["retired"]


def test_worktree_refusals_change_nothing(home: Path, tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    _sb(home, "project", "add", cwd=plain)
    before = (home / "config.toml").read_bytes()
    not_git = _sb(home, "worktree", "add", "x", "--project", "plain", cwd=tmp_path, expect=2)
    assert "not a git checkout" in not_git
    bad = _sb(home, "worktree", "add", "../evil", "--project", "plain", cwd=tmp_path,
              expect=2)
    assert "worktree name" in bad
    base = _sb(home, "worktree", "remove", "plain", cwd=tmp_path, expect=2)
    assert "not a git worktree" in base
    assert (home / "config.toml").read_bytes() == before


@pytest.mark.parametrize("option", ["--branch=--orphan", "--branch=-D", "--branch=a..b",
                                    "--path=-weird"])
def test_worktree_options_never_reach_git_as_options(home: Path, tmp_path: Path,
                                                     option: str) -> None:
    """A branch that looks like a git option, and a relative path that lands inside the
    checkout, are refused in words; no worktree, no branch, no project (issue 31.10)."""
    repo = _repo(tmp_path / "widget")
    _sb(home, "project", "add", cwd=repo)
    before = (home / "config.toml").read_bytes()
    out = _sb(home, "worktree", "add", "fix", option, cwd=repo, expect=2)
    assert "branch" in out or "inside the project's checkout" in out, out
    assert (home / "config.toml").read_bytes() == before
    listed = subprocess.run(["git", "-C", str(repo), "worktree", "list", "--porcelain"],
                            capture_output=True, text=True, check=True).stdout
    assert listed.count("worktree ") == 1, listed
    branches = subprocess.run(["git", "-C", str(repo), "branch", "--format=%(refname)"],
                              capture_output=True, text=True, check=True).stdout.split()
    assert branches == ["refs/heads/main"]
    assert not (repo / "-weird").exists() and not (tmp_path / "-weird").exists()
