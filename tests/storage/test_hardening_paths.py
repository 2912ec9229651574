"""Paths with URI-special characters reach exactly the file they name.

SQLite reads ``file:`` URIs by RFC 3986 rules, so an unescaped ``#``, ``?`` or
``%XX`` in a path silently opened (and created) a different file. These tests
use real files in folders whose names carry those characters.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

from core.broker.broker import Broker, open_broker
from core.broker.delivery import PaneLocks
from navigator.cli import main
from storage.broker_store import open_store
from storage.uri import canonical, sqlite_uri

AWKWARD = ["team#1.sqlite3", "b%41", "x?y", "sp ace", "é.db", "a&mode=ro"]


@pytest.mark.parametrize("name", AWKWARD)
def test_sqlite_uri_opens_exactly_the_named_file(tmp_path: Path, name: str) -> None:
    target = tmp_path / name
    conn = sqlite3.connect(sqlite_uri(target, mode="rwc"), uri=True)
    conn.execute("CREATE TABLE marker (x)")
    conn.close()
    assert sorted(os.listdir(tmp_path)) == [name]
    ro = sqlite3.connect(sqlite_uri(target, mode="ro"), uri=True)
    try:
        assert ro.execute("SELECT name FROM sqlite_master").fetchall() == [("marker",)]
    finally:
        ro.close()


def test_sqlite_uri_is_absolute_and_keeps_query_separate(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    uri = sqlite_uri("x?y#z%41", mode="ro", immutable=1)
    assert uri.startswith("file://" + str(tmp_path))
    assert uri.endswith("/x%3Fy%23z%2541?mode=ro&immutable=1")


@pytest.mark.parametrize("name", ["team#1.sqlite3", "b%41", "x?y"])
def test_broker_file_is_written_where_it_was_named(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    store = open_broker(path)
    store.close()
    assert sorted(os.listdir(tmp_path)) == [name]  # no `team`, `bA` or `x` beside it
    again = open_broker(path, create=False, readonly=True)  # and it diagnoses as current
    again.close()


def test_two_spellings_of_one_broker_share_the_pane_locks(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "alias").symlink_to(real)
    direct = open_store(real / "broker.sqlite3")
    via_link = open_store(tmp_path / "alias" / "sub" / ".." / "broker.sqlite3")
    try:
        assert direct.path == via_link.path == canonical(real / "broker.sqlite3")
        assert PaneLocks.beside(direct.path).lock_dir == PaneLocks.beside(via_link.path).lock_dir
        assert Broker(via_link).locks.lock_dir == real / "broker.sqlite3.locks"
    finally:
        direct.close()
        via_link.close()


@pytest.mark.parametrize("folder", ["home#1", "home?x", "h%41me"])
def test_a_home_with_uri_characters_initializes_and_opens(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, folder: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    home = tmp_path / folder
    monkeypatch.setenv("SWITCHBOARD_HOME", str(home))
    monkeypatch.setenv("SWITCHBOARD_CONFIG", str(home / "config.toml"))
    monkeypatch.delenv("TMUX", raising=False)
    assert main(["init", "--private-tmux"]) == 0
    capsys.readouterr()
    assert main(["state", "host", "--json"]) == 0, capsys.readouterr().err
    state = json.loads(capsys.readouterr().out)
    assert state["generationId"] == (home / "state" / "current").read_text().strip()
    assert sorted(p.name for p in tmp_path.iterdir()) == [folder]  # nothing beside it
