"""Stale `working` ages out to `unknown` and never stays working forever.

Stop does not fire on an interrupt or an API error. Readers (the state
builders) show such a session as unknown without writing anything; the named
reconcile step makes it durable; Claude's idle_prompt notification while
"working" is direct evidence and moves it at once.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.context.requests import new_request_id
from core.engine.engine import Engine
from core.hooks.hook_handler import handle_hook
from core.model.enums import Activity
from core.providers.checks import (
    STALE_WORKING_AFTER_MS,
    effective_activity,
    effective_session,
    reconcile_stale_activity,
)
from core.state.state_builder import build_host_state, build_navigator_state
from storage.connection import write_transaction
from tests.core.engines import dump, fresh_engine
from tests.core.test_hook_handler import LiveSurface, payload_for

MINUTE = 60 * 1000
ACTIVITIES = [a.value for a in Activity]


# ------------------------------------------------------------------ the pure rule


@pytest.mark.parametrize("activity, age_ms, shown", [
    ("working", 0, "working"),
    ("working", STALE_WORKING_AFTER_MS - 1, "working"),
    ("working", STALE_WORKING_AFTER_MS, "unknown"),
    ("working", 10 * STALE_WORKING_AFTER_MS, "unknown"),
    ("ready", 10 * STALE_WORKING_AFTER_MS, "ready"),
    ("needs_input", 10 * STALE_WORKING_AFTER_MS, "needs_input"),
    ("completed", 10 * STALE_WORKING_AFTER_MS, "completed"),
    ("unknown", 0, "unknown"),
])
def test_effective_activity_table(activity: str, age_ms: int, shown: str) -> None:
    now = 1_780_000_000_000
    assert effective_activity(activity, now - age_ms, now) == shown


def test_working_without_any_observation_is_unknown() -> None:
    assert effective_activity("working", None, 5) == "unknown"


@given(activity=st.sampled_from(ACTIVITIES), observed=st.integers(0, 2**40),
       age=st.integers(-2**20, 2**40), stale_after=st.integers(1, 2**32))
def test_only_working_ages_and_never_into_ready(activity: str, observed: int, age: int,
                                                stale_after: int) -> None:
    shown = effective_activity(activity, observed, observed + age, stale_after)
    if activity != "working":
        assert shown == activity
    else:
        assert shown in ("working", "unknown")
        assert (shown == "working") == (age < stale_after)


def test_effective_session_copies_and_ages_reason_too() -> None:
    conn = sqlite3.connect(":memory:")
    conn.row_factory = sqlite3.Row
    row = conn.execute("SELECT 'working' AS activity, 'turn_complete' AS activity_reason,"
                       " 0 AS last_observed_at, 'k' AS session_key").fetchone()
    aged = effective_session(row, STALE_WORKING_AFTER_MS)
    assert aged == {"activity": "unknown", "activity_reason": "unknown",
                    "last_observed_at": 0, "session_key": "k"}
    fresh = effective_session(dict(row), STALE_WORKING_AFTER_MS - 1)
    assert fresh["activity"] == "working" and fresh["activity_reason"] == "turn_complete"
    no_session = {"frame_id": "f", "activity": None, "last_observed_at": None}
    assert effective_session(no_session, 10**12) == no_session


# ------------------------------------------------------------------ registry


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    engine = fresh_engine(tmp_path / "home")
    yield engine
    engine.conn.close()


def started_session(engine: Engine, project: str = "alpha") -> str:
    route = engine.project_enter(new_request_id(), project)
    return engine.frame_start(new_request_id(), route.frame_id).session_key


def set_activity(engine: Engine, key: str, activity: str, observed_at: int,
                 reason: str = "unknown") -> None:
    with write_transaction(engine.conn) as conn:
        conn.execute("UPDATE provider_sessions SET activity = ?, activity_reason = ?,"
                     " last_observed_at = ? WHERE session_key = ?",
                     (activity, reason, observed_at, key))


def session_row(engine: Engine, key: str) -> tuple:
    return tuple(engine.conn.execute(
        "SELECT activity, activity_reason, last_observed_at, updated_at FROM provider_sessions"
        " WHERE session_key = ?", (key,)).fetchone())


def test_builders_show_stale_working_as_unknown_and_write_nothing(engine: Engine) -> None:
    key = started_session(engine)
    now = engine.now()
    set_activity(engine, key, "working", now - STALE_WORKING_AFTER_MS)
    before = dump(engine.conn)
    navigator = build_navigator_state(engine)
    host = build_host_state(engine)
    assert dump(engine.conn) == before
    assert [v.activity for v in navigator.views] == ["unknown"]
    assert [f.activity for p in navigator.projects for f in p.frames
            if f.current_session is not None] == ["unknown"]
    assert [(s.activity, s.activity_reason) for s in host.sessions] == [("unknown", "unknown")]
    assert session_row(engine, key)[0] == "working"  # still only a reading

    set_activity(engine, key, "working", now - STALE_WORKING_AFTER_MS + MINUTE)
    assert [v.activity for v in build_navigator_state(engine).views] == ["working"]
    assert [s.activity for s in build_host_state(engine).sessions] == ["working"]


def test_reconcile_moves_only_stale_working_once(engine: Engine) -> None:
    keys = {name: started_session(engine, project)
            for name, project in (("stale", "alpha"), ("fresh", "beta"))}
    now = engine.now()
    set_activity(engine, keys["stale"], "working", now - STALE_WORKING_AFTER_MS - 1)
    set_activity(engine, keys["fresh"], "working", now - MINUTE)
    before_fresh = session_row(engine, keys["fresh"])

    assert reconcile_stale_activity(engine.conn, now) == [keys["stale"]]
    assert session_row(engine, keys["stale"]) == (
        "unknown", "unknown", now - STALE_WORKING_AFTER_MS - 1, now)  # evidence time kept
    assert session_row(engine, keys["fresh"]) == before_fresh

    before = dump(engine.conn)
    assert reconcile_stale_activity(engine.conn, now) == []  # idempotent
    assert dump(engine.conn) == before


@pytest.mark.parametrize("activity", ["ready", "needs_input", "completed", "unknown"])
def test_reconcile_leaves_every_other_activity_alone(engine: Engine, activity: str) -> None:
    key = started_session(engine)
    set_activity(engine, key, activity, 0, reason="permission")
    before = dump(engine.conn)
    assert reconcile_stale_activity(engine.conn, engine.now()) == []
    assert dump(engine.conn) == before


def test_reconcile_threshold_is_configurable(engine: Engine) -> None:
    key = started_session(engine)
    now = engine.now()
    set_activity(engine, key, "working", now - 2 * MINUTE)
    assert reconcile_stale_activity(engine.conn, now, stale_after_ms=3 * MINUTE) == []
    assert reconcile_stale_activity(engine.conn, now, stale_after_ms=2 * MINUTE) == [key]


# ------------------------------------------------------------------ hooks




def idle_prompt(live: LiveSurface) -> bytes:
    return json.dumps({"session_id": live.provider_session_id,
                       "hook_event_name": "Notification", "notification_type": "idle_prompt",
                       "message": "Claude is waiting for your input"}).encode()


def live_activity(live: LiveSurface) -> tuple[str, str]:
    row = live.engine.conn.execute("SELECT activity, activity_reason FROM provider_sessions"
                                   " WHERE session_key = ?", (live.session_key,)).fetchone()
    return row[0], row[1]


def test_idle_prompt_while_working_means_the_turn_ended_without_stop(
        live: LiveSurface) -> None:
    handle_hook("claude", "UserPromptSubmit", payload_for(live, "UserPromptSubmit"),
                live.env())
    assert live_activity(live) == ("working", "unknown")
    outcome = handle_hook("claude", "Notification", idle_prompt(live), live.env())
    assert outcome.handled and outcome.activity == "unknown"
    assert live_activity(live) == ("unknown", "unknown")
    # the next real turn is working again, and its Stop makes it ready
    handle_hook("claude", "UserPromptSubmit", payload_for(live, "UserPromptSubmit"),
                live.env())
    assert handle_hook("claude", "Stop", payload_for(live, "Stop"),
                       live.env()).activity == "ready"


def test_idle_prompt_after_a_stop_changes_nothing(live: LiveSurface) -> None:
    handle_hook("claude", "UserPromptSubmit", payload_for(live, "UserPromptSubmit"),
                live.env())
    handle_hook("claude", "Stop", payload_for(live, "Stop"), live.env())
    assert live_activity(live) == ("ready", "turn_complete")
    assert handle_hook("claude", "Notification", idle_prompt(live),
                       live.env()).activity == "ready"
    assert live_activity(live) == ("ready", "turn_complete")
