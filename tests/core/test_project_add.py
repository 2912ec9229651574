"""`switchboard project add`, the first-run hints and `demo --stop/--reset`, as a person
runs them: the real CLI in a subprocess, a real git checkout, a real tmux server."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from core.apps.demo import DEMO_PROJECT_ID

REPO_ROOT = Path(__file__).resolve().parents[2]


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("TMUX", "TMUX_PANE", "SWITCHBOARD_VIEW_ID")}
    env.update(SWITCHBOARD_HOME=str(home), SWITCHBOARD_CONFIG=str(home / "config.toml"),
               PYTHONPATH=str(REPO_ROOT))
    return env


def _sb(home: Path, *args: str, cwd: Path, expect: int = 0) -> str:
    done = subprocess.run([sys.executable, "-m", "navigator.cli", *args], cwd=cwd,
                          env=_env(home), capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == expect, done.stdout + done.stderr
    return done.stdout + done.stderr


def _git_repo(path: Path) -> Path:
    path.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    subprocess.run(["git", "-C", str(path), "remote", "add", "origin",
                    "https://example.invalid/team/widget.git"], check=True)
    (path / "src").mkdir()
    return path


@pytest.fixture
def home(tmp_path: Path, tmux_socket: Path) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    out = _sb(home, "init", "--tmux-socket", str(tmux_socket), cwd=tmp_path)
    assert "switchboard project add" in out  # init names the next step
    return home


def test_add_from_a_subfolder_registers_the_git_root_and_opens(home: Path,
                                                                tmp_path: Path) -> None:
    repo = _git_repo(tmp_path / "widget")
    config_path = home / "config.toml"
    config_path.write_text(config_path.read_text() + "# my own note stays\n")
    out = _sb(home, "project", "add", "--provider", "codex", cwd=repo / "src")
    assert "added project 'widget'" in out and "switchboard open widget" in out

    text = config_path.read_text()
    assert "# my own note stays" in text  # appended, never re-rendered
    config = tomllib.loads(text)
    [project] = config["projects"]
    [checkout] = config["checkouts"]
    [repository] = config["repositories"]
    assert project["root"] == checkout["path"] == str(repo.resolve())
    assert project["checkout_id"] == checkout["checkout_id"]
    assert checkout["repository_id"] == repository["repository_id"]
    assert repository["url"] == "https://example.invalid/team/widget.git"
    assert project["preferred_provider"] == "codex"
    assert (config_path.stat().st_mode & 0o077) == 0  # private to the person

    listed = _sb(home, "project", "list", cwd=tmp_path)
    assert "widget" in listed
    # bare `switchboard` in a subfolder now finds it and opens its view
    opened = _sb(home, cwd=repo / "src")
    assert opened.startswith("attach: env -u TMUX -u TMUX_PANE tmux -S "), opened


def test_adding_twice_or_a_taken_name_changes_nothing(home: Path, tmp_path: Path) -> None:
    repo = _git_repo(tmp_path / "widget")
    _sb(home, "project", "add", str(repo), cwd=tmp_path)
    config_path = home / "config.toml"
    before = config_path.read_bytes()

    again = _sb(home, "project", "add", str(repo / "src"), cwd=tmp_path, expect=2)
    assert "already the project 'widget'" in again and "switchboard open widget" in again
    other = tmp_path / "elsewhere" / "widget"
    other.mkdir(parents=True)
    taken = _sb(home, "project", "add", str(other), cwd=tmp_path, expect=2)
    assert "already named 'widget'" in taken and "--name" in taken
    missing = _sb(home, "project", "add", str(tmp_path / "nope"), cwd=tmp_path, expect=2)
    assert "not a folder" in missing
    bad_name = _sb(home, "project", "add", str(other), "--name", "a\x07b", cwd=tmp_path,
                   expect=2)
    assert "plain --name" in bad_name
    assert config_path.read_bytes() == before

    named = _sb(home, "project", "add", str(other), "--name", "widget-2", cwd=tmp_path)
    assert "added project 'widget-2'" in named
    plain = tomllib.loads(config_path.read_text())
    assert [p["name"] for p in plain["projects"]] == ["widget", "widget-2"]
    # a folder outside git is a checkout without a repository
    assert "repository_id" not in plain["checkouts"][1]


def test_open_outside_any_project_says_how_to_add_it(home: Path, tmp_path: Path) -> None:
    stray = tmp_path / "stray"
    stray.mkdir()
    out = _sb(home, cwd=stray, expect=2)
    assert "is not a Switchboard project" in out and "switchboard project add" in out
    assert "Traceback" not in out


def test_demo_stop_kills_its_server_and_reset_deletes_only_a_demo_home(tmp_path: Path) -> None:
    demo = tmp_path / "demo-home"
    demo.mkdir()
    (demo / "config.toml").write_text(f'# demo\nproject_id = "{DEMO_PROJECT_ID}"\n')
    socket = demo / "tmux.sock"
    subprocess.run(["tmux", "-S", str(socket), "-f", "/dev/null", "new-session", "-d",
                    "-s", "demo"], check=True)
    try:
        out = _sb(demo, "demo", "--home", str(demo), "--stop", cwd=tmp_path)
        assert "stopped its tmux server" in out and "--reset" in out
        alive = subprocess.run(["tmux", "-S", str(socket), "has-session"],
                               capture_output=True)
        assert alive.returncode != 0
        assert demo.exists()

        out = _sb(demo, "demo", "--home", str(demo), "--reset", cwd=tmp_path)
        assert "was not running" in out and "deleted" in out
        assert not demo.exists()
    finally:
        subprocess.run(["tmux", "-S", str(socket), "kill-server"], capture_output=True)

    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "notes.txt").write_text("keep me")
    refused = _sb(precious, "demo", "--home", str(precious), "--reset", cwd=tmp_path,
                  expect=2)
    assert "does not look like a Switchboard demo home" in refused
    assert (precious / "notes.txt").read_text() == "keep me"


def test_next_hints_paste_as_the_command_they_name(home: Path, tmp_path: Path) -> None:
    """A name with a space, a `;` and a leading `-` (issue 31.8): the hint, pasted into a
    shell, is `switchboard open` of exactly that project, not an option or two commands."""
    import shlex

    from navigator.cli import build_parser

    repo = _git_repo(tmp_path / "odd")
    name = "-my app;x"
    out = _sb(home, "project", "add", "--name", name, cwd=repo)
    hint = out.split("next: `", 1)[1].split("`", 1)[0]
    words = shlex.split(hint)
    assert words[:2] == ["switchboard", "open"]
    assert build_parser("open").parse_args(words[1:]).project == name


def test_demo_hints_keep_the_home_they_were_given(tmp_path: Path) -> None:
    """`demo --no-attach --home X` says how to stop *that* demo (issue 31.8)."""
    import shlex

    demo = tmp_path / "my demo"
    try:
        out = _sb(demo, "demo", "--no-attach", "--home", str(demo), cwd=tmp_path)
        stop = shlex.split(out.split("stop it: `", 1)[1].split("`", 1)[0])
        assert stop == ["switchboard", "demo", "--stop", "--home", str(demo)]
        out = _sb(demo, *stop[1:], cwd=tmp_path)
        assert "stopped its tmux server" in out
        reset = shlex.split(out.split("(`", 1)[1].split("`", 1)[0])
        assert reset == ["switchboard", "demo", "--reset", "--home", str(demo)]
    finally:
        subprocess.run(["tmux", "-S", str(demo / "tmux.sock"), "kill-server"],
                       capture_output=True)


def test_a_deleted_registry_points_to_the_one_command_that_helps(home: Path,
                                                                 tmp_path: Path) -> None:
    """Not init (which refuses: a generation is published) but reset, with the
    generation filled in; pasting it works (issue 31.8)."""
    import shlex

    generation = (home / "state" / "current").read_text().strip()
    for path in (home / "state" / generation).glob("registry.sqlite3*"):
        path.unlink()
    out = _sb(home, "frame", "list", cwd=tmp_path, expect=2)
    assert "switchboard init" not in out, out
    hint = shlex.split(out.split("`", 2)[1])
    assert hint == ["switchboard", "reset", "--confirm-generation", generation]
    out = _sb(home, *hint[1:], cwd=tmp_path)
    assert "new generation" in out
    _sb(home, "frame", "list", cwd=tmp_path)  # the new, empty registry opens (exit 0)
