"""`switchboard --version`: the package's version and each provider CLI against the window.

Real executables on a PATH made here stand in for the CLIs (each prints its
`--version` line as the real one does); a CLI that is absent is reported, not
an error. The command must stay light: no Textual, engine, tmux or storage.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

from core.install.about import package_version
from core.model.enums import Provider
from core.providers.window import TESTED, dotted

DRIVER = """
import sys
from navigator.cli import main
code = main(["--version"])
heavy = sorted(name for name in sys.modules
               if name.split(".")[0] in ("textual", "libtmux", "storage")
               or name.startswith(("core.engine", "core.tmux")))
print("loaded:", " ".join(heavy) or "-")
sys.exit(code)
"""


def _fake_cli(folder: Path, name: str, line: str) -> Path:
    path = folder / name
    path.write_text(f"#!/bin/sh\necho '{line}'\n", encoding="utf-8")
    path.chmod(0o755)
    return path


def _version(tmp_path: Path, bin_dir: Path) -> tuple[int, list[str]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SWITCHBOARD_")}
    env.update(PATH=os.pathsep.join([str(bin_dir), "/usr/bin", "/bin"]),
               SWITCHBOARD_HOME=str(tmp_path / "home"))  # no config: the default commands
    done = subprocess.run([sys.executable, "-c", DRIVER], env=env, capture_output=True,
                          text=True, timeout=60)
    assert not done.stderr, done.stderr
    return done.returncode, done.stdout.splitlines()


def test_version_reports_the_package_and_where_each_cli_stands(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    newest = TESTED[Provider.CLAUDE].newest
    claude = _fake_cli(bin_dir, "claude", f"{dotted(newest)} (Claude Code)")
    code, lines = _version(tmp_path, bin_dir)
    assert code == 0
    package = importlib.metadata.version("switchboard")
    assert lines[0] == f"switchboard {package} (Python {sys.version.split()[0]})"
    # Names padded to the longest provider's ("opencode"); the two newer providers are
    # off in a default config and not probed.
    assert lines[1:] == [f"claude    {dotted(newest)} (tested)  {claude}",
                         "codex     not found",
                         "gemini    disabled in the config (not probed)",
                         "opencode  disabled in the config (not probed)",
                         "loaded: -"]


def test_version_says_when_a_cli_is_outside_the_tested_window(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    window = TESTED[Provider.CODEX]
    newer = (window.newest[0], window.newest[1] + 1, 0)
    codex = _fake_cli(bin_dir, "codex", f"codex-cli {dotted(newer)}")
    _fake_cli(bin_dir, "claude", "this is not a version line")
    code, lines = _version(tmp_path, bin_dir)
    assert code == 0
    assert lines[2] == f"codex     {window.describe(newer)}  {codex}"
    assert "newer than the tested window" in lines[2]
    assert lines[1].startswith("claude    ") and "expected a line like" in lines[1]


def test_the_version_is_semver_and_comes_from_pyproject() -> None:
    """One number: pyproject's, read back from the installed metadata (make setup
    reinstalls when pyproject.toml changes), and named in CHANGELOG.md."""
    root = Path(__file__).resolve().parents[2]
    declared = tomllib.loads((root / "pyproject.toml").read_text("utf-8"))["project"]["version"]
    assert re.fullmatch(r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)", declared)
    assert package_version() == declared
    assert f"## [{declared}] - " in (root / "CHANGELOG.md").read_text("utf-8")
