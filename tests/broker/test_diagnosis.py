"""Format diagnosis runs before any write; refused files stay byte-identical."""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from core.broker.broker import Broker, BrokerUnavailable, PlacementSpec, open_broker
from navigator.cli import main
from storage.broker_schema import V1_DDL
from storage.broker_store import Verdict, diagnose


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _plain_db(path: Path, *statements: str) -> None:
    """A rollback-journal SQLite file built by raw statements (closed cleanly)."""
    conn = sqlite3.connect(path, isolation_level=None)
    for statement in statements:
        conn.execute(statement)
    conn.close()


def _v1(path: Path, *extra: str, ddl: tuple[str, ...] = V1_DDL, app_id: int = 1128351288,
        ledger: int = 1) -> None:
    _plain_db(path, *ddl, *extra, f"PRAGMA application_id = {app_id}",
              f"PRAGMA user_version = {ledger}")


def foreign_app(path: Path) -> None:
    _plain_db(path, "CREATE TABLE notes (x)", "PRAGMA application_id = 42")


def newer_ledger(path: Path) -> None:
    # The newer file also differs in shape: the newer-version verdict must come first.
    _v1(path, "DROP INDEX idx_messages_to_status", "ALTER TABLE fleets ADD COLUMN colour TEXT",
        ledger=2)


def missing_column(path: Path) -> None:
    ddl = tuple(s.replace(",\n    notified_at TEXT", "") for s in V1_DDL)
    assert ddl != V1_DDL
    _v1(path, ddl=ddl)


def missing_index(path: Path) -> None:
    _v1(path, "DROP INDEX idx_messages_to_status")


def missing_named_index(path: Path) -> None:
    _v1(path, "DROP INDEX idx_members_fleet_status")


def wrong_on_delete(path: Path) -> None:
    ddl = tuple(s.replace("ON DELETE CASCADE", "ON DELETE SET NULL") for s in V1_DDL)
    _v1(path, ddl=ddl)


def missing_foreign_key(path: Path) -> None:
    ddl = tuple(s.replace(
        "to_member_id INTEGER NOT NULL REFERENCES members(member_id) ON DELETE RESTRICT",
        "to_member_id INTEGER NOT NULL") for s in V1_DDL)
    _v1(path, ddl=ddl)


def wrong_type(path: Path) -> None:
    ddl = tuple(s.replace("notified_at TEXT", "notified_at INTEGER") for s in V1_DDL)
    _v1(path, ddl=ddl)


def missing_table(path: Path) -> None:
    _v1(path, ddl=V1_DDL[:-1])


def extra_column(path: Path) -> None:
    _v1(path, "ALTER TABLE messages ADD COLUMN priority INTEGER")


def identity_without_ledger(path: Path) -> None:
    _v1(path, ledger=0)


def unidentified_populated(path: Path) -> None:
    _plain_db(path, "CREATE TABLE notes (x)", "INSERT INTO notes VALUES (1)")


def ledger_without_identity(path: Path) -> None:
    _plain_db(path, "PRAGMA user_version = 1")


def not_sqlite(path: Path) -> None:
    path.write_bytes(b"this is a text file, not a database\n" * 64)


REFUSED: dict[str, tuple[Callable[[Path], None], Verdict, str]] = {
    "foreign_app": (foreign_app, Verdict.FOREIGN_APPLICATION,
                    "belongs to another application (application_id 42, expected 1128351288)"),
    "newer_ledger": (newer_ledger, Verdict.NEWER_LEDGER,
                     "has broker ledger version 2, newer than this build supports (1); "
                     "upgrade Switchboard"),
    "missing_column": (missing_column, Verdict.SHAPE_MISMATCH,
                       "column messages.notified_at is missing"),
    "missing_index": (missing_index, Verdict.SHAPE_MISMATCH,
                      "no index on messages(to_member_id, status_timestamp)"),
    "missing_named_index": (missing_named_index, Verdict.SHAPE_MISMATCH,
                            "index idx_members_fleet_status on members(fleet_id, status) "
                            "is missing"),
    "wrong_on_delete": (wrong_on_delete, Verdict.SHAPE_MISMATCH,
                        "foreign key member_placements.member_id -> members(member_id) "
                        "ON DELETE CASCADE is missing"),
    "missing_foreign_key": (missing_foreign_key, Verdict.SHAPE_MISMATCH,
                            "foreign key messages.to_member_id -> members(member_id) "
                            "ON DELETE RESTRICT is missing"),
    "wrong_type": (wrong_type, Verdict.SHAPE_MISMATCH,
                   "column messages.notified_at is INTEGER, expected TEXT"),
    "missing_table": (missing_table, Verdict.SHAPE_MISMATCH, "table asset_installs is missing"),
    "extra_column": (extra_column, Verdict.SHAPE_MISMATCH,
                     "table messages has unexpected columns priority"),
    "identity_without_ledger": (identity_without_ledger, Verdict.UNKNOWN_LEDGER,
                                "has unknown broker ledger version 0"),
    "unidentified_populated": (unidentified_populated, Verdict.UNIDENTIFIED,
                               "without the broker identity"),
    "ledger_without_identity": (ledger_without_identity, Verdict.UNIDENTIFIED,
                                "without the broker identity (application_id 0, ledger 1"),
    "not_sqlite": (not_sqlite, Verdict.NOT_SQLITE, "not a SQLite database"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_refused_file_stays_byte_identical(case: str, broker_path: Path) -> None:
    build, verdict, detail = REFUSED[case]
    build(broker_path)
    before = sha256(broker_path)
    diagnosis = diagnose(broker_path)
    assert diagnosis.verdict is verdict
    assert detail in diagnosis.detail
    with pytest.raises(BrokerUnavailable) as refused:
        open_broker(broker_path)
    assert str(broker_path) in refused.value.message
    assert detail in refused.value.message
    assert refused.value.message.endswith("it was left unchanged")
    assert refused.value.code == f"broker_{verdict.value}"
    assert sha256(broker_path) == before


@pytest.mark.parametrize("case", ["foreign_app", "newer_ledger", "missing_column"])
def test_cli_refuses_with_exact_message_and_writes_nothing(
        case: str, broker_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    build, verdict, detail = REFUSED[case]
    build(broker_path)
    before = sha256(broker_path)
    explanation = diagnose(broker_path).detail
    code = main(["fleet", "create", "x", "--broker-db", str(broker_path), "--director-name", "d",
                 "--session", "s", "--window", "@1", "--pane", "%1", "--coding-agent", "claude"])
    assert code == 2
    err = capsys.readouterr().err
    assert err == (f"switchboard: broker_{verdict.value}: broker file {broker_path} "
                   f"{explanation}; it was left unchanged\n")
    assert detail in err
    assert sha256(broker_path) == before


def test_newer_ledger_is_reported_before_shape(broker_path: Path) -> None:
    newer_ledger(broker_path)
    assert diagnose(broker_path).verdict is Verdict.NEWER_LEDGER


def test_extra_unrelated_table_index_and_trigger_are_accepted(broker_path: Path) -> None:
    _v1(broker_path,
        "CREATE TABLE host_notes (note TEXT)",
        "CREATE INDEX idx_host_notes ON host_notes (note)",
        "CREATE INDEX idx_messages_extra ON messages (created_at)",
        "CREATE TRIGGER note_trigger AFTER INSERT ON host_notes BEGIN SELECT 1; END")
    assert diagnose(broker_path).verdict is Verdict.CURRENT
    with Broker(open_broker(broker_path)) as broker:
        created = broker.create_fleet(None, director_name="d", director_description="",
                                      placement=PlacementSpec("s", "@1", "%1", "claude"))
        assert created.fleet.director_member_id == created.director.member.member_id


def test_differently_named_message_indexes_are_accepted(broker_path: Path) -> None:
    ddl = tuple(s.replace("idx_messages_to_status", "ix_inbox") for s in V1_DDL)
    _v1(broker_path, ddl=ddl)
    assert diagnose(broker_path).verdict is Verdict.CURRENT


def test_empty_zero_identity_file_is_initialized(broker_path: Path) -> None:
    broker_path.write_bytes(b"")
    assert diagnose(broker_path).verdict is Verdict.EMPTY
    open_broker(broker_path).close()
    assert diagnose(broker_path).verdict is Verdict.CURRENT


def test_missing_file_is_created_but_not_by_readers(broker_path: Path) -> None:
    with pytest.raises(BrokerUnavailable, match="no broker file"):
        open_broker(broker_path, readonly=True)
    with pytest.raises(BrokerUnavailable, match="no broker file"):
        open_broker(broker_path, create=False)
    assert not broker_path.exists()
    open_broker(broker_path).close()
    assert diagnose(broker_path).verdict is Verdict.CURRENT


def test_empty_file_is_not_initialized_by_a_reader(broker_path: Path) -> None:
    broker_path.write_bytes(b"")
    with pytest.raises(BrokerUnavailable, match="not initialized yet"):
        open_broker(broker_path, readonly=True)
    assert broker_path.read_bytes() == b""


def test_initialization_is_one_transaction(broker_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """A failure half-way through creating the schema leaves the file empty and zero-identity."""
    import storage.broker_store as store_module

    broken = (*V1_DDL[:3], "CREATE TABLE broken (")
    monkeypatch.setitem(store_module.KNOWN_DDL, 1, broken)
    broker_path.write_bytes(b"")
    with pytest.raises(BrokerUnavailable, match="cannot open broker file"):
        open_broker(broker_path)
    conn = sqlite3.connect(broker_path)
    assert conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 0
    assert conn.execute("PRAGMA application_id").fetchone()[0] == 0
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 0
