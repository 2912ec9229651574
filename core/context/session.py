"""Open the registry the way front ends do: the full engine, a reader, or the lean hook open.

``core.engine.open.open_engine`` is for commands that run transitions: it
validates the whole config and diagnoses the file before connecting (it lives
above the engine it builds). ``open_for_hook`` is for the
hook process, which runs on every prompt and turn end and only needs the
generation and host identity: it trusts a digest of a config (and of the
registry's schema cookie) that a previous full open validated, so the common
case pays for neither the TOML parser nor the config validator nor the engine
imports. Any mismatch falls back to the full open, so the lean path never
accepts something the full path would refuse.
"""

from __future__ import annotations

import json
import sqlite3
from typing import TYPE_CHECKING, Any, NamedTuple

from core.config.home import Home
from core.model.digest import sha256_hex
from storage.uri import open_uri

if TYPE_CHECKING:
    from core.context.reader import RegistryReader

# Pinned copies of storage.schema's identity constants: importing storage.schema
# builds the whole DDL (and core.model.machines), which the hook path must not pay for.
# tests/core/test_hook_open.py asserts they equal the originals.
APPLICATION_ID = 0x53574252
SCHEMA_VERSION = 5
PROTOCOL_VERSION = 1

HOOK_OPEN_CACHE = "hook-open.json"
# Bump when the meaning of the cache changes: an old file is then simply a miss.
HOOK_OPEN_FORMAT = 1


def open_reader(home: Home | None = None) -> RegistryReader:
    """Open the published registry for reads, exactly as ``open_engine`` validates it,
    without loading the engine (see ``core.context.reader``)."""
    from core.config.registry import open_current
    from core.context.reader import RegistryReader

    opened = open_current(home)
    return RegistryReader(conn=opened.conn, config=opened.config, home=opened.home)


class HookRegistry(NamedTuple):
    """A read-write connection to the current generation, identity verified.

    ``verified`` is the cache record to persist once the caller has proven it
    speaks for a real Switchboard pane (``remember_hook_open``); it is ``None``
    when the open already came from a valid cache.
    """

    home: Home
    conn: sqlite3.Connection
    generation_id: str
    host_id: str
    verified: dict[str, Any] | None


def open_for_hook(home: Home, generation_id: str) -> HookRegistry:
    """Open generation ``generation_id`` for one hook transaction; never creates state.

    Fails closed (``RegistryUnavailable``) exactly when the full open would:
    config and pointer must name this generation, the file must carry the
    Switchboard application id and schema, and its metadata must name this
    generation and the config's host. Nothing is written here. The connection
    leaves checkpoints to the reconcile holder up to
    ``storage.connection.HOOK_WAL_AUTOCHECKPOINT_PAGES``.
    """
    from storage.connection import HOOK_WAL_AUTOCHECKPOINT_PAGES

    opened = _open_for_hook(home, generation_id)
    opened.conn.execute(f"PRAGMA wal_autocheckpoint = {HOOK_WAL_AUTOCHECKPOINT_PAGES}")
    return opened


def _open_for_hook(home: Home, generation_id: str) -> HookRegistry:
    try:
        config_digest = sha256_hex(_config_bytes(home))
    except (OSError, ValueError):
        return _full_open(home, generation_id, None)  # it says what is wrong with the config
    cached = _read_cache(home, generation_id)
    if cached is not None and cached.get("config_sha256") == config_digest:
        conn = _lean_connect(home, generation_id, cached)
        if conn is not None:
            if _metadata_matches(conn, generation_id, cached["host_id"]):
                return HookRegistry(home, conn, generation_id, cached["host_id"], None)
            conn.close()
    return _full_open(home, generation_id, config_digest)


def remember_hook_open(opened: HookRegistry) -> None:
    """Persist a freshly verified identity so the next hook takes the lean path.

    Best effort: a read-only or full disk only costs the next hook a full open.
    """
    if opened.verified is None:
        return
    from core.model.errors import EnvironmentFailure
    from core.model.files import write_private

    target = opened.home.state_dir / opened.generation_id / HOOK_OPEN_CACHE
    try:
        write_private(target, json.dumps(opened.verified, sort_keys=True))
    except (OSError, EnvironmentFailure):
        pass


# Pinned copy of core.config.config.MAX_CONFIG_BYTES (the hook path does not import the
# config module); a larger config takes the full open, which refuses it in words.
MAX_CONFIG_BYTES = 1024 * 1024
MAX_CACHE_BYTES = 64 * 1024


def _config_bytes(home: Home) -> bytes:
    """The config's bytes for the digest, read with a bound (ValueError when larger)."""
    with open(home.config_path, "rb") as handle:
        data = handle.read(MAX_CONFIG_BYTES + 1)
    if len(data) > MAX_CONFIG_BYTES:
        raise ValueError("config file too large")
    return data


def _read_cache(home: Home, generation_id: str) -> dict[str, Any] | None:
    try:
        with open(home.state_dir / generation_id / HOOK_OPEN_CACHE, "rb") as handle:
            data = handle.read(MAX_CACHE_BYTES + 1)
        if len(data) > MAX_CACHE_BYTES:
            return None
        cached = json.loads(data.decode("utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(cached, dict) or cached.get("format") != HOOK_OPEN_FORMAT \
            or cached.get("generation_id") != generation_id \
            or not isinstance(cached.get("host_id"), str) \
            or not isinstance(cached.get("schema_cookie"), int):
        return None
    return cached


def _lean_connect(home: Home, generation_id: str,
                  cached: dict[str, Any]) -> sqlite3.Connection | None:
    """Connect without creating anything; None if the file moved on since the cache.

    The checks are reads (header pragmas and the schema cookie, which changes
    with any DDL), done before the connection's own PRAGMAs are set.
    """
    path = home.registry_path(generation_id)
    try:
        conn = open_uri(path, "rw", isolation_level=None, check_same_thread=False)
    except sqlite3.Error:
        return None
    try:
        identity = (conn.execute("PRAGMA application_id").fetchone()[0],
                    conn.execute("PRAGMA user_version").fetchone()[0],
                    conn.execute("PRAGMA schema_version").fetchone()[0],
                    conn.execute("PRAGMA journal_mode").fetchone()[0])
    except sqlite3.Error:
        conn.close()
        return None
    if identity != (APPLICATION_ID, SCHEMA_VERSION, cached["schema_cookie"], "wal"):
        conn.close()
        return None
    from storage.connection import BUSY_TIMEOUT_MS

    # The same per-connection PRAGMAs as storage.connection.connect (WAL is already
    # the file's persistent mode, checked above).
    conn.row_factory = sqlite3.Row
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("PRAGMA synchronous = NORMAL")
    return conn


def _metadata_matches(conn: sqlite3.Connection, generation_id: str, host_id: str) -> bool:
    """The file itself must still name this generation and host, committed.

    A disagreement is not judged here: the full open re-diagnoses and says why.
    """
    try:
        rows = conn.execute(
            "SELECT schema_version, protocol_version, generation_id, local_host_id,"
            " activation_state FROM registry_metadata").fetchall()
    except sqlite3.DatabaseError:
        return False
    return len(rows) == 1 and tuple(rows[0]) == (SCHEMA_VERSION, PROTOCOL_VERSION,
                                                 generation_id, host_id, "committed")


def _full_open(home: Home, generation_id: str, config_digest: str | None) -> HookRegistry:
    """Validate everything the normal open does, then describe it for the cache."""
    from core.config.registry import open_current

    opened = open_current(home, expected_generation=generation_id)
    conn = opened.conn
    host_id = opened.config.host.host_id
    cookie = conn.execute("PRAGMA schema_version").fetchone()[0]
    try:
        unchanged = config_digest is not None and \
            sha256_hex(_config_bytes(home)) == config_digest
    except (OSError, ValueError):
        unchanged = False
    if not unchanged:  # the config moved under us: valid now, but not what we digested
        return HookRegistry(home, conn, generation_id, host_id, None)
    verified = {"format": HOOK_OPEN_FORMAT, "config_sha256": config_digest,
                "generation_id": generation_id, "host_id": host_id, "schema_cookie": cookie}
    return HookRegistry(home, conn, generation_id, host_id, verified)
