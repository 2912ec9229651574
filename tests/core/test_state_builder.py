"""build_host_state is a fast path: it must equal a plain, obviously right construction.

The builder fills records from tuple rows and ages activity in its own loop;
the reference below reads ``SELECT *`` rows by name, parses every enum and
uses ``effective_session``. A registry seeded through the named operations
(pushes, completions, closes) plus raw rows for the shapes those never make
(stale and fresh working, pinned, repositories, recoveries) must give the
same records in the same order and byte-identical canonical JSON.
"""

from __future__ import annotations

import dataclasses
import gc
import sqlite3
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from core.config.home import Home
from core.config.registry import open_current
from core.context.requests import new_request_id
from core.engine.engine import Engine
from core.model.enums import ActivationState
from core.model.ports import FixedClock, SequentialIds
from core.providers.checks import STALE_WORKING_AFTER_MS, effective_session
from core.state import state_builder
from core.state.envelope import EnumKind, encode_canonical
from core.state.state_builder import build_host_state
from core.state.state_types import (
    HostCheckout,
    HostControlTurn,
    HostFrame,
    HostFrameSession,
    HostInfo,
    HostPlacement,
    HostProject,
    HostProjectRepository,
    HostRecovery,
    HostRepository,
    HostSession,
    HostState,
    HostSurface,
    HostTransition,
    HostView,
    HostWorkContext,
)
from storage.connection import write_transaction
from tests.bench.bench_registry import populate
from tests.factories import HOST_ID


def _record(cls: type, row: sqlite3.Row, renamed: dict[str, str] | None = None,
            **overrides: Any) -> Any:
    values = {}
    for item in dataclasses.fields(cls):
        value = overrides[item.name] if item.name in overrides \
            else row[(renamed or {}).get(item.name, item.name)]
        kind = item.metadata["json"][1]
        if isinstance(kind, EnumKind) and value is not None:
            value = kind.enum_type(value)
        values[item.name] = value
    return cls(**values)


def _records(conn: sqlite3.Connection, cls: type, table: str, order: str,
             renamed: dict[str, str] | None = None) -> tuple:
    return tuple(_record(cls, row, renamed)
                 for row in conn.execute(f"SELECT * FROM {table} ORDER BY {order}"))


def reference_host_state(engine: Engine) -> HostState:
    """HostState the slow, plain way: named columns, keyword init, parsed enums."""
    conn, now = engine.conn, engine.now()
    preferred = {p.project_id: p.preferred_provider for p in engine.config.projects}
    repo_of = {c.checkout_id: c.repository_id for c in engine.config.checkouts}
    sessions = []
    for row in conn.execute("SELECT * FROM provider_sessions ORDER BY session_key"):
        aged = effective_session(row, now)
        sessions.append(_record(HostSession, row, pinned=bool(row["pinned"]),
                                activity=aged["activity"],
                                activity_reason=aged["activity_reason"]))
    return HostState(
        generation_id=engine.generation_id,
        activation_state=ActivationState(conn.execute(
            "SELECT activation_state FROM registry_metadata").fetchone()[0]),
        generated_at=now,
        host=HostInfo(host_id=engine.host_id, display_name=engine.config.host.display_name),
        projects=tuple(_record(HostProject, row,
                               preferred_provider=preferred.get(row["project_id"]))
                       for row in conn.execute("SELECT * FROM projects ORDER BY project_id")),
        repositories=_records(conn, HostRepository, "repositories", "repository_id"),
        project_repositories=_records(conn, HostProjectRepository, "project_repositories",
                                      "project_id, repository_id"),
        checkouts=tuple(_record(HostCheckout, row, repository_id=row["repository_id"]
                                or repo_of.get(row["checkout_id"]))
                        for row in conn.execute("SELECT * FROM checkouts ORDER BY checkout_id")),
        work_contexts=_records(conn, HostWorkContext, "work_contexts", "work_context_id"),
        frames=_records(conn, HostFrame, "frames", "frame_id"),
        frame_sessions=_records(conn, HostFrameSession, "frame_sessions", "frame_session_id"),
        sessions=tuple(sessions),
        surfaces=_records(conn, HostSurface, "surfaces", "surface_id"),
        views=_records(conn, HostView, "user_views", "view_id"),
        placements=_records(conn, HostPlacement, "frame_placements", "placement_id"),
        transitions=_records(conn, HostTransition, "view_transitions", "transition_id"),
        control_turns=_records(conn, HostControlTurn,
                               "control_turns WHERE target_session_key IS NOT NULL",
                               "control_turn_id"),
        recoveries=_records(conn, HostRecovery, "recoveries", "recovery_id",
                            {"explanation": "bounded_explanation"}),
    )


def _seed_odd_shapes(engine: Engine) -> None:
    """Rows the named operations in ``populate`` never write."""
    now = engine.now()
    project_id, checkout_id = engine.conn.execute(
        "SELECT project_id, checkout_id FROM projects ORDER BY project_id").fetchone()
    keys = [r[0] for r in engine.conn.execute(
        "SELECT session_key FROM provider_sessions ORDER BY session_key")]
    with write_transaction(engine.conn) as conn:
        repository_id = str(uuid.UUID(int=7, version=4))
        conn.execute("INSERT INTO repositories VALUES (?, ?, 'switchboard')",
                     (repository_id, HOST_ID))
        conn.execute("INSERT INTO project_repositories VALUES (?, ?)",
                     (project_id, repository_id))
        for index, (activity, age) in enumerate([
                ("working", STALE_WORKING_AFTER_MS), ("working", STALE_WORKING_AFTER_MS - 1),
                ("working", 0), ("needs_input", 10 * STALE_WORKING_AFTER_MS),
                ("ready", 0)]):
            conn.execute(
                "UPDATE provider_sessions SET activity = ?, activity_reason = 'permission',"
                " last_observed_at = ?, pinned = ?, project_id = ?, checkout_id = ?"
                " WHERE session_key = ?",
                (activity, now - age, index % 2, project_id, checkout_id, keys[index]))
        for index, state in enumerate(("open", "resolved", "dismissed")):
            recovery_id = str(uuid.UUID(int=100 + index, version=4))
            conn.execute(
                "INSERT INTO recoveries (recovery_id, host_id, kind, subject_type, subject_id,"
                " actionability, state, bounded_explanation, created_at, updated_at)"
                " VALUES (?, ?, 'pane_vanished', 'surface', ?, 'manual', 'open', ?, ?, ?)",
                (recovery_id, HOST_ID, f"subject-{index}", f"The pane went away ({index}).",
                 now, now))
            conn.execute("UPDATE recoveries SET state = ?, updated_at = ? WHERE recovery_id = ?",
                         (state, now + index, recovery_id))


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    engine, _shape = populate(tmp_path_factory.mktemp("registry"), views=3, frames=24,
                              sessions=60)
    _seed_odd_shapes(engine)
    yield engine
    engine.conn.close()


def test_seeded_registry_has_every_shape(seeded: Engine) -> None:
    state = build_host_state(seeded)
    for name in ("repositories", "project_repositories", "work_contexts", "frames",
                 "frame_sessions", "sessions", "surfaces", "views", "placements",
                 "transitions", "control_turns", "recoveries"):
        assert getattr(state, name), f"the seed has no {name}"
    assert {s.activity for s in state.sessions} >= {"working", "unknown", "needs_input"}
    assert {s.pinned for s in state.sessions} == {True, False}
    assert {f.lifecycle_state for f in state.frames} >= {"open", "closed"}


def test_builder_equals_the_plain_construction(seeded: Engine) -> None:
    built = build_host_state(seeded)
    reference = reference_host_state(seeded)
    assert built == reference  # same records, same order
    assert encode_canonical(built) == encode_canonical(reference)
    assert all(type(s.pinned) is bool for s in built.sessions)


def test_every_array_is_ordered_by_its_id(seeded: Engine) -> None:
    state = build_host_state(seeded)
    for item in dataclasses.fields(state):
        rows = getattr(state, item.name)
        if isinstance(rows, tuple) and rows and hasattr(rows[0], "sort_key"):
            keys = [row.sort_key() for row in rows]
            assert keys == sorted(keys), item.name


def test_the_build_reads_one_snapshot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A commit landing between two table reads shows in no array, so nothing dangles.

    With one autocommit snapshot per SELECT, the push's membership named a
    frame the envelope lacked and encoding refused it.
    """
    engine, shape = populate(tmp_path, views=2, frames=4, sessions=4)
    home = Home(root=tmp_path / "home", config_path=tmp_path / "home" / "config.toml")
    other = open_current(home)
    try:
        writer = Engine(conn=other.conn, config=other.config, clock=FixedClock(),
                        ids=SequentialIds(counter=10_000))
        workspace = engine.conn.execute(
            "SELECT active_frame_id FROM user_views WHERE view_id = ?",
            (shape["first_view"],)).fetchone()[0]
        before = build_host_state(engine)
        rows_as = state_builder._rows_as

        def frames_then_a_push(conn: sqlite3.Connection, cls: type, source: str,
                               *args: Any, **kwargs: Any) -> tuple:
            if cls is HostFrameSession:  # frames are read; a push lands before memberships
                writer.frame_push(new_request_id(), workspace, "landed mid-build", "brief")
            return rows_as(conn, cls, source, *args, **kwargs)

        monkeypatch.setattr(state_builder, "_rows_as", frames_then_a_push)
        during = build_host_state(engine)
        monkeypatch.undo()
        encode_canonical(during)
        assert during == before
        assert not engine.conn.in_transaction
        after = build_host_state(engine)
        assert len(after.frames) == len(before.frames) + 1
        encode_canonical(after)
    finally:
        other.conn.close()
        engine.conn.close()


def test_the_build_joins_a_callers_transaction(seeded: Engine) -> None:
    seeded.conn.execute("BEGIN")
    try:
        assert build_host_state(seeded) == reference_host_state(seeded)
        assert seeded.conn.in_transaction
    finally:
        seeded.conn.execute("ROLLBACK")


def test_the_collector_is_paused_only_for_the_build(seeded: Engine,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    assert gc.isenabled()
    build_host_state(seeded)
    assert gc.isenabled()
    gc.disable()
    try:
        build_host_state(seeded)
        assert not gc.isenabled()  # a caller's own pause is kept
    finally:
        gc.enable()

    def broken(*args: Any) -> tuple:
        assert not gc.isenabled()
        raise RuntimeError("mid-build")

    monkeypatch.setattr(state_builder, "_sessions", broken)
    with pytest.raises(RuntimeError):
        build_host_state(seeded)
    assert gc.isenabled()
    assert not seeded.conn.in_transaction
