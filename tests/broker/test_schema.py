"""A fresh broker file has exactly the spec's tables, columns, indexes, keys and identity.

The expected values are written out here from the spec text, independently of
``storage.broker_schema``, so the DDL and the recorded shape are both checked.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from core.broker.broker import open_broker
from storage.broker_schema import APPLICATION_ID, KNOWN_SHAPES, LEDGER_VERSION
from storage.broker_store import diagnose, diagnose_connection

# PRAGMA table_info rows without cid: (name, type, notnull, dflt_value, pk)
TABLE_INFO = {
    "fleets": [
        ("fleet_id", "INTEGER", 0, None, 1),
        ("name", "TEXT", 0, None, 0),
        ("created_at", "TEXT", 1, None, 0),
        ("deleted_at", "TEXT", 0, None, 0),
        ("director_member_id", "INTEGER", 0, None, 0),
    ],
    "members": [
        ("member_id", "INTEGER", 1, None, 1),
        ("fleet_id", "INTEGER", 1, None, 0),
        ("name", "TEXT", 1, None, 0),
        ("description", "TEXT", 1, None, 0),
        ("status", "TEXT", 1, None, 0),
        ("registered_at", "TEXT", 1, None, 0),
        ("deregistered_at", "TEXT", 0, None, 0),
    ],
    "member_placements": [
        ("member_id", "INTEGER", 0, None, 1),
        ("mux_session", "TEXT", 1, None, 0),
        ("mux_window_id", "TEXT", 1, None, 0),
        ("mux_pane_id", "TEXT", 0, None, 0),
        ("backend", "TEXT", 1, "'tmux'", 0),
        ("coding_agent", "TEXT", 1, None, 0),
        ("created_at", "TEXT", 1, None, 0),
    ],
    "messages": [
        ("message_id", "INTEGER", 1, None, 1),
        ("from_member_id", "INTEGER", 1, None, 0),
        ("to_member_id", "INTEGER", 1, None, 0),
        ("created_at", "TEXT", 1, None, 0),
        ("status_state", "TEXT", 1, None, 0),
        ("status_timestamp", "TEXT", 1, None, 0),
        ("text", "TEXT", 1, None, 0),
        ("notified_at", "TEXT", 0, None, 0),
    ],
    "asset_installs": [
        ("coding_agent", "TEXT", 1, None, 1),
        ("path", "TEXT", 1, None, 2),
        ("cafleet_version", "TEXT", 1, None, 0),
        ("installed_at", "TEXT", 1, None, 0),
    ],
}

# PRAGMA index_list rows without seq: (name, unique, origin, partial), plus index_info columns
INDEXES = {
    "fleets": set(),
    "members": {("idx_members_fleet_status", 0, "c", 0, ("fleet_id", "status"))},
    "member_placements": set(),
    "messages": {
        ("idx_messages_to_status", 0, "c", 0, ("to_member_id", "status_timestamp")),
        ("idx_messages_from_status", 0, "c", 0, ("from_member_id", "status_timestamp")),
    },
    "asset_installs": {
        ("sqlite_autoindex_asset_installs_1", 1, "pk", 0, ("coding_agent", "path")),
    },
}

# PRAGMA foreign_key_list rows: (table, from, to, on_update, on_delete, match)
FOREIGN_KEYS = {
    "fleets": {("members", "director_member_id", "member_id", "NO ACTION", "RESTRICT", "NONE")},
    "members": {("fleets", "fleet_id", "fleet_id", "NO ACTION", "RESTRICT", "NONE")},
    "member_placements": {("members", "member_id", "member_id", "NO ACTION", "CASCADE", "NONE")},
    "messages": {
        ("members", "from_member_id", "member_id", "NO ACTION", "RESTRICT", "NONE"),
        ("members", "to_member_id", "member_id", "NO ACTION", "RESTRICT", "NONE"),
    },
    "asset_installs": set(),
}

SQLITE_MASTER = {
    ("table", "fleets", "fleets"),
    ("table", "sqlite_sequence", "sqlite_sequence"),  # AUTOINCREMENT's own bookkeeping
    ("table", "members", "members"),
    ("index", "idx_members_fleet_status", "members"),
    ("table", "member_placements", "member_placements"),
    ("table", "messages", "messages"),
    ("index", "idx_messages_to_status", "messages"),
    ("index", "idx_messages_from_status", "messages"),
    ("table", "asset_installs", "asset_installs"),
    ("index", "sqlite_autoindex_asset_installs_1", "asset_installs"),
}


def _fresh(path: Path) -> sqlite3.Connection:
    open_broker(path).close()
    return sqlite3.connect(path)


def test_fresh_file_sqlite_master_is_exactly_the_spec(broker_path: Path) -> None:
    conn = _fresh(broker_path)
    rows = set(conn.execute("SELECT type, name, tbl_name FROM sqlite_master"))
    assert rows == SQLITE_MASTER  # no triggers, views or ledger table


def test_fresh_file_identity_and_ledger(broker_path: Path) -> None:
    conn = _fresh(broker_path)
    assert conn.execute("PRAGMA application_id").fetchone()[0] == 1128351288 == APPLICATION_ID
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 1 == LEDGER_VERSION
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_fresh_file_table_info(broker_path: Path) -> None:
    conn = _fresh(broker_path)
    for table, expected in TABLE_INFO.items():
        rows = [tuple(r[1:]) for r in conn.execute(f"PRAGMA table_info({table})")]
        assert rows == expected, table


def test_fresh_file_index_list(broker_path: Path) -> None:
    conn = _fresh(broker_path)
    for table, expected in INDEXES.items():
        found = set()
        for r in conn.execute(f"PRAGMA index_list({table})"):
            columns = tuple(c[2] for c in conn.execute(f"PRAGMA index_info({r[1]!r})"))
            found.add((r[1], r[2], r[3], r[4], columns))
        assert found == expected, table


def test_fresh_file_foreign_key_list(broker_path: Path) -> None:
    conn = _fresh(broker_path)
    for table, expected in FOREIGN_KEYS.items():
        rows = {tuple(r[2:]) for r in conn.execute(f"PRAGMA foreign_key_list({table})")}
        assert rows == expected, table


def test_recorded_shape_matches_the_ddl(broker_path: Path) -> None:
    """The data description used by diagnosis equals what the DDL produces."""
    conn = _fresh(broker_path)
    assert diagnose_connection(conn).verdict == "current"
    assert diagnose(broker_path).verdict == "current"
    shape = {t.name: t for t in KNOWN_SHAPES[1]}
    for table, expected in TABLE_INFO.items():
        assert [(c.name, c.type, int(c.notnull), c.default, c.pk)
                for c in shape[table].columns] == expected


def test_foreign_keys_are_enforced_on_every_connection(broker_path: Path) -> None:
    with open_broker(broker_path) as store:
        assert store.conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
        assert store.conn.execute("PRAGMA busy_timeout").fetchone()[0] == 5000
        try:
            store.conn.execute(
                "INSERT INTO messages (from_member_id, to_member_id, created_at, status_state,"
                " status_timestamp, text) VALUES (41, 42, 'x', 'input_required', 'x', 't')")
        except sqlite3.IntegrityError as exc:
            assert "FOREIGN KEY" in str(exc)
        else:
            raise AssertionError("a message to a missing member was accepted")
