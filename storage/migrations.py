"""Registry schema upgrades, in place, at the first open by a newer Switchboard.

A person who upgrades keeps their home: the first open of a registry whose
``user_version`` is older than :data:`storage.schema.SCHEMA_VERSION` upgrades it
once, after a private backup copy (``registry-....sqlite.v1.bak`` beside it). A
newer file is still refused unchanged by :mod:`storage.registry_file`.

v1 -> v2 only widens closed value sets (the recovery kind ``provider_dialog``)
and the metadata's version check; v2 -> v3 the same way (the activity reason and
recovery kind ``usage_limit``). Every existing row already satisfies a wider
CHECK, so the on-disk rows need no rewrite: SQLite documents changing a
table's stored ``CREATE TABLE`` text through ``writable_schema`` for exactly
such constraint-only changes. v3 -> v4 adds a table (``extra_panes``), created
empty from the current schema's text in the same transaction; v4 -> v5 widens the
provider CHECKs again (``gemini``, ``opencode``). The upgrade
refuses (file unchanged) unless the old file's tables, columns, indexes and
triggers are the ones the new schema has (less what it adds), so it can never
paper over a file it does not understand.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

from core.model.errors import RegistryUnavailable
from core.model.files import create_private_file
from storage.schema import SCHEMA_VERSION, ddl
from storage.uri import sqlite_uri

WIDENED_TABLES: dict[int, tuple[str, ...]] = {
    1: ("registry_metadata", "recoveries"),
    2: ("registry_metadata", "provider_sessions", "recoveries"),
    3: ("registry_metadata",),
    4: ("registry_metadata", "frames", "launch_intents", "provider_sessions", "surfaces"),
}
"""Per source version: the tables whose CREATE text the next version changes."""
ADDED_TABLES: dict[int, tuple[str, ...]] = {
    3: ("extra_panes",),
}
"""Per source version: the tables (with their indexes) the next version adds, empty."""


def header_version(path: Path) -> int | None:
    """``PRAGMA user_version`` from the file header, without SQLite opening the file;
    None while this process holds the file through SQLite (``held_files``).

    A raw ``open()``/``close()`` of a file this process has a SQLite connection to
    drops that connection's POSIX locks: another process then checkpoints and deletes
    the -wal under it and it reads "database disk image is malformed". Every registry
    open ran this read, so a second open in a process that held the registry (a
    navigator's client and its async reads, the CLI run in-process, the soak's
    driver) broke the first connection. A held file was upgraded when it was opened.
    """
    from storage import held_files

    header = held_files.read_header(path)
    if header is None:
        return None
    return int.from_bytes(header[60:64], "big", signed=True) if len(header) == 100 else 0


def upgrade_if_older(path: Path) -> int | None:
    """Upgrade ``path`` to the current schema if it is an older known one.

    Returns the version it was upgraded from, or None when nothing was done (the
    file is current, newer, unknown or missing: the normal diagnosis then
    decides). Raises RegistryUnavailable, the file unchanged, when an old file
    does not have the shape its version promises.
    """
    if not path.exists():
        return None
    old = header_version(path)
    if old is None or old >= SCHEMA_VERSION or old not in WIDENED_TABLES:
        return None
    _backup(path, old)
    # Every step only rewrites CREATE text to the current schema's, so the steps from
    # ``old`` collapse into one: the union of their tables, then the current version.
    widened = tuple(dict.fromkeys(table for version in range(old, SCHEMA_VERSION)
                                  for table in WIDENED_TABLES[version]))
    added = tuple(table for version in range(old, SCHEMA_VERSION)
                  for table in ADDED_TABLES.get(version, ()))
    _widen(path, old, widened, added)
    return old


def _backup(path: Path, version: int) -> Path:
    """A consistent private copy (SQLite's backup API reads through its own locks)."""
    target = path.with_name(f"{path.name}.v{version}.bak")
    if target.exists():
        return target
    tmp = target.with_name(target.name + ".tmp")
    tmp.unlink(missing_ok=True)
    create_private_file(tmp)
    source = sqlite3.connect(sqlite_uri(path, mode="ro"), uri=True)
    try:
        copy = sqlite3.connect(tmp)
        try:
            source.backup(copy)
        finally:
            copy.close()
    finally:
        source.close()
    shutil.move(tmp, target)
    return target


def _target_schema() -> dict[tuple[str, str], str]:
    """(type, name) -> CREATE text of every object the current schema makes."""
    return _target()[0]


def _target() -> tuple[dict[tuple[str, str], str], dict[str, list[str]]]:
    """The current schema's objects and every table's columns, from one build of it."""
    memory = sqlite3.connect(":memory:")
    try:
        memory.executescript(ddl())
        objects = _objects(memory)
        columns = {name: _columns(memory, name) for kind, name in objects if kind == "table"}
        return objects, columns
    finally:
        memory.close()


def _owned_by(tables: tuple[str, ...]) -> set[tuple[str, str]]:
    """(type, name) of every object of the current schema that belongs to ``tables``."""
    if not tables:
        return set()
    memory = sqlite3.connect(":memory:")
    try:
        memory.executescript(ddl())
        marks = ", ".join("?" for _ in tables)
        return {(row[0], row[1]) for row in memory.execute(
            f"SELECT type, name FROM sqlite_master WHERE sql IS NOT NULL AND tbl_name IN"
            f" ({marks})", tables)}
    finally:
        memory.close()


def _objects(conn: sqlite3.Connection) -> dict[tuple[str, str], str]:
    return {(row[0], row[1]): row[2] for row in conn.execute(
        "SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL"
        " AND name NOT LIKE 'sqlite_%'")}


def _columns(conn: sqlite3.Connection, table: str) -> list[str]:
    return [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]


def _widen(path: Path, version: int, widened: tuple[str, ...],
           added: tuple[str, ...] = ()) -> None:
    """Rewrite the CREATE text of the widened tables, create the added ones, then record
    the current version."""
    target, target_columns = _target()
    new_objects = _owned_by(added)
    expected = set(target) - new_objects
    conn = sqlite3.connect(sqlite_uri(path, mode="rw"), uri=True, isolation_level=None)
    try:
        found = _objects(conn)
        if set(found) != expected:
            missing = sorted(name for _, name in expected - set(found))
            extra = sorted(name for _, name in set(found) - expected)
            raise RegistryUnavailable(
                f"{path} does not have the shape of registry schema v{version} (missing "
                f"{missing or 'nothing'}, unexpected {extra or 'nothing'}); it was left "
                "unchanged")
        for table in widened:
            if _columns(conn, table) != target_columns[table]:
                raise RegistryUnavailable(
                    f"{path}: table {table} does not have the columns of schema "
                    f"v{version}; it was left unchanged")
        conn.execute("BEGIN IMMEDIATE")
        try:
            cookie = conn.execute("PRAGMA schema_version").fetchone()[0]
            conn.execute("PRAGMA writable_schema = ON")
            for table in widened:
                conn.execute("UPDATE sqlite_master SET sql = ? WHERE type = 'table' AND name = ?",
                             (target[("table", table)], table))
            conn.execute(f"PRAGMA schema_version = {cookie + 1}")
            conn.execute("PRAGMA writable_schema = OFF")
            # Tables first, then their indexes: the current schema's own text.
            for key in sorted(new_objects, key=lambda k: k[0] != "table"):
                conn.execute(target[key])
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    finally:
        conn.close()
    # A fresh connection reads the widened schema; the version moves in one commit.
    conn = sqlite3.connect(sqlite_uri(path, mode="rw"), uri=True, isolation_level=None)
    try:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("UPDATE registry_metadata SET schema_version = ?", (SCHEMA_VERSION,))
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        conn.execute("COMMIT")
        problem = conn.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        conn.close()
    if problem != "ok":
        raise RegistryUnavailable(f"{path} failed its integrity check after the upgrade to "
                                  f"v{SCHEMA_VERSION} ({problem}); restore {path.name}.v"
                                  f"{version}.bak")

