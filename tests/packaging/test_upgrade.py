"""Upgrading keeps a person's home: one made by the previous release's own code opens in
this one, and the previous release refuses it afterwards in one line, changing nothing.

The previous release is its real code, taken from git (``git archive``) and run
from that folder: the home is what 0.1.0 itself wrote, not a rebuilt file.
``tests/storage/test_migrations.py`` covers the upgrade step by step on a file
rebuilt from the recorded v1 DDL; this is the release-to-release check
CHANGELOG.md promises.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from storage.schema import SCHEMA_VERSION

pytestmark = pytest.mark.packaging

ROOT = Path(__file__).resolve().parents[2]
PREVIOUS_RELEASE = "342128a"
"""0.1.0 (CHANGELOG.md): the last commit before 0.2.0's changes, registry schema 1."""

MAKE_HOME = """
import sys
from pathlib import Path

import core
from tests.factories import make_engine

assert Path(core.__file__).is_relative_to(Path.cwd()), core.__file__  # the old code runs
engine = make_engine(Path(sys.argv[1]))
entered = engine.project_enter("20000000-0000-4000-8000-000000000001", "alpha")
engine.frame_push("20000000-0000-4000-8000-000000000002", entered.frame_id,
                  "Write the parser", "a brief")
print(engine.conn.execute("PRAGMA user_version").fetchone()[0])
engine.conn.close()
"""


def _previous_release(into: Path) -> Path:
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar",
                              PREVIOUS_RELEASE], capture_output=True, timeout=120)
    if archive.returncode != 0:
        pytest.fail(f"cannot read release {PREVIOUS_RELEASE} from git "
                    f"({archive.stderr.decode(errors='replace').strip()}); this test needs "
                    "the repository's history (`git fetch --unshallow`)")
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(into, filter="data")
    return into


def _env(home: Path, code: Path | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("TMUX", "TMUX_PANE", "PYTHONPATH") and not k.startswith("SWITCHBOARD_")}
    env.update(SWITCHBOARD_HOME=str(home), SWITCHBOARD_CONFIG=str(home / "config.toml"))
    if code is not None:
        env["PYTHONPATH"] = str(code)
    return env


def _files(home: Path) -> dict[str, bytes]:
    return {path.relative_to(home).as_posix(): path.read_bytes()
            for path in sorted(home.rglob("*")) if path.is_file()}


def test_a_home_made_by_the_previous_release_opens_after_upgrade_and_not_back(
        tmp_path: Path) -> None:
    old = _previous_release(tmp_path / "previous")
    home = tmp_path / "home"
    made = subprocess.run([sys.executable, "-c", MAKE_HOME, str(home)], cwd=old,
                          env=_env(home, old), capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made.stderr
    assert made.stdout.strip() == "1"  # the previous release wrote schema 1

    def new(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "navigator.cli", *args], cwd=ROOT,
                              env=_env(home, None), capture_output=True, text=True, timeout=120)

    listed = new("frame", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert sorted((f["role"], f["title"]) for f in json.loads(listed.stdout)) == [
        ("task", "Write the parser"), ("workspace", "alpha")]
    (registry,) = home.glob("state/*/registry.sqlite3")
    assert int.from_bytes(registry.read_bytes()[60:64], "big") == SCHEMA_VERSION
    backups = [p for p in registry.parent.iterdir() if p.name.endswith(".v1.bak")]
    assert len(backups) == 1 and backups[0].stat().st_mode & 0o077 == 0  # private
    doctor = new("doctor")
    assert any(line.startswith("ok    registry: generation ")
               for line in doctor.stdout.splitlines()), doctor.stdout

    before = _files(home)
    refused = subprocess.run([sys.executable, "-m", "navigator.cli", "frame", "list"], cwd=old,
                             env=_env(home, old), capture_output=True, text=True, timeout=120)
    assert refused.returncode != 0
    assert refused.stdout == "" and len(refused.stderr.splitlines()) == 1, refused.stderr
    assert _files(home) == before  # refused without changing a byte
