"""The broker file's format (CAFleet family): DDL, identity, ledger and expected shape.

The broker lives in its own SQLite file, separate from the registry. Its
format is identified by ``PRAGMA application_id`` and versioned by a ledger
kept in ``PRAGMA user_version`` (no ledger table, so a fresh file holds exactly
the application tables of the spec). Every known ledger version records the
shape it must have, as plain data, so diagnosis compares a file against the
recorded shape of *its* version and never against DDL executed at runtime.

The column value sets (member status, message state) are part of the format
too, so they are defined here and decoded strictly: an unknown value in a file
is an error, never a silent default.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

APPLICATION_ID = 1128351288  # 0x43414638, "CAF8"
LEDGER_VERSION = 1


class MemberStatus(StrEnum):
    ACTIVE = "active"
    DEREGISTERED = "deregistered"


class MessageState(StrEnum):
    INPUT_REQUIRED = "input_required"
    COMPLETED = "completed"


class StatusDecodeError(ValueError):
    """A stored status is outside its closed value set."""


def decode_member_status(value: object) -> MemberStatus:
    try:
        if not isinstance(value, str):
            raise ValueError(value)  # a stored status is TEXT; anything else is unknown
        return MemberStatus(value)
    except ValueError:
        raise StatusDecodeError(f"unknown member status {value!r}") from None


def decode_message_state(value: object) -> MessageState:
    try:
        if not isinstance(value, str):
            raise ValueError(value)  # a stored status is TEXT; anything else is unknown
        return MessageState(value)
    except ValueError:
        raise StatusDecodeError(f"unknown message status_state {value!r}") from None


# Version 1 DDL, in creation order. Foreign keys between fleets and members are
# circular (a fleet names its Director, a member names its fleet); SQLite allows
# the forward reference, and bootstrap backfills the Director in one commit.
V1_DDL: tuple[str, ...] = (
    """CREATE TABLE fleets (
    fleet_id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT,
    created_at TEXT NOT NULL,
    deleted_at TEXT,
    director_member_id INTEGER REFERENCES members(member_id) ON DELETE RESTRICT
)""",
    """CREATE TABLE members (
    member_id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    fleet_id INTEGER NOT NULL REFERENCES fleets(fleet_id) ON DELETE RESTRICT,
    name TEXT NOT NULL,
    description TEXT NOT NULL,
    status TEXT NOT NULL,
    registered_at TEXT NOT NULL,
    deregistered_at TEXT
)""",
    "CREATE INDEX idx_members_fleet_status ON members (fleet_id, status)",
    """CREATE TABLE member_placements (
    member_id INTEGER PRIMARY KEY REFERENCES members(member_id) ON DELETE CASCADE,
    mux_session TEXT NOT NULL,
    mux_window_id TEXT NOT NULL,
    mux_pane_id TEXT,
    backend TEXT NOT NULL DEFAULT 'tmux',
    coding_agent TEXT NOT NULL,
    created_at TEXT NOT NULL
)""",
    """CREATE TABLE messages (
    message_id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    from_member_id INTEGER NOT NULL REFERENCES members(member_id) ON DELETE RESTRICT,
    to_member_id INTEGER NOT NULL REFERENCES members(member_id) ON DELETE RESTRICT,
    created_at TEXT NOT NULL,
    status_state TEXT NOT NULL,
    status_timestamp TEXT NOT NULL,
    text TEXT NOT NULL,
    notified_at TEXT
)""",
    "CREATE INDEX idx_messages_to_status ON messages (to_member_id, status_timestamp)",
    "CREATE INDEX idx_messages_from_status ON messages (from_member_id, status_timestamp)",
    """CREATE TABLE asset_installs (
    coding_agent TEXT NOT NULL,
    path TEXT NOT NULL,
    cafleet_version TEXT NOT NULL,
    installed_at TEXT NOT NULL,
    PRIMARY KEY (coding_agent, path)
)""",
)


@dataclass(frozen=True)
class ColumnShape:
    """One row of ``PRAGMA table_info`` minus its position."""

    name: str
    type: str
    notnull: bool
    default: str | None
    pk: int  # 0, or 1-based position in the primary key


@dataclass(frozen=True)
class ForeignKeyShape:
    """One single-column row of ``PRAGMA foreign_key_list``."""

    column: str
    table: str
    to: str
    on_delete: str


@dataclass(frozen=True)
class IndexShape:
    """A required index: its columns in order; ``name`` None means any name will do."""

    columns: tuple[str, ...]
    unique: bool = False
    name: str | None = None


@dataclass(frozen=True)
class TableShape:
    name: str
    columns: tuple[ColumnShape, ...]
    foreign_keys: frozenset[ForeignKeyShape] = frozenset()
    indexes: tuple[IndexShape, ...] = ()


def _col(name: str, type_: str, notnull: bool = False, default: str | None = None,
         pk: int = 0) -> ColumnShape:
    return ColumnShape(name, type_, notnull, default, pk)


# The recorded shape of ledger version 1. The spec names only one index; the two
# message indexes are required by their columns, whatever another writer of this
# format family called them. Primary-key autoindexes are implied by ``pk``.
V1_SHAPE: tuple[TableShape, ...] = (
    TableShape(
        "fleets",
        (
            _col("fleet_id", "INTEGER", pk=1),
            _col("name", "TEXT"),
            _col("created_at", "TEXT", notnull=True),
            _col("deleted_at", "TEXT"),
            _col("director_member_id", "INTEGER"),
        ),
        frozenset({ForeignKeyShape("director_member_id", "members", "member_id", "RESTRICT")}),
    ),
    TableShape(
        "members",
        (
            _col("member_id", "INTEGER", notnull=True, pk=1),
            _col("fleet_id", "INTEGER", notnull=True),
            _col("name", "TEXT", notnull=True),
            _col("description", "TEXT", notnull=True),
            _col("status", "TEXT", notnull=True),
            _col("registered_at", "TEXT", notnull=True),
            _col("deregistered_at", "TEXT"),
        ),
        frozenset({ForeignKeyShape("fleet_id", "fleets", "fleet_id", "RESTRICT")}),
        (IndexShape(("fleet_id", "status"), name="idx_members_fleet_status"),),
    ),
    TableShape(
        "member_placements",
        (
            _col("member_id", "INTEGER", pk=1),
            _col("mux_session", "TEXT", notnull=True),
            _col("mux_window_id", "TEXT", notnull=True),
            _col("mux_pane_id", "TEXT"),
            _col("backend", "TEXT", notnull=True, default="'tmux'"),
            _col("coding_agent", "TEXT", notnull=True),
            _col("created_at", "TEXT", notnull=True),
        ),
        frozenset({ForeignKeyShape("member_id", "members", "member_id", "CASCADE")}),
    ),
    TableShape(
        "messages",
        (
            _col("message_id", "INTEGER", notnull=True, pk=1),
            _col("from_member_id", "INTEGER", notnull=True),
            _col("to_member_id", "INTEGER", notnull=True),
            _col("created_at", "TEXT", notnull=True),
            _col("status_state", "TEXT", notnull=True),
            _col("status_timestamp", "TEXT", notnull=True),
            _col("text", "TEXT", notnull=True),
            _col("notified_at", "TEXT"),
        ),
        frozenset({
            ForeignKeyShape("from_member_id", "members", "member_id", "RESTRICT"),
            ForeignKeyShape("to_member_id", "members", "member_id", "RESTRICT"),
        }),
        (
            IndexShape(("to_member_id", "status_timestamp")),
            IndexShape(("from_member_id", "status_timestamp")),
        ),
    ),
    TableShape(
        "asset_installs",
        (
            _col("coding_agent", "TEXT", notnull=True, pk=1),
            _col("path", "TEXT", notnull=True, pk=2),
            _col("cafleet_version", "TEXT", notnull=True),
            _col("installed_at", "TEXT", notnull=True),
        ),
    ),
)

# Every ledger version this build can read, by its recorded shape.
KNOWN_SHAPES: dict[int, tuple[TableShape, ...]] = {1: V1_SHAPE}
KNOWN_DDL: dict[int, tuple[str, ...]] = {1: V1_DDL}
APPLICATION_TABLES: tuple[str, ...] = tuple(t.name for t in V1_SHAPE)
