"""`switchboard doctor` on a fresh install: its own version first, and a missing tmux named
with the command that installs it here, before and after `switchboard init`."""

from __future__ import annotations

import importlib.metadata
import os
from pathlib import Path

import pytest

from core.apps import doctor
from navigator.cli import main
from tests.factories import make_engine

SUDO = "" if os.geteuid() == 0 else "sudo "
"""What the hint puts before a system package manager here (root needs no sudo)."""


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
    assert lines[at + 1] == (f"      do: install tmux 3.2 or newer with `{SUDO}apt-get install "
                             "tmux`, then run `switchboard doctor` again")


def test_missing_tmux_without_a_known_package_manager(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("SWITCHBOARD_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PATH", _path_with(tmp_path))
    monkeypatch.setattr(doctor, "_SYSTEM_DIRS", ())  # nothing on disk either
    monkeypatch.setattr(doctor, "_os_ids", lambda: ["plan9"])  # and no system it knows
    assert main(["doctor"]) == 1
    out = capsys.readouterr().out
    assert "do: install tmux 3.2 or newer with this system's package manager (Debian/Ubuntu: " \
           "`sudo apt-get install tmux`, Fedora: `sudo dnf install tmux`, Arch: `sudo pacman " \
           "-S tmux`, macOS: `brew install tmux`)" in out
    assert "e.g." not in out


def test_the_install_command_is_this_machines(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """The manager on PATH, else in the system folders a short PATH leaves out, else the
    one os-release names; sudo only where it is needed (issue 40 item 8)."""
    monkeypatch.setenv("PATH", _path_with(tmp_path))  # no manager on PATH
    system = tmp_path / "system"
    system.mkdir()
    (system / "dnf").write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
    (system / "dnf").chmod(0o755)
    monkeypatch.setattr(doctor, "_SYSTEM_DIRS", (str(system),))
    assert doctor.tmux_install_command() == f"{SUDO}dnf install tmux"
    monkeypatch.setattr(doctor, "_SYSTEM_DIRS", ())
    monkeypatch.setattr(doctor, "_os_ids", lambda: ["pop", "ubuntu", "debian"])
    assert doctor.tmux_install_command() == f"{SUDO}apt-get install tmux"
    monkeypatch.setattr(doctor, "_os_ids", lambda: ["macos"])
    assert doctor.tmux_install_command() == "brew install tmux"  # never as root
    monkeypatch.setattr(doctor, "_os_ids", lambda: [])
    assert doctor.tmux_install_command() is None
    monkeypatch.setattr(doctor.os, "geteuid", lambda: 1000)  # a person, not root
    monkeypatch.setenv("PATH", _path_with(tmp_path, "pacman"))
    assert doctor.tmux_install_command() == "sudo pacman -S tmux"
    monkeypatch.setattr(doctor.os, "geteuid", lambda: 0)
    assert doctor.tmux_install_command() == "pacman -S tmux"  # root needs no sudo
