"""The words that send a person back to a view name the command that reaches it
(issue 40.8): in the demo that is `switchboard demo`, never bare `switchboard`,
which reaches the default home (empty after only the demo)."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.apps.demo import demo_template, is_demo_home, reopen_command
from core.config.home import Home, default_demo_root
from core.config.registry import init_registry
from navigator.commands.ui import say_how_to_return
from navigator.screens.help import TMUX_HINTS


def _demo_home(root: Path) -> Path:
    """A home initialized with the demo's own config (as ``switchboard demo`` writes it)."""
    root.mkdir(parents=True, mode=0o700)
    init_registry(Home(root, root / "config.toml"), template=demo_template(root))
    return root


def _own_home(root: Path) -> Path:
    root.mkdir(parents=True, mode=0o700)
    init_registry(Home(root, root / "config.toml"))
    return root


def test_the_default_demo_home_is_reopened_by_switchboard_demo(
        short_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(short_dir / "state"))
    root = _demo_home(default_demo_root())
    assert is_demo_home(root)
    assert reopen_command(root) == "`switchboard demo`"


def test_a_demo_home_of_its_own_is_reopened_with_its_home(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    root = _demo_home(tmp_path / "my demo")
    assert reopen_command(root) == f"`switchboard demo --home '{root}'`"


def test_a_persons_own_home_is_reopened_by_bare_switchboard(tmp_path: Path) -> None:
    root = _own_home(tmp_path / "home")
    assert not is_demo_home(root)
    assert reopen_command(root) == "`switchboard`"


def test_the_quit_hint_in_the_demo_names_switchboard_demo(
        short_dir: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(short_dir / "state"))
    root = _demo_home(default_demo_root())
    monkeypatch.setenv("SWITCHBOARD_HOME", str(root))
    monkeypatch.setenv("SWITCHBOARD_CONFIG", str(root / "config.toml"))
    say_how_to_return()
    shown = capsys.readouterr().out
    assert "`switchboard demo` in a shell opens\nthe view again." in shown
    assert "{reopen}" not in shown


def test_the_quit_hint_outside_the_demo_names_switchboard(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    root = _own_home(tmp_path / "home")
    monkeypatch.setenv("SWITCHBOARD_HOME", str(root))
    monkeypatch.setenv("SWITCHBOARD_CONFIG", str(root / "config.toml"))
    say_how_to_return()
    assert "\n`switchboard` in a shell opens\nthe view again." in capsys.readouterr().out


def test_the_help_says_which_command_reattaches_the_demo() -> None:
    assert "`switchboard` reattaches (`switchboard demo` for the demo)" in TMUX_HINTS


def test_the_handover_attaches_the_demo_then_the_session_it_came_from() -> None:
    from core.apps.demo import handover_command

    shell = handover_command("/tmp/d/tmux.sock", "@3", "/tmp/tmux-1000/default", "$0")
    assert shell == ("env -u TMUX -u TMUX_PANE tmux -S '/tmp/d/tmux.sock' attach-session "
                     "-t '@3'; exec env -u TMUX -u TMUX_PANE tmux -S "
                     "'/tmp/tmux-1000/default' attach-session -t '$0'")


def test_the_handover_runs_in_a_posix_shell_as_written(tmp_path: Path) -> None:
    """The quoted values reach tmux unchanged (`$`, spaces and `;` stay data), and
    neither tmux sees $TMUX, so neither refuses to attach as a nested client."""
    import subprocess

    from core.apps.demo import handover_command

    log = tmp_path / "argv"
    fake = tmp_path / "tmux"
    fake.write_text(f"#!/bin/sh\nprintf '%s|' \"${{TMUX-unset}}\" \"$@\" >> '{log}'\n"
                    f"echo >> '{log}'\n")
    fake.chmod(0o700)
    shell = handover_command("/tmp/a b;$(x)/tmux.sock", "@3", "/tmp/own sock", "$1")
    assert shell is not None
    subprocess.run(["/bin/sh", "-c", shell], check=True, env={"PATH": f"{tmp_path}:/usr/bin:/bin",
                                                              "TMUX": "x,1,0"})
    assert log.read_text().splitlines() == [
        "unset|-S|/tmp/a b;$(x)/tmux.sock|attach-session|-t|@3|",
        "unset|-S|/tmp/own sock|attach-session|-t|$1|"]


@pytest.mark.parametrize("bad", ["/tmp/it's/tmux.sock", "/tmp/back\\slash", "/tmp/new\nline"])
def test_a_value_no_shell_quotes_alike_gets_no_handover(bad: str) -> None:
    from core.apps.demo import handover_command

    assert handover_command(bad, "@3", "/tmp/own", "$1") is None
    assert handover_command("/tmp/d", "@3", bad, "$1") is None
