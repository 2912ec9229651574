"""Diagnose, create and open the registry file; publish the generation pointer.

Normal open never creates state: an unknown, partially initialized, newer or
mismatched file fails closed before any write, so it stays byte-identical.
Only ``create_registry`` (used by init and confirmed reset) makes a new file,
and it builds it beside the target and renames it into place.
"""

from __future__ import annotations

import os
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

from core.model.enums import ActivationState
from core.model.errors import RegistryUnavailable
from core.model.files import create_private_file, private_dir, write_private
from storage import held_files
from storage.connection import connect
from storage.environment import environment_failure
from storage.schema import APPLICATION_ID, PROTOCOL_VERSION, REQUIRED_TABLES, SCHEMA_VERSION, ddl
from storage.uri import sqlite_uri


@dataclass(frozen=True)
class RegistryMetadata:
    schema_version: int
    protocol_version: int
    generation_id: str
    local_host_id: str
    activation_state: ActivationState
    created_at: int
    committed_at: int | None


SQLITE_MAGIC = b"SQLite format 3\x00"


def _check_header(path: Path, *, check_size: bool = True) -> None:
    """Identity, version and size from the 100-byte header, before SQLite opens it.

    SQLite zero-fills short reads, and even a read-only open of a WAL-mode file
    leaves -wal/-shm files beside it, so anything a header can refuse is refused
    here without SQLite touching the file.
    """
    size = path.stat().st_size
    header = held_files.read_header(path)
    if header is None:
        return  # this process holds it through SQLite: diagnosed when it was opened
    if len(header) < 100 or not header.startswith(SQLITE_MAGIC):
        raise RegistryUnavailable(
            f"{path} is not a readable SQLite registry (no SQLite header); it was left "
            "unchanged" if size >= 100 else
            f"{path} is not a Switchboard registry (truncated or empty); it was left unchanged")
    app_id = int.from_bytes(header[68:72], "big", signed=True)
    user_version = int.from_bytes(header[60:64], "big", signed=True)
    if app_id != APPLICATION_ID:
        raise RegistryUnavailable(
            f"{path} belongs to another application (application_id {app_id}); "
            "it was left unchanged")
    if user_version > SCHEMA_VERSION:
        raise RegistryUnavailable(
            f"{path} has registry schema v{user_version}, newer than this Switchboard "
            f"(v{SCHEMA_VERSION}); upgrade Switchboard. The file was left unchanged")
    if user_version < SCHEMA_VERSION:
        raise RegistryUnavailable(
            f"{path} has unknown registry schema v{user_version}; it was left unchanged")
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    page_count = int.from_bytes(header[28:32], "big")
    counter_valid = header[24:28] == header[92:96]
    if page_size < 512 or (check_size and (
            size % page_size or (counter_valid and size < page_size * page_count))):
        raise RegistryUnavailable(
            f"{path} is truncated ({size} bytes; expected {page_size * page_count}); "
            "it was left unchanged", code=TRANSIENT_CODE)


TRANSIENT_CODE = "registry_unreadable"
# A checkpoint in another process can make a live file look short or torn for a
# moment; a file that is really damaged stays that way across these retries.
RETRY_DELAYS_S = (0.02, 0.05, 0.1)


def diagnose(path: Path) -> RegistryMetadata:
    """Check identity, version, shape and metadata without writing anything."""
    for delay in RETRY_DELAYS_S:
        try:
            return _diagnose_once(path)
        except RegistryUnavailable as exc:
            if exc.code != TRANSIENT_CODE:
                raise
            time.sleep(delay)
    return _diagnose_once(path)


def _diagnose_once(path: Path) -> RegistryMetadata:
    if not path.exists():
        raise RegistryUnavailable(
            f"no registry at {path}; run `switchboard init` to create one")
    if path.stat().st_size < 512:
        raise RegistryUnavailable(f"{path} is not a Switchboard registry (truncated or empty)")
    # A -wal beside the file means a live registry that other processes may be
    # checkpointing: its header can run ahead of its size for a moment, so the size
    # check and the lock-free read are only for a file nobody has open.
    live = path.with_name(path.name + "-wal").exists()
    _check_header(path, check_size=not live)
    try:
        # immutable=1: no locks and no -wal/-shm files, for a file no one has open; a
        # live file is read through SQLite's normal read-only locking instead.
        uri = sqlite_uri(path, mode="ro") if live else sqlite_uri(path, mode="ro", immutable=1)
        conn = sqlite3.connect(uri, uri=True)
        try:
            tables = {r[0] for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'")}
            meta_row = None
            if "registry_metadata" in tables:
                meta_row = conn.execute(
                    "SELECT schema_version, protocol_version, generation_id, local_host_id,"
                    " activation_state, created_at, committed_at FROM registry_metadata"
                ).fetchall()
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        failure = environment_failure(exc, path)
        if failure is not None:  # a read-only mount or a lock, not a damaged file
            raise failure from exc
        raise RegistryUnavailable(
            f"{path} is not a readable SQLite registry ({exc}); it was left unchanged",
            code=TRANSIENT_CODE) from exc
    missing = [t for t in REQUIRED_TABLES if t not in tables]
    if missing:
        raise RegistryUnavailable(
            f"{path} is partially initialized (missing tables: {', '.join(missing)}); "
            "it was left unchanged")
    if not meta_row or len(meta_row) != 1:
        raise RegistryUnavailable(f"{path} has no registry metadata; it was left unchanged")
    row = meta_row[0]
    if row[0] != SCHEMA_VERSION or row[1] != PROTOCOL_VERSION:
        raise RegistryUnavailable(f"{path} metadata names an unsupported schema/protocol")
    return RegistryMetadata(row[0], row[1], row[2], row[3], ActivationState(row[4]),
                            row[5], row[6])


def create_registry(path: Path, *, generation_id: str, host_id: str, now_ms: int) -> None:
    """Build a committed empty registry at ``path`` (which must not exist)."""
    if path.exists():
        raise RegistryUnavailable(f"refusing to overwrite existing registry {path}")
    private_dir(path.parent)
    tmp = path.with_name(path.name + ".creating")
    if tmp.exists():
        tmp.unlink()
    create_private_file(tmp)  # -wal/-shm take the database file's mode
    conn = sqlite3.connect(sqlite_uri(tmp, mode="rwc"), uri=True, isolation_level=None)
    try:
        conn.execute("PRAGMA foreign_keys = ON")
        conn.executescript(ddl())
        conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        conn.execute(
            "INSERT INTO registry_metadata (singleton, schema_version, protocol_version,"
            " generation_id, local_host_id, activation_state, created_at, committed_at)"
            " VALUES (1, ?, ?, ?, ?, 'committed', ?, ?)",
            (SCHEMA_VERSION, PROTOCOL_VERSION, generation_id, host_id, now_ms, now_ms),
        )
        conn.execute("PRAGMA journal_mode = WAL")
    finally:
        conn.close()
    os.replace(tmp, path)


def open_registry(path: Path, *, expected_generation: str, expected_host: str,
                  readonly: bool = False) -> tuple[sqlite3.Connection, RegistryMetadata]:
    """Upgrade an older schema in place (once), diagnose, check generation and host
    agreement, then connect."""
    from storage.migrations import upgrade_if_older

    upgrade_if_older(path)
    meta = diagnose(path)
    if meta.generation_id != expected_generation:
        raise RegistryUnavailable(
            f"registry generation {meta.generation_id} does not match the expected "
            f"generation {expected_generation}; the file was left unchanged")
    if meta.local_host_id != expected_host:
        raise RegistryUnavailable(
            f"registry host {meta.local_host_id} does not match config host "
            f"{expected_host}; the file was left unchanged")
    if meta.activation_state is not ActivationState.COMMITTED:
        raise RegistryUnavailable("registry activation is staged, not committed")
    return connect(path, readonly=readonly), meta


def publish_pointer(pointer: Path, generation_id: str) -> None:
    """Atomically point ``state/current`` at a generation."""
    write_private(pointer, generation_id + "\n")
