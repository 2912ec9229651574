"""`switchboard doctor` on a registry that can be read but not written (issue 37.10).

An immutable registry (``chattr +i`` on the file, or on the ``state/`` folder where a
new generation's pointer is written) reads like a healthy one: SQLite opens the file
read-only without a word, so doctor said "healthy" while every command that changes
anything would fail. (An immutable generation folder already failed the open: SQLite
cannot make the -wal there; kept here so it stays reported.) Here the flag is
really set (the tests run as root, which the flag stops too) and doctor must report
the registry as a problem, naming the file and how to lift the flag.
"""

from __future__ import annotations

import contextlib
import shutil
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.config.home import Home
from navigator.cli import main
from tests.factories import make_engine


@contextlib.contextmanager
def immutable(path: Path) -> Iterator[None]:
    """``chattr +i path`` for the block (lifted after, so the test folder can go)."""
    if shutil.which("chattr") is None:
        pytest.fail("chattr (e2fsprogs) is needed to make a file immutable")
    subprocess.run(["chattr", "+i", str(path)], check=True, capture_output=True)
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True, capture_output=True)


def doctor(home: Path, monkeypatch: pytest.MonkeyPatch,
           capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    monkeypatch.setenv("SWITCHBOARD_HOME", str(home))
    monkeypatch.setenv("SWITCHBOARD_CONFIG", str(home / "config.toml"))
    code = main(["doctor"])
    return code, capsys.readouterr().out.splitlines()


def registry_of(home: Path) -> Path:
    opened = Home(root=home, config_path=home / "config.toml")
    generation = opened.read_current_generation()
    assert generation is not None
    return opened.registry_path(generation)


@pytest.mark.parametrize("target", ["file", "state folder", "generation folder"])
def test_doctor_reports_an_immutable_registry(target: str, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    home = tmp_path / "home"
    make_engine(home).conn.close()
    registry = registry_of(home)
    _code, lines = doctor(home, monkeypatch, capsys)
    assert [line for line in lines if line.startswith("ok    registry: generation ")]

    locked = {"file": registry, "state folder": home / "state",
              "generation folder": registry.parent}[target]
    with immutable(locked):
        if target == "state folder":  # the premise: the pointer's folder takes no file
            with pytest.raises(PermissionError):
                (locked / "current.new").write_text("x", encoding="utf-8")
        else:  # the premise: writes to the registry really fail
            with pytest.raises(sqlite3.OperationalError):
                conn = sqlite3.connect(registry, isolation_level=None)
                try:
                    conn.execute("BEGIN IMMEDIATE")
                    conn.execute("CREATE TABLE doctor_probe (x)")
                    conn.execute("COMMIT")
                finally:
                    conn.close()
        code, lines = doctor(home, monkeypatch, capsys)
    assert code == 1
    [at] = [i for i, line in enumerate(lines) if line.startswith("fail  registry: ")]
    assert lines[-1] == "verdict: problems found (see `do:` lines)"
    if target == "generation folder":
        # SQLite cannot make the -wal beside the file, so the open itself fails (as it
        # did before this check): the line names the file and says to make it writable.
        assert str(registry) in lines[at] and "writable" in lines[at]
        return
    kind = "file" if target == "file" else "folder"
    assert f"the registry {kind} {locked} cannot be written" in lines[at]
    assert "immutable (chattr +i)" in lines[at]
    assert lines[at + 1] == (f"      do: see `lsattr -d {locked}`; `sudo chattr -i {locked}` "
                             "lifts the immutable flag; then run `switchboard doctor` again")
