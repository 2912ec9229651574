"""A navigator's registry reads, awaited on its event loop through aiosqlite.

Each navigator rebuilds its state on every registry change. The reads
(``core.state.state_builder.NAVIGATOR_READS``) go through one aiosqlite
connection per navigator, opened with the same PRAGMAs as every registry
connection (``storage.connection.connect``, read-only); the event loop awaits
them while aiosqlite's own thread runs the SQL, and the state is assembled on
the loop from the rows they return. A request never waits behind a load and a
load never waits behind a request: they do not share a connection or a lock.

The connection follows the registry file: after ``switchboard reset`` (a new
generation, a new file) the next read reopens it. Its thread is a daemon, so a
navigator that dies without closing it still exits.
"""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import aiosqlite

from core.state.state_builder import NAVIGATOR_READS, TUPLE_READS, NavigatorRows, rows_from
from storage.connection import connect

ITER_CHUNK = 256
"""Rows aiosqlite moves per hop when iterating (only ``fetchall`` is used here)."""


class AsyncNavigatorReads:
    """One read-only aiosqlite connection to the current registry file, opened lazily."""

    def __init__(self) -> None:
        self._conn: aiosqlite.Connection | None = None
        self._path: Path | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._one_at_a_time: asyncio.Lock | None = None
        """A load and a request's re-read may both await a read: one snapshot at a time
        on the one connection (a second BEGIN inside the first was refused)."""

    async def rows(self, path: Path) -> NavigatorRows:
        """Every navigator read, in one snapshot of the registry at ``path``."""
        if self._one_at_a_time is None:
            self._one_at_a_time = asyncio.Lock()
        async with self._one_at_a_time:
            return await self._rows(path)

    async def _rows(self, path: Path) -> NavigatorRows:
        conn = await self._connection(path)
        read: dict[str, list[Any]] = {}
        await conn.execute("BEGIN")
        try:
            for name, sql in NAVIGATOR_READS:
                cursor = await conn.execute(sql)  # tuples: this connection's row factory
                fetched = await cursor.fetchall()
                if name in TUPLE_READS:
                    read[name] = list(fetched)
                else:
                    columns = [column[0] for column in cursor.description]
                    read[name] = [dict(zip(columns, row, strict=True)) for row in fetched]
        finally:
            await conn.execute("COMMIT")
        return rows_from(read)

    async def _connection(self, path: Path) -> aiosqlite.Connection:
        loop = asyncio.get_running_loop()
        if self._conn is not None and (self._path != path or self._loop is not loop):
            await self.close()
        if self._conn is None:
            conn = aiosqlite.Connection(lambda: _read_only(path), ITER_CHUNK)
            # aiosqlite's worker thread is not a daemon: a navigator killed before it
            # closes this connection must still exit, so it is made one before it starts.
            conn._thread.daemon = True
            self._conn, self._path, self._loop = await conn, path, loop
        return self._conn

    async def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            await conn.close()

    def stop(self) -> None:
        """Close from outside the loop (the navigator's exit): the worker thread ends
        after the close it is handed."""
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.stop()


def _read_only(path: Path) -> sqlite3.Connection:
    conn = connect(path, readonly=True)
    conn.execute("PRAGMA mmap_size = 0")  # a navigator maps no second copy of the file
    conn.row_factory = None  # plain tuples, as the CLI's hottest read takes them
    return conn
