"""A header read never drops the locks of this process's own connections.

SQLite's POSIX locks belong to the process: a raw open and close of the registry
while a connection of ours has it open drops that connection's shared lock. Then
another process's close takes the exclusive lock, checkpoints and deletes the
-wal and -shm, and our connection stops seeing commits made after it.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from core.config.home import Home
from storage import held_files
from storage.connection import connect
from storage.registry_file import diagnose
from tests.factories import make_engine

WRITER = textwrap.dedent("""
    import sqlite3, sys
    conn = sqlite3.connect(sys.argv[1], isolation_level=None)
    conn.execute("PRAGMA busy_timeout = 5000")
    conn.execute("UPDATE registry_metadata SET committed_at = committed_at + 1")
    conn.close()
""")


def _registry(tmp_path: Path) -> Path:
    engine = make_engine(tmp_path)
    home = Home(root=tmp_path, config_path=tmp_path / "config.toml")
    path = home.registry_path(engine.generation_id)
    engine.conn.close()
    return path


def _committed(conn: object) -> int:
    return int(conn.execute(  # type: ignore[attr-defined]
        "SELECT committed_at FROM registry_metadata").fetchone()[0])


def _write_elsewhere(path: Path) -> None:
    subprocess.run([sys.executable, "-c", WRITER, str(path)], check=True, timeout=30)


def test_our_connection_sees_other_processes_commits_after_a_diagnosis(
        tmp_path: Path) -> None:
    path = _registry(tmp_path)
    ours = connect(path)
    try:
        before = _committed(ours)
        diagnose(path)  # another open of the same file in this process (a reader, a reset)
        _write_elsewhere(path)  # opens and closes its own connection: is it the last?
        _write_elsewhere(path)
        assert _committed(ours) == before + 2
        assert Path(f"{path}-wal").exists()  # no other process thought itself the last
    finally:
        ours.close()


def test_the_header_is_read_raw_only_while_no_connection_holds_the_file(
        tmp_path: Path) -> None:
    path = _registry(tmp_path)
    header = held_files.read_header(path)
    assert header is not None and header.startswith(b"SQLite format 3\x00")
    ours = connect(path)
    assert held_files.held(path)
    assert held_files.read_header(path) is None
    ours.close()
    assert not held_files.held(path)
    assert held_files.read_header(path) == header


def test_without_the_guard_the_raw_read_loses_our_locks(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The failure the guard prevents, shown on this machine (so the first test is not
    passing by luck): with the raw read always done, the WAL goes from under us."""
    monkeypatch.setattr(held_files, "held", lambda path: False)
    path = _registry(tmp_path)
    ours = connect(path)
    try:
        _committed(ours)
        diagnose(path)
        _write_elsewhere(path)
        assert not Path(f"{path}-wal").exists()  # the other process deleted it
    finally:
        ours.close()


def test_a_second_registry_open_in_this_process_keeps_our_locks(tmp_path: Path) -> None:
    """``open_registry`` runs the schema-upgrade check before the diagnosis; that check
    read the header raw, so a second open of the registry in a process that held it
    (a navigator's client and its async reads, the CLI in-process, the soak's driver)
    let another process delete the -wal under the first connection: "database disk
    image is malformed" (seen in the 60-minute soak and in test_hostile_text)."""
    from storage.registry_file import open_registry

    path = _registry(tmp_path)
    meta = diagnose(path)
    expected = {"expected_generation": meta.generation_id,
                "expected_host": meta.local_host_id}
    ours, _ = open_registry(path, **expected)
    try:
        before = _committed(ours)
        second, _ = open_registry(path, **expected)
        second.close()
        _write_elsewhere(path)
        _write_elsewhere(path)
        assert Path(f"{path}-wal").exists()  # no other process thought itself the last
        assert _committed(ours) == before + 2
    finally:
        ours.close()
