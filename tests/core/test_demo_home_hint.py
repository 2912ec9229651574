"""After the demo, a command outside it names the demo's home (issue 40.8).

A person tries ``switchboard demo``, detaches, and types ``switchboard`` (or
``restore``, ``prune``, ``usage``, ``recovery list``) in a new shell: that reaches the
default home, which is empty. The one-line error now names the demo's home, the
command that reattaches to it and the variable that runs this command on it; the
command still acts on nothing.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from core.config.home import Home, default_demo_root
from core.config.registry import not_initialized_message

COMMANDS: tuple[list[str], ...] = ([], ["restore"], ["prune"], ["usage"],
                                   ["recovery", "list"], ["open"], ["search", "parser"])


def _env(home: Path, **extra: str) -> dict[str, str]:
    """A person's shell: HOME and XDG dirs in ``home``, no Switchboard variables, no tmux."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("TMUX", "TMUX_PANE", "SWITCHBOARD_HOME", "SWITCHBOARD_CONFIG",
                        "SWITCHBOARD_VIEW_ID")}
    env.update(HOME=str(home), XDG_STATE_HOME=str(home / "state"),
               XDG_CONFIG_HOME=str(home / "config"), **extra)
    return env


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "navigator.cli", *args], env=env,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=120)


@pytest.fixture
def person(tmp_path: Path) -> Path:
    home = tmp_path / "me"
    home.mkdir(mode=0o700)
    return home


def _init_demo_home(person: Path) -> Path:
    """An initialized home where the demo keeps its own (``init`` there: a real pointer,
    config and registry, as ``switchboard demo`` leaves them, without its tmux server)."""
    demo = default_demo_root(_env(person))
    done = _cli(_env(person, SWITCHBOARD_HOME=str(demo)), "init", "--private-tmux")
    assert done.returncode == 0, done.stderr
    assert (demo / "state" / "current").is_file()
    return demo


@pytest.mark.parametrize("argv", COMMANDS, ids=lambda a: " ".join(a) or "bare")
def test_a_command_outside_the_demo_names_its_home(person: Path, argv: list[str]) -> None:
    demo = _init_demo_home(person)
    done = _cli(_env(person), *argv)
    assert done.returncode == 2, (done.stdout, done.stderr)
    (line,) = done.stderr.splitlines()
    default = person / "state" / "switchboard"
    assert f"Switchboard is not initialized in {default}" in line
    assert f"the demo's home is {demo}: `switchboard demo` reattaches to it" in line
    assert f"SWITCHBOARD_HOME={demo} before this command runs it on the demo" in line
    # nothing was made in the default home's place
    assert not (default / "state" / "current").exists()


def test_the_variable_the_error_names_runs_the_command_on_the_demo(person: Path) -> None:
    demo = _init_demo_home(person)
    refused = _cli(_env(person), "recovery", "list")
    assert refused.returncode == 2
    # what the line says to type, typed: the same command now reads the demo's registry
    assignment = next(word for word in refused.stderr.split() if word.startswith(
        "SWITCHBOARD_HOME="))
    name, value = assignment.split("=", 1)
    done = _cli(_env(person, **{name: shlex.split(value)[0]}), "recovery", "list")
    assert done.returncode == 0, done.stderr
    assert value == str(demo)


def test_without_a_demo_the_error_stays_the_init_hint(person: Path) -> None:
    done = _cli(_env(person), "prune")
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    assert line.endswith(f"Switchboard is not initialized in {person / 'state' / 'switchboard'}"
                         "; run `switchboard init`")
    assert "switchboard demo" not in line and "SWITCHBOARD_HOME" not in line


def test_the_demo_home_itself_is_not_named_as_another(tmp_path: Path) -> None:
    """An uninitialized home that is the demo's own root gets the plain init hint."""
    root = tmp_path / "demo"
    (root / "state").mkdir(parents=True)
    message = not_initialized_message(Home(root, root / "config.toml"), demo_root=root)
    assert message == f"Switchboard is not initialized in {root}; run `switchboard init`"


def test_a_demo_path_with_spaces_and_quotes_is_quoted_for_the_shell(tmp_path: Path) -> None:
    demo = tmp_path / "it's a $(demo)"
    (demo / "state").mkdir(parents=True)
    (demo / "state" / "current").write_text("x\n")
    home = tmp_path / "mine"
    message = not_initialized_message(Home(home, home / "config.toml"), demo_root=demo)
    assert f"SWITCHBOARD_HOME={shlex.quote(str(demo))} before this command" in message
    assert "\n" not in message


def test_the_demo_root_follows_xdg_state_home(tmp_path: Path) -> None:
    assert default_demo_root({"HOME": str(tmp_path), "XDG_STATE_HOME": str(tmp_path / "s")}) \
        == tmp_path / "s" / "switchboard-demo"
    # a relative XDG_STATE_HOME is ignored, as the XDG spec says (and as Home does)
    assert default_demo_root({"HOME": str(tmp_path), "XDG_STATE_HOME": "rel"}) \
        == tmp_path / ".local" / "state" / "switchboard-demo"
