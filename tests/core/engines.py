"""Fast engines on real registries: init once per config, copy the home per test.

``make_engine`` runs init (DDL, WAL, fsync) every time; engine tests need a
fresh registry per test or per hypothesis example, so they copy an initialized
home instead. The copy is a real registry file opened by ``open_current``.
"""

from __future__ import annotations

import atexit
import shutil
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

from core.config.home import Home
from core.config.registry import open_current
from core.engine.engine import Engine
from core.model.ports import FixedClock, SequentialIds
from tests.factories import make_engine

_TEMPLATES: dict[str, Path] = {}


def _template(**config_changes: Any) -> Path:
    key = repr(sorted(config_changes.items()))
    if key not in _TEMPLATES:
        folder = Path(tempfile.mkdtemp(prefix="sb-engine-template-"))
        atexit.register(shutil.rmtree, folder, True)
        make_engine(folder / "home", **config_changes).conn.close()
        _TEMPLATES[key] = folder / "home"
    return _TEMPLATES[key]


def fresh_engine(target: Path, **config_changes: Any) -> Engine:
    """An engine on a copy of an initialized home at ``target`` (must not exist)."""
    shutil.copytree(_template(**config_changes), target)
    opened = open_current(Home(root=target, config_path=target / "config.toml"))
    return Engine(conn=opened.conn, config=opened.config, clock=FixedClock(),
                  ids=SequentialIds())


TABLES = (
    "request_records", "frames", "work_contexts", "frame_sessions", "provider_sessions",
    "user_views", "frame_placements", "launch_intents", "surfaces", "agent_capabilities",
    "view_transitions", "transition_briefs", "completion_handoffs", "control_turns",
    "recoveries", "desktop_attachment_leases", "projects", "checkouts",
)


def dump(conn: sqlite3.Connection) -> dict[str, list[tuple]]:
    """Every row of every mutable table: equal dumps mean nothing was written."""
    return {table: sorted(tuple(row) for row in conn.execute(f"SELECT * FROM {table}"))
            for table in TABLES}


def counts(conn: sqlite3.Connection) -> dict[str, int]:
    return {table: conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
            for table in TABLES}


def row(conn: sqlite3.Connection, sql: str, *args: object) -> dict[str, Any]:
    found = conn.execute(sql, args).fetchone()
    assert found is not None, sql
    return dict(found)


def rid(n: int) -> str:
    """A request UUID distinct from the engine's SequentialIds."""
    return f"10000000-0000-4000-8000-{n:012d}"
