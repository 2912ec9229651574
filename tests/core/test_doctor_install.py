"""`switchboard doctor` on a fresh install: its own version first, and a missing tmux named
with the command that installs it here, before and after `switchboard init`."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

import pytest

from navigator.cli import main
from tests.factories import make_engine


def _path_with(tmp_path: Path, *tools: str) -> str:
    folder = tmp_path / "bin"
    folder.mkdir(exist_ok=True)
    for tool in tools:
        (folder / tool).write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
        (folder / tool).chmod(0o755)
    return str(folder)


@pytest.mark.parametrize("initialized", [False, True], ids=["before-init", "after-init"])
def test_missing_tmux_names_the_install_command(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        initialized: bool) -> None:
    home = tmp_path / "home"
    if initialized:
        make_engine(home).conn.close()
    monkeypatch.setenv("SWITCHBOARD_HOME", str(home))
    monkeypatch.setenv("SWITCHBOARD_CONFIG", str(home / "config.toml"))
    monkeypatch.setenv("PATH", _path_with(tmp_path, "apt-get"))  # no tmux, apt present
    code = main(["doctor"])
    lines = capsys.readouterr().out.splitlines()
    assert code == 1
    version = importlib.metadata.version("switchboard")
    assert lines[0].startswith(f"ok    switchboard: {version} (Python ")
    at = lines.index("fail  tmux: tmux is not on PATH; Switchboard runs every view in tmux and "
                     "needs nothing else besides Python")
    assert lines[at + 1] == ("      do: install tmux 3.2 or newer with `sudo apt-get install "
                             "tmux`, then run `switchboard doctor` again")


def test_missing_tmux_without_a_known_package_manager(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("SWITCHBOARD_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PATH", _path_with(tmp_path))
    assert main(["doctor"]) == 1
    out = capsys.readouterr().out
    assert "do: install tmux 3.2 or newer with your package manager (e.g. apt, dnf, pacman, " \
           "brew)" in out
