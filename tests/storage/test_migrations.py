"""A home made by the previous release opens after an upgrade; a newer one is refused.

Each previous release's registry is rebuilt from its recorded DDL
(``tests/fixtures/registry/schema-v1.sql`` to ``schema-v4.sql``,
the text each wrote): a real home with real rows is made by this release, then its
tables are given back their old ``CREATE`` text and version (the tables a later
version added are dropped), so the file is what that
Switchboard left. Opening it upgrades it once, keeps every row, writes a private
backup, and accepts what the later versions added; a file from a newer release is
refused with one line and left byte-identical.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from core.config.home import Home
from core.config.registry import open_current
from core.model.errors import RegistryUnavailable
from storage.migrations import header_version
from storage.schema import SCHEMA_VERSION
from tests.factories import make_engine
from tests.storage.test_registry_file import home_at, registry_of, stamp

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "registry"
V1_SQL = FIXTURES / "schema-v1.sql"
OLD_RELEASES = (1, 2, 3, 4)


def _objects(conn: sqlite3.Connection) -> dict[tuple[str, str], str]:
    return {(r[0], r[1]): r[2] for r in conn.execute(
        "SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL"
        " AND name NOT LIKE 'sqlite_%'")}


def _v1_objects(version: int = 1) -> dict[tuple[str, str], str]:
    memory = sqlite3.connect(":memory:")
    try:
        memory.executescript((FIXTURES / f"schema-v{version}.sql").read_text())
        return _objects(memory)
    finally:
        memory.close()


def _as_previous_release(path: Path, version: int = 1) -> None:
    """Give every table its text of ``version`` and the file that version's numbers."""
    v1 = _v1_objects(version)
    conn = sqlite3.connect(path, isolation_level=None)
    for kind, name in sorted(set(_objects(conn)) - set(v1), key=lambda k: k[0] == "table"):
        conn.execute(f"DROP {kind.upper()} {name}")  # added by a later version
    cookie = conn.execute("PRAGMA schema_version").fetchone()[0]
    conn.execute("PRAGMA writable_schema = ON")
    for (kind, name), sql in v1.items():
        conn.execute("UPDATE sqlite_master SET sql = ? WHERE type = ? AND name = ?",
                     (sql, kind, name))
    conn.execute(f"PRAGMA schema_version = {cookie + 1}")
    conn.execute("PRAGMA writable_schema = OFF")
    conn.close()
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA ignore_check_constraints = ON")  # the old CHECK says the new one
    conn.execute("UPDATE registry_metadata SET schema_version = ?", (version,))
    conn.execute(f"PRAGMA user_version = {version}")
    conn.close()
    conn = sqlite3.connect(path)
    assert _objects(conn) == v1  # exactly what the previous release wrote
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()


@pytest.fixture(params=OLD_RELEASES, ids=lambda v: f"v{v}")
def old_home(request: pytest.FixtureRequest, tmp_path: Path) -> Home:
    root = tmp_path / "home"
    engine = make_engine(root)
    engine.project_enter("50000000-0000-4000-8000-000000000001", "alpha")
    engine.conn.close()
    home = home_at(root)
    _as_previous_release(registry_of(home), request.param)
    return home


@pytest.mark.parametrize("version", OLD_RELEASES)
def test_old_ddl_differs_from_this_release_only_where_the_upgrade_widens(version: int
                                                                         ) -> None:
    """The recorded DDL of each old release and this release's differ in exactly the
    tables its upgrade steps rewrite or add, so the upgrade covers everything that
    changed."""
    from storage.migrations import ADDED_TABLES, WIDENED_TABLES, _owned_by, _target_schema

    old, now = _v1_objects(version), _target_schema()
    added = tuple(t for step in range(version, SCHEMA_VERSION)
                  for t in ADDED_TABLES.get(step, ()))
    assert set(old) == set(now) - _owned_by(added)
    now = {key: sql for key, sql in now.items() if key in old}
    changed = sorted(name for key, name in ((k, k[1]) for k in now) if old[key] != now[key])
    assert changed == sorted({table for step in range(version, SCHEMA_VERSION)
                              for table in WIDENED_TABLES[step]})


def test_a_previous_release_home_opens_after_the_upgrade(old_home: Home) -> None:
    path = registry_of(old_home)
    before = sqlite3.connect(path)
    frames_before = before.execute("SELECT frame_id, title FROM frames ORDER BY 1").fetchall()
    before.close()
    old = header_version(path)
    assert old in OLD_RELEASES and frames_before

    opened = open_current(old_home)
    try:
        assert opened.conn.execute("SELECT schema_version FROM registry_metadata"
                                   ).fetchone()[0] == SCHEMA_VERSION
        assert [tuple(r) for r in opened.conn.execute(
            "SELECT frame_id, title FROM frames ORDER BY 1")] == frames_before
        kinds = opened.conn.execute("SELECT sql FROM sqlite_master WHERE name = 'recoveries'"
                                    ).fetchone()[0]
        assert "'provider_dialog'" in kinds and "'usage_limit'" in kinds  # v2's, v3's
        assert opened.conn.execute("SELECT COUNT(*) FROM extra_panes").fetchone()[0] == 0
    finally:
        opened.conn.close()
    assert header_version(path) == SCHEMA_VERSION
    backup = path.with_name(f"{path.name}.v{old}.bak")
    assert backup.exists() and backup.stat().st_mode & 0o077 == 0
    assert header_version(backup) == old
    again = open_current(old_home)  # a second open changes nothing more
    again.conn.close()
    assert header_version(path) == SCHEMA_VERSION


def test_a_newer_release_home_is_refused_unchanged(tmp_path: Path) -> None:
    root = tmp_path / "home"
    make_engine(root).conn.close()
    home = home_at(root)
    path = registry_of(home)
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.commit()
    conn.close()
    before = stamp(path)
    with pytest.raises(RegistryUnavailable) as caught:
        open_current(home)
    assert f"newer than this Switchboard (v{SCHEMA_VERSION}); upgrade Switchboard" in \
        caught.value.message
    assert "\n" not in caught.value.message
    assert stamp(path) == before
