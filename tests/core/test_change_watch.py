"""ChangeWatch: the kernel says when a watched registry file is written, and only then."""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

import pytest

from core.platform.file_watch import ChangeWatch

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify")


def _watch(files: list[Path]) -> ChangeWatch:
    watch = ChangeWatch.open(str(f) for f in files)
    assert watch is not None
    return watch


def test_a_write_to_a_watched_file_wakes_and_others_do_not(tmp_path: Path) -> None:
    registry = tmp_path / "registry.sqlite3"
    registry.write_bytes(b"")
    watch = _watch([registry, tmp_path / "registry.sqlite3-wal"])
    try:
        assert not watch.drain()  # nothing happened yet
        (tmp_path / "unrelated.log").write_text("noise")
        (tmp_path / "registry.sqlite3-shm").write_bytes(b"x")  # mmap'd in SQLite: not watched
        assert not watch.drain()
        with registry.open("ab") as handle:
            handle.write(b"commit")
        assert watch.drain()
        assert not watch.drain()  # drained: quiet again
    finally:
        watch.close()


def test_a_sqlite_commit_in_wal_mode_wakes_a_watch_on_its_files(tmp_path: Path) -> None:
    path = tmp_path / "registry.sqlite3"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("CREATE TABLE t (x)")
    watch = _watch([path, Path(f"{path}-wal")])
    try:
        watch.drain()
        conn.execute("INSERT INTO t VALUES (1)")
        assert watch.drain()
    finally:
        watch.close()
        conn.close()


def test_a_file_created_later_in_a_watched_folder_counts(tmp_path: Path) -> None:
    wal = tmp_path / "broker.sqlite3-wal"
    watch = _watch([tmp_path / "broker.sqlite3", wal])
    try:
        wal.write_bytes(b"first frame")
        assert watch.drain()
    finally:
        watch.close()


def test_a_missing_folder_means_no_watch(tmp_path: Path) -> None:
    assert ChangeWatch.open([str(tmp_path / "gone" / "registry.sqlite3")]) is None
