"""Open, diagnose and write the broker file through named operations only.

Why this shape:
- Diagnosis runs on a read-only connection *before* anything can write, so a
  foreign, newer or damaged file is refused byte-identical (a read-only
  connection never checkpoints, never rolls back a journal, never sets WAL).
- Only an empty zero-identity file is initialized, in one transaction that
  re-checks emptiness under the write lock (two first users cannot both
  initialize).
- One factory sets the per-connection PRAGMAs (foreign_keys, busy_timeout,
  WAL), so no caller can forget foreign-key enforcement.
- Writers are named operations (``insert_message``, ``stamp_notified``...);
  there is deliberately no generic "update row" API, so every write is
  reviewable against the spec.

Storage explains what it found (``Diagnosis``); the core turns a refusal into
the exact domain error the person sees.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from core.model.errors import InvariantViolation
from core.model.files import create_private_file, private_dir
from storage import held_files
from storage.broker_schema import (
    APPLICATION_ID,
    KNOWN_DDL,
    KNOWN_SHAPES,
    LEDGER_VERSION,
    MemberStatus,
    MessageState,
    TableShape,
)
from storage.environment import environment_failure
from storage.uri import canonical, sqlite_uri

BUSY_TIMEOUT_MS = 5000


class Verdict(StrEnum):
    CURRENT = "current"
    EMPTY = "empty"
    MISSING = "missing"
    NOT_SQLITE = "not_sqlite"
    UNIDENTIFIED = "unidentified"
    FOREIGN_APPLICATION = "foreign_application"
    NEWER_LEDGER = "newer_ledger"
    UNKNOWN_LEDGER = "unknown_ledger"
    SHAPE_MISMATCH = "shape_mismatch"


@dataclass(frozen=True)
class Diagnosis:
    """What a broker file is, and in one sentence why (for the refusal message)."""

    verdict: Verdict
    detail: str
    application_id: int | None = None
    ledger_version: int | None = None

    @property
    def usable(self) -> bool:
        return self.verdict in (Verdict.CURRENT, Verdict.EMPTY)


class FormatRefused(Exception):
    """The file failed diagnosis; nothing was written to it."""

    def __init__(self, path: Path, diagnosis: Diagnosis) -> None:
        super().__init__(f"{path}: {diagnosis.detail}")
        self.path = path
        self.diagnosis = diagnosis


# --------------------------------------------------------------------------- diagnosis


def diagnose(path: Path) -> Diagnosis:
    """Classify ``path`` without writing to it."""
    path = Path(path)
    if not path.exists():
        return Diagnosis(Verdict.MISSING, "no broker file exists")
    try:
        conn = sqlite3.connect(sqlite_uri(path, mode="ro"), uri=True, isolation_level=None)
    except sqlite3.Error as exc:
        _raise_if_environment(exc, path)
        return Diagnosis(Verdict.NOT_SQLITE, f"cannot be opened as SQLite ({exc})")
    try:
        return diagnose_connection(conn)
    except sqlite3.DatabaseError as exc:
        _raise_if_environment(exc, path)
        return Diagnosis(Verdict.NOT_SQLITE, f"is not a SQLite database ({exc})")
    finally:
        conn.close()


def _raise_if_environment(exc: sqlite3.Error, path: Path) -> None:
    """A read-only mount or a locked file is the machine, not a foreign file format."""
    failure = environment_failure(exc, path)
    if failure is not None:
        raise failure from exc


def diagnose_connection(conn: sqlite3.Connection) -> Diagnosis:
    """Identity, then ledger, then the recorded shape of that ledger version.

    A newer ledger is reported before any shape comparison: a newer file is
    expected to differ, and "upgrade Switchboard" is the useful message.
    """
    app_id = conn.execute("PRAGMA application_id").fetchone()[0]
    ledger = conn.execute("PRAGMA user_version").fetchone()[0]
    objects = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
    if app_id == 0:
        if ledger == 0 and objects == 0:
            return Diagnosis(Verdict.EMPTY, "is empty", app_id, ledger)
        return Diagnosis(
            Verdict.UNIDENTIFIED,
            f"is a populated SQLite file without the broker identity "
            f"(application_id 0, ledger {ledger}, {objects} schema objects)",
            app_id, ledger)
    if app_id != APPLICATION_ID:
        return Diagnosis(
            Verdict.FOREIGN_APPLICATION,
            f"belongs to another application (application_id {app_id}, "
            f"expected {APPLICATION_ID})",
            app_id, ledger)
    newest = max(KNOWN_SHAPES)
    if ledger > newest:
        return Diagnosis(
            Verdict.NEWER_LEDGER,
            f"has broker ledger version {ledger}, newer than this build supports "
            f"({newest}); upgrade Switchboard",
            app_id, ledger)
    if ledger not in KNOWN_SHAPES:
        return Diagnosis(
            Verdict.UNKNOWN_LEDGER,
            f"has unknown broker ledger version {ledger}", app_id, ledger)
    problem = _shape_problem(conn, KNOWN_SHAPES[ledger])
    if problem is not None:
        return Diagnosis(Verdict.SHAPE_MISMATCH,
                         f"does not match broker ledger version {ledger}: {problem}",
                         app_id, ledger)
    return Diagnosis(Verdict.CURRENT, f"is a broker file at ledger version {ledger}",
                     app_id, ledger)


def _shape_problem(conn: sqlite3.Connection, shape: tuple[TableShape, ...]) -> str | None:
    """First difference between the file and the recorded shape, or None.

    Extra tables, indexes and triggers are fine; the required tables' columns
    and foreign keys must be exactly as recorded and required indexes present.
    """
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    for table in shape:
        if table.name not in tables:
            return f"table {table.name} is missing"
        actual = {
            r[1]: (r[2].upper(), bool(r[3]), r[4], r[5])
            for r in conn.execute(f"PRAGMA table_info({table.name})")
        }
        for col in table.columns:
            if col.name not in actual:
                return f"column {table.name}.{col.name} is missing"
            want = (col.type, col.notnull, col.default, col.pk)
            if actual[col.name] != want:
                return (f"column {table.name}.{col.name} is {_describe(actual[col.name])}, "
                        f"expected {_describe(want)}")
        extra = sorted(set(actual) - {c.name for c in table.columns})
        if extra:
            return f"table {table.name} has unexpected columns {', '.join(extra)}"
        fks: dict[int, list[tuple[str, str, str, str]]] = {}
        for r in conn.execute(f"PRAGMA foreign_key_list({table.name})"):
            fks.setdefault(r[0], []).append((r[3], r[2], r[4], r[6]))
        actual_fks = set()
        for parts in fks.values():
            if len(parts) != 1:
                return f"table {table.name} has a composite foreign key"
            actual_fks.add(parts[0])
        want_fks = {(f.column, f.table, f.to, f.on_delete) for f in table.foreign_keys}
        if actual_fks != want_fks:
            missing = sorted(want_fks - actual_fks)
            if missing:
                fk_col, ref, to, on_delete = missing[0]
                return (f"foreign key {table.name}.{fk_col} -> {ref}({to}) "
                        f"ON DELETE {on_delete} is missing")
            fk_col, ref, to, _ = sorted(actual_fks - want_fks)[0]
            return f"table {table.name} has an unexpected foreign key {fk_col} -> {ref}({to})"
        indexes: dict[str, tuple[tuple[str, ...], bool]] = {}
        for r in conn.execute(f"PRAGMA index_list({table.name})"):
            name, unique, partial = r[1], bool(r[2]), bool(r[4])
            if partial:
                continue  # a partial index does not cover every row
            columns = tuple(c[2] for c in conn.execute(f"PRAGMA index_info({name!r})"))
            indexes[name] = (columns, unique)
        for required in table.indexes:
            if required.name is not None:
                if indexes.get(required.name) != (required.columns, required.unique):
                    return (f"index {required.name} on {table.name}"
                            f"({', '.join(required.columns)}) is missing")
            elif (required.columns, required.unique) not in indexes.values():
                return (f"no index on {table.name}({', '.join(required.columns)})")
    return None


def _describe(col: tuple[str, bool, str | None, int]) -> str:
    type_, notnull, default, pk = col
    text = type_ + (" NOT NULL" if notnull else "")
    if default is not None:
        text += f" DEFAULT {default}"
    if pk:
        text += f" (primary key #{pk})"
    return text


def _inserted_id(cur: sqlite3.Cursor) -> int:
    """The rowid an INSERT just made.

    sqlite3 types ``lastrowid`` as optional because statements other than
    INSERT leave it unset; after an INSERT a missing id is a broken invariant.
    """
    if cur.lastrowid is None:
        raise InvariantViolation("an INSERT into the broker file returned no rowid")
    return int(cur.lastrowid)


# --------------------------------------------------------------------------- opening


def open_store(path: Path, *, create: bool = True, readonly: bool = False) -> BrokerStore:
    """Diagnose ``path`` and return a store on a validated connection.

    ``create`` lets a missing or empty zero-identity file be initialized;
    ``readonly`` (inbox stream, diagnostics) never writes and never initializes.
    Raises ``FormatRefused`` with the diagnosis otherwise. The path is made
    canonical first: the store's ``path`` (which the pane-lock folder is derived
    from) and the file SQLite opens are then the same for every spelling.
    """
    path = canonical(path)
    diagnosis = diagnose(path)
    if diagnosis.verdict is Verdict.MISSING and create and not readonly:
        private_dir(path.parent)
        create_private_file(path)  # an empty file diagnoses as EMPTY; -wal/-shm follow its mode
        diagnosis = Diagnosis(Verdict.EMPTY, "is new")
    if diagnosis.verdict is Verdict.EMPTY and (readonly or not create):
        raise FormatRefused(path, Diagnosis(Verdict.EMPTY, "is not initialized yet"))
    if not diagnosis.usable:
        raise FormatRefused(path, diagnosis)
    conn = _connect(path, readonly=readonly)
    try:
        if diagnosis.verdict is Verdict.EMPTY:
            _initialize(conn, path)
        else:
            # The file was diagnosed a moment ago on another connection; confirm
            # identity on this one before anything (WAL included) can write.
            again = _identity(conn)
            if again != (APPLICATION_ID, LEDGER_VERSION):
                raise FormatRefused(path, diagnose_connection(conn))
        if not readonly:
            mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
            if mode != "wal":
                conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
    except BaseException:
        conn.close()
        raise
    return BrokerStore(conn, path, readonly=readonly)


def _connect(path: Path, *, readonly: bool) -> sqlite3.Connection:
    mode = "ro" if readonly else "rwc"
    conn = held_files.connect(path, sqlite_uri(path, mode=mode), uri=True,
                              isolation_level=None, check_same_thread=False)
    conn.row_factory = sqlite3.Row
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA foreign_keys = ON")
    if readonly:
        conn.execute("PRAGMA query_only = ON")
    return conn


def _identity(conn: sqlite3.Connection) -> tuple[int, int]:
    return (conn.execute("PRAGMA application_id").fetchone()[0],
            conn.execute("PRAGMA user_version").fetchone()[0])


@dataclass
class _Probe:
    """The read-only connection ``has_unnotified`` keeps, and the file it was opened on."""

    path: str
    identity: tuple[int, int]  # (st_dev, st_ino): a replaced file is opened afresh
    conn: sqlite3.Connection


_PROBE: list[_Probe] = []  # at most one: a process asks about one home's broker
_PROBE_LOCK = threading.Lock()

_UNNOTIFIED_SQL = (
    "SELECT 1 FROM messages msg JOIN members m ON m.member_id = msg.to_member_id"
    " WHERE m.description = ? AND msg.status_state <> ? AND msg.notified_at IS NULL"
    " AND msg.from_member_id <> msg.to_member_id LIMIT 1")


def has_unnotified(path: Path, description: str) -> bool | None:
    """Whether a member so described has a message not yet typed to it; read-only.

    For the path that runs after every focus: opening the store read-write there
    diagnosed the schema and, on close, checkpointed and removed the WAL that
    every navigator watches. The read-only connection is kept for the next call
    (a fresh one parses the schema first: 140 us of a 3 ms focus) and reopened
    when the file was replaced; a read-only connection never checkpoints. None
    when the file is not plainly a current broker (missing, foreign, another
    version): the caller then takes the full open, which says why.
    """
    try:
        info = os.stat(path)
    except OSError:
        return None
    key, identity = os.fspath(path), (info.st_dev, info.st_ino)
    with _PROBE_LOCK:
        probe = _PROBE[0] if _PROBE else None
        if probe is not None and (probe.path, probe.identity) != (key, identity):
            probe.conn.close()
            _PROBE.clear()
            probe = None
        if probe is None:
            try:
                conn = _connect(path, readonly=True)
                current = _identity(conn) == (APPLICATION_ID, LEDGER_VERSION)
            except sqlite3.Error:
                return None
            if not current:
                conn.close()
                return None
            probe = _Probe(key, identity, conn)
            _PROBE.append(probe)
        try:
            # fetchall: the statement is done and its read snapshot released at once
            rows = probe.conn.execute(_UNNOTIFIED_SQL,
                                      (description, MessageState.COMPLETED.value)).fetchall()
        except sqlite3.Error:
            probe.conn.close()
            _PROBE.clear()
            return None
    return bool(rows)


def _initialize(conn: sqlite3.Connection, path: Path) -> None:
    """Create the current schema, identity and ledger in one transaction."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        found = diagnose_connection(conn)
        if found.verdict is Verdict.EMPTY:
            for statement in KNOWN_DDL[LEDGER_VERSION]:
                conn.execute(statement)
            conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            conn.execute(f"PRAGMA user_version = {LEDGER_VERSION}")
            conn.execute("COMMIT")
            return
        conn.execute("ROLLBACK")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    if found.verdict is not Verdict.CURRENT:  # someone else wrote it meanwhile
        raise FormatRefused(path, found)


# --------------------------------------------------------------------------- the store


class BrokerStore:
    """The invocation's validated connection plus the named reads and writes."""

    def __init__(self, conn: sqlite3.Connection, path: Path, *, readonly: bool = False) -> None:
        self.conn = conn
        self.path = path
        self.readonly = readonly

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> BrokerStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """BEGIN IMMEDIATE ... COMMIT, so validation and writes see one snapshot."""
        try:
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                yield
                self.conn.execute("COMMIT")
            except BaseException:
                if self.conn.in_transaction:
                    try:
                        self.conn.execute("ROLLBACK")
                    except sqlite3.Error:
                        pass  # SQLite may have rolled back already (SQLITE_FULL)
                raise
        except sqlite3.OperationalError as exc:
            failure = environment_failure(exc, self.path)
            if failure is None:
                raise
            raise failure from exc

    def data_version(self) -> int:
        """Changes whenever another connection commits (cheap; no table reads)."""
        return self.conn.execute("PRAGMA data_version").fetchone()[0]

    # ---- fleets

    def insert_fleet(self, name: str | None, created_at: str) -> int:
        cur = self.conn.execute(
            "INSERT INTO fleets (name, created_at) VALUES (?, ?)", (name, created_at))
        return _inserted_id(cur)

    def set_fleet_director(self, fleet_id: int, member_id: int) -> None:
        self.conn.execute("UPDATE fleets SET director_member_id = ? WHERE fleet_id = ?",
                          (member_id, fleet_id))

    def soft_delete_fleet(self, fleet_id: int, deleted_at: str) -> int:
        cur = self.conn.execute(
            "UPDATE fleets SET deleted_at = ? WHERE fleet_id = ? AND deleted_at IS NULL",
            (deleted_at, fleet_id))
        return cur.rowcount

    def get_fleet(self, fleet_id: int) -> sqlite3.Row | None:
        return self.conn.execute(
            "SELECT fleet_id, name, created_at, deleted_at, director_member_id"
            " FROM fleets WHERE fleet_id = ?", (fleet_id,)).fetchone()

    def list_fleets(self, *, include_deleted: bool) -> list[sqlite3.Row]:
        where = "" if include_deleted else " WHERE deleted_at IS NULL"
        return self.conn.execute(
            "SELECT fleet_id, name, created_at, deleted_at, director_member_id"
            f" FROM fleets{where} ORDER BY fleet_id").fetchall()

    # ---- members

    _MEMBER_COLUMNS = (
        "m.member_id, m.fleet_id, m.name, m.description, m.status, m.registered_at,"
        " m.deregistered_at, f.director_member_id, f.deleted_at AS fleet_deleted_at")

    def insert_member(self, fleet_id: int, name: str, description: str, registered_at: str) -> int:
        cur = self.conn.execute(
            "INSERT INTO members (fleet_id, name, description, status, registered_at)"
            " VALUES (?, ?, ?, ?, ?)",
            (fleet_id, name, description, MemberStatus.ACTIVE.value, registered_at))
        return _inserted_id(cur)

    def deregister_member(self, member_id: int, at: str) -> int:
        cur = self.conn.execute(
            "UPDATE members SET status = ?, deregistered_at = ? WHERE member_id = ? AND status = ?",
            (MemberStatus.DEREGISTERED.value, at, member_id, MemberStatus.ACTIVE.value))
        return cur.rowcount

    def deregister_fleet_members(self, fleet_id: int, at: str) -> int:
        cur = self.conn.execute(
            "UPDATE members SET status = ?, deregistered_at = ? WHERE fleet_id = ? AND status = ?",
            (MemberStatus.DEREGISTERED.value, at, fleet_id, MemberStatus.ACTIVE.value))
        return cur.rowcount

    def delete_member(self, member_id: int) -> int:
        """Hard delete; the placement cascades, messages restrict (caller checks first)."""
        return self.conn.execute("DELETE FROM members WHERE member_id = ?", (member_id,)).rowcount

    def get_member(self, member_id: int) -> sqlite3.Row | None:
        return self.conn.execute(
            f"SELECT {self._MEMBER_COLUMNS} FROM members m JOIN fleets f USING (fleet_id)"
            " WHERE m.member_id = ?", (member_id,)).fetchone()

    def list_members(self, fleet_id: int | None, *, active_in_live_fleets: bool
                     ) -> list[sqlite3.Row]:
        clauses: list[str] = []
        params: list[int | str] = []
        if fleet_id is not None:
            clauses.append("m.fleet_id = ?")
            params.append(fleet_id)
        if active_in_live_fleets:
            # "not deregistered" rather than "= active": an unknown status is
            # returned, so strict decoding reports it instead of hiding the row.
            clauses.append("m.status <> ? AND f.deleted_at IS NULL")
            params.append(MemberStatus.DEREGISTERED.value)
        where = (" WHERE " + " AND ".join(clauses)) if clauses else ""
        return self.conn.execute(
            f"SELECT {self._MEMBER_COLUMNS} FROM members m JOIN fleets f USING (fleet_id)"
            f"{where} ORDER BY m.fleet_id, m.member_id", params).fetchall()

    def count_member_messages(self, member_id: int) -> int:
        return self.conn.execute(
            "SELECT (SELECT count(*) FROM messages WHERE from_member_id = ?)"
            " + (SELECT count(*) FROM messages WHERE to_member_id = ?)",
            (member_id, member_id)).fetchone()[0]

    def member_activity(self, member_id: int) -> tuple[str | None, str | None, str | None]:
        """Latest sent, received and ACK timestamps (each via a messages index)."""
        row = self.conn.execute(
            "SELECT (SELECT max(created_at) FROM messages WHERE from_member_id = ?),"
            " (SELECT max(created_at) FROM messages WHERE to_member_id = ?),"
            " (SELECT max(status_timestamp) FROM messages WHERE to_member_id = ?"
            "   AND status_state = ?)",
            (member_id, member_id, member_id, MessageState.COMPLETED.value)).fetchone()
        return row[0], row[1], row[2]

    # ---- placements

    def insert_placement(self, member_id: int, *, backend: str, mux_session: str,
                         mux_window_id: str, mux_pane_id: str | None, coding_agent: str,
                         created_at: str) -> None:
        self.conn.execute(
            "INSERT INTO member_placements (member_id, mux_session, mux_window_id, mux_pane_id,"
            " backend, coding_agent, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (member_id, mux_session, mux_window_id, mux_pane_id, backend, coding_agent,
             created_at))

    def move_placement(self, member_id: int, *, backend: str, mux_session: str,
                       mux_window_id: str, mux_pane_id: str | None) -> int:
        cur = self.conn.execute(
            "UPDATE member_placements SET backend = ?, mux_session = ?, mux_window_id = ?,"
            " mux_pane_id = ? WHERE member_id = ?",
            (backend, mux_session, mux_window_id, mux_pane_id, member_id))
        return cur.rowcount

    def get_placement(self, member_id: int) -> sqlite3.Row | None:
        return self.conn.execute(
            "SELECT member_id, backend, mux_session, mux_window_id, mux_pane_id, coding_agent,"
            " created_at FROM member_placements WHERE member_id = ?", (member_id,)).fetchone()

    # ---- messages

    _MESSAGE_COLUMNS = (
        "message_id, from_member_id, to_member_id, created_at, status_state,"
        " status_timestamp, text")

    def insert_message(self, from_member_id: int, to_member_id: int, text: str, created_at: str,
                       *, notified_at: str | None) -> int:
        cur = self.conn.execute(
            "INSERT INTO messages (from_member_id, to_member_id, created_at, status_state,"
            " status_timestamp, text, notified_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (from_member_id, to_member_id, created_at, MessageState.INPUT_REQUIRED.value,
             created_at, text, notified_at))
        return _inserted_id(cur)

    def ack_message(self, message_id: int, to_member_id: int, at: str) -> int:
        """The only write that changes status_state (input_required -> completed)."""
        cur = self.conn.execute(
            "UPDATE messages SET status_state = ?, status_timestamp = ?"
            " WHERE message_id = ? AND to_member_id = ? AND status_state = ?",
            (MessageState.COMPLETED.value, at, message_id, to_member_id,
             MessageState.INPUT_REQUIRED.value))
        return cur.rowcount

    def stamp_notified(self, message_id: int, at: str) -> int:
        """Stamp only while still pending and unstamped; 0 rows means ACKed meanwhile."""
        cur = self.conn.execute(
            "UPDATE messages SET notified_at = ? WHERE message_id = ? AND status_state = ?"
            " AND notified_at IS NULL",
            (at, message_id, MessageState.INPUT_REQUIRED.value))
        return cur.rowcount

    def get_message(self, message_id: int) -> sqlite3.Row | None:
        return self.conn.execute(
            f"SELECT {self._MESSAGE_COLUMNS}, notified_at FROM messages WHERE message_id = ?",
            (message_id,)).fetchone()

    def pending_messages(self, to_member_id: int, *, after_id: int = 0) -> list[sqlite3.Row]:
        """Pending records for one recipient, oldest first, regardless of notified_at.

        Pending queries exclude ``completed`` rather than select ``input_required``,
        so an unknown state reaches strict decoding instead of silently vanishing.
        """
        return self.conn.execute(
            f"SELECT {self._MESSAGE_COLUMNS} FROM messages"
            " WHERE to_member_id = ? AND status_state <> ? AND message_id > ?"
            " ORDER BY created_at, message_id",
            (to_member_id, MessageState.COMPLETED.value, after_id)).fetchall()

    def next_notification_candidate(self, to_member_id: int, skip: set[int]
                                    ) -> sqlite3.Row | None:
        """Oldest unstamped pending non-self message for one recipient, not in ``skip``."""
        cur = self.conn.execute(
            "SELECT message_id, from_member_id, to_member_id, created_at FROM messages"
            " WHERE to_member_id = ? AND status_state <> ? AND notified_at IS NULL"
            " AND from_member_id <> to_member_id ORDER BY created_at, message_id",
            (to_member_id, MessageState.COMPLETED.value))
        try:
            for row in cur:
                if row["message_id"] not in skip:
                    return row
            return None
        finally:
            cur.close()

    def inbox_rows(self, member_ids: Iterable[int], *, include_completed: bool
                   ) -> list[sqlite3.Row]:
        ids = sorted(set(member_ids))
        if not ids:
            return []
        marks = ", ".join("?" for _ in ids)
        state = "" if include_completed else " AND msg.status_state <> ?"
        params: list[object] = list(ids)
        if not include_completed:
            params.append(MessageState.COMPLETED.value)
        return self.conn.execute(
            "SELECT msg.message_id, msg.from_member_id, msg.to_member_id, msg.created_at,"
            " msg.status_state, msg.status_timestamp, msg.text,"
            " sender.name AS from_name, recipient.name AS to_name, recipient.fleet_id"
            " FROM messages msg"
            " JOIN members sender ON sender.member_id = msg.from_member_id"
            " JOIN members recipient ON recipient.member_id = msg.to_member_id"
            f" WHERE msg.to_member_id IN ({marks}){state}"
            " ORDER BY msg.created_at, msg.message_id", params).fetchall()

    # ---- asset installs

    def upsert_asset_install(self, coding_agent: str, path: str, cafleet_version: str,
                             installed_at: str) -> None:
        self.conn.execute(
            "INSERT INTO asset_installs (coding_agent, path, cafleet_version, installed_at)"
            " VALUES (?, ?, ?, ?) ON CONFLICT (coding_agent, path) DO UPDATE SET"
            " cafleet_version = excluded.cafleet_version, installed_at = excluded.installed_at",
            (coding_agent, path, cafleet_version, installed_at))

    def list_asset_installs(self) -> list[sqlite3.Row]:
        return self.conn.execute(
            "SELECT coding_agent, path, cafleet_version, installed_at FROM asset_installs"
            " ORDER BY coding_agent, path").fetchall()


# --------------------------------------------------------------------------- change watch


class ChangeWatcher:
    """Notice commits by any process without reading the database at high frequency.

    Every ~50 ms it ``stat``s the broker file and its ``-wal`` (a commit in WAL
    mode appends to the WAL, a checkpoint rewrites the main file): a kernel
    call, no SQLite locks, no page reads. Because mtimes are coarse and a
    restarted WAL can keep its size, a ``PRAGMA data_version`` check (a cheap
    read of the shared-memory index) runs once a second as a safety net.
    """

    def __init__(self, path: Path, *, data_version: Callable[[], int] | None = None,
                 interval: float = 0.05, safety_interval: float = 1.0) -> None:
        self.path = Path(path)
        self.wal = Path(str(self.path) + "-wal")
        self.interval = interval
        self.safety_interval = safety_interval
        self._data_version = data_version
        self._signature = self._stat()
        self._version = data_version() if data_version else None
        self._last_safety = time.monotonic()

    def _stat(self) -> tuple[object, ...]:
        parts: list[object] = []
        for candidate in (self.path, self.wal):
            try:
                st = os.stat(candidate)
            except FileNotFoundError:
                parts.append(None)
            else:
                parts.append((st.st_ino, st.st_size, st.st_mtime_ns))
        return tuple(parts)

    def changed(self) -> bool:
        """True (once) if something was committed since the last call."""
        signature = self._stat()
        hit = signature != self._signature
        self._signature = signature
        now = time.monotonic()
        if self._data_version is not None and (hit or now - self._last_safety
                                               >= self.safety_interval):
            self._last_safety = now
            version = self._data_version()
            hit = hit or version != self._version
            self._version = version
        return hit

    def wait(self, timeout: float | None) -> bool:
        """Block until a change (True) or until ``timeout`` seconds pass (False)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            if self.changed():
                return True
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                time.sleep(min(self.interval, left))
            else:
                time.sleep(self.interval)
