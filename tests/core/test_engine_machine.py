"""Random sequences of named engine operations keep every registry invariant.

A hypothesis RuleBasedStateMachine enters projects, pushes, claims, goes back,
focuses, completes, settles, closes, reopens, starts runtimes, toggles modes,
retires views, releases claims and retries earlier requests on a real
registry. Domain refusals (``SwitchboardError``) are legal steps; any other
exception fails. After every step SQL checks the contract's invariants, that
counters only move forward, that terminal rows never change, and that a
retried request writes nothing.
"""

from __future__ import annotations

import shutil
import sqlite3
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from core.config.config import AutomationConfig
from core.model.enums import ViewMode
from core.model.errors import SwitchboardError
from core.runtime import claims
from tests.core.engines import dump, fresh_engine

MAX_DEPTH = 2
NONTERMINAL = "('prepared', 'executing', 'presented', 'awaiting_claim', 'settling')"
# Rows that never change state once they reach one of these (contract: terminal rows).
TERMINAL: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "transition": ("view_transitions", "transition_id",
                   ("completed", "cancelled", "superseded", "failed")),
    "control_turn": ("control_turns", "control_turn_id", ("settled", "failed", "superseded")),
    "launch": ("launch_intents", "launch_id", ("bound", "failed", "superseded")),
    "surface": ("surfaces", "surface_id", ("retired",)),
    "placement": ("frame_placements", "placement_id", ("orphaned",)),
    "view": ("user_views", "view_id", ("retired",)),
    "request": ("request_records", "request_id", ("completed", "failed")),
}
STATE_COLUMN = {"surface": "lifecycle_state"}

pick = st.integers(min_value=0, max_value=10_000)


class EngineMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.folder = Path(tempfile.mkdtemp(prefix="sb-machine-"))
        self.engine = fresh_engine(self.folder / "home",
                                   automation=AutomationConfig(initial_max_depth=MAX_DEPTH))
        self.conn: sqlite3.Connection = self.engine.conn
        self.serial = 0
        self.entered: set[str] = set()
        self.done: list[tuple[str, Callable[[str], Any], str]] = []
        self.high: dict[tuple[str, str], int] = {}
        self.terminal: dict[tuple[str, str], str] = {}
        self.retired: dict[str, tuple] = {}

    def teardown(self) -> None:
        self.conn.close()
        shutil.rmtree(self.folder, ignore_errors=True)

    # ------------------------------------------------------------------ helpers

    def _rid(self) -> str:
        self.serial += 1
        return f"30000000-0000-4000-8000-{self.serial:012d}"

    def _ids(self, sql: str) -> list[str]:
        return [r[0] for r in self.conn.execute(sql)]

    def _choose(self, sql: str, index: int) -> str | None:
        found = self._ids(sql + " ORDER BY 1")
        return found[index % len(found)] if found else None

    def _request(self, name: str, call: Callable[[str], Any]) -> None:
        """One named operation; a domain refusal is a legal outcome."""
        request_id = self._rid()
        try:
            call(request_id)
        except SwitchboardError:
            return
        self.done.append((name, call, request_id))

    def _tick(self) -> None:
        self.engine.clock.advance(1_000)  # type: ignore[attr-defined]

    # ------------------------------------------------------------------ rules

    @initialize(project=st.sampled_from(["alpha", "beta"]))
    def first_entry(self, project: str) -> None:
        self.enter(project)

    @rule(project=st.sampled_from(["alpha", "beta"]))
    def enter(self, project: str) -> None:
        self._tick()
        request_id = self._rid()
        try:
            self.engine.project_enter(request_id, project)
        except SwitchboardError:
            return
        self.entered.add(project)
        self.done.append(("enter", lambda r: self.engine.project_enter(r, project), request_id))

    @rule(index=pick, title=st.sampled_from(["fix", "review", "  spaced  title "]))
    def push(self, index: int, title: str) -> None:
        source = self._choose("SELECT frame_id FROM frames WHERE lifecycle_state = 'open'",
                              index)
        if source is not None:
            self._tick()
            self._request("push", lambda r: self.engine.frame_push(r, source, title,
                                                                    f"brief for {title}"))

    def _pending_claim(self) -> str | None:
        return self._choose(
            "SELECT target_frame_id FROM view_transitions WHERE kind IN ('push',"
            " 'complete_return') AND state IN ('presented', 'awaiting_claim')", 0)

    @precondition(lambda self: self._pending_claim() is not None)
    @rule()
    def claim_pending(self) -> None:
        """The agent that was told to claim (target of a presented push/return) claims."""
        self._claim(self._pending_claim())

    @rule(index=pick)
    def claim_any(self, index: int) -> None:
        """Any frame claims: refused, or finds nothing, or re-reads its record."""
        self._claim(self._choose("SELECT frame_id FROM frames", index))

    def _claim(self, frame_id: str | None) -> None:
        if frame_id is not None:
            self._tick()
            try:
                claims.claim_for_frame(self.engine, frame_id, None)
            except SwitchboardError:
                pass

    @rule(index=pick)
    def settle(self, index: int) -> None:
        frame_id = self._choose(
            "SELECT target_frame_id FROM view_transitions WHERE state = 'settling'"
            " UNION SELECT frame_id FROM frames WHERE role = 'workspace'", index)
        if frame_id is not None:
            self._tick()
            claims.settle_after_stop(self.engine, frame_id)

    @rule(index=pick)
    def push_then_claim(self, index: int) -> None:
        """A whole push: prepare, present, the child claims its brief."""
        self.push(index, "chained")
        pending = self._pending_claim()
        if pending is not None:
            self._claim(pending)

    @rule(index=pick)
    def complete_then_claim_and_settle(self, index: int) -> None:
        """A whole complete-and-return: handoff, parent claims, parent's Stop settles."""
        self.complete(index, "chained")
        pending = self._pending_claim()
        if pending is not None:
            self._claim(pending)
            claims.settle_after_stop(self.engine, pending)

    @rule(index=pick)
    def back(self, index: int) -> None:
        view_id = self._choose("SELECT view_id FROM user_views", index)
        if view_id is not None:
            self._tick()
            self._request("back", lambda r: self.engine.frame_back(r, view_id))

    @rule(view_index=pick, frame_index=pick)
    def focus(self, view_index: int, frame_index: int) -> None:
        view_id = self._choose("SELECT view_id FROM user_views", view_index)
        frame_id = self._choose("SELECT frame_id FROM frames", frame_index)
        if view_id is not None and frame_id is not None:
            self._tick()
            self._request("focus", lambda r: self.engine.view_focus(r, view_id, frame_id))

    @rule(index=pick, summary=st.sampled_from(["done", "partly done"]))
    def complete(self, index: int, summary: str) -> None:
        frame_id = self._choose(
            "SELECT frame_id FROM frames WHERE role = 'task' AND lifecycle_state = 'open'",
            index)
        if frame_id is not None:
            self._tick()
            self._request("complete", lambda r: self.engine.frame_complete(r, frame_id, summary,
                                                                            "next"))

    @rule(index=pick)
    def close(self, index: int) -> None:
        frame_id = self._choose("SELECT frame_id FROM frames WHERE role = 'task'", index)
        if frame_id is not None:
            self._tick()
            self._request("close", lambda r: self.engine.frame_close(r, frame_id))

    @rule(index=pick)
    def reopen(self, index: int) -> None:
        # Not a frame stranded in a retired view while its project has a live one: that
        # is a known bug (test_engine_requests.py::test_reopen_after_reentry_lands_...).
        frame_id = self._choose(
            "SELECT frame_id FROM frames f WHERE lifecycle_state <> 'open' AND NOT EXISTS"
            " (SELECT 1 FROM frame_placements p JOIN user_views v USING (view_id)"
            " WHERE p.frame_id = f.frame_id AND p.state <> 'orphaned' AND v.state = 'retired'"
            " AND EXISTS (SELECT 1 FROM user_views lv WHERE lv.project_id = f.project_id"
            " AND lv.state <> 'retired'))", index)
        if frame_id is not None:
            self._tick()
            self._request("reopen", lambda r: self.engine.frame_reopen(r, frame_id))

    @rule(index=pick)
    def start(self, index: int) -> None:
        frame_id = self._choose("SELECT frame_id FROM frames", index)
        if frame_id is not None:
            self._tick()
            self._request("start", lambda r: self.engine.frame_start(r, frame_id))

    @rule(index=pick, mode=st.sampled_from([None, ViewMode.NAVIGATOR, ViewMode.DIRECT]))
    def mode(self, index: int, mode: ViewMode | None) -> None:
        view_id = self._choose("SELECT view_id FROM user_views", index)
        if view_id is not None:
            self._tick()
            self._request("mode", lambda r: self.engine.view_mode(r, view_id, mode))

    @rule(index=pick)
    def retire(self, index: int) -> None:
        view_id = self._choose("SELECT view_id FROM user_views WHERE state <> 'retired'", index)
        if view_id is not None:
            self._tick()
            self._request("retire", lambda r: self.engine.view_retire(r, view_id))

    @rule(index=pick)
    def release(self, index: int) -> None:
        context_id = self._choose("SELECT work_context_id FROM work_contexts", index)
        if context_id is not None:
            self._tick()
            self._request("release", lambda r: self.engine.context_release(r, context_id))

    @precondition(lambda self: bool(self.done))
    @rule(index=pick)
    def retry(self, index: int) -> None:
        """Replaying an earlier request id never writes (it returns or is refused)."""
        _name, call, request_id = self.done[index % len(self.done)]
        before = dump(self.conn)
        try:
            call(request_id)
        except SwitchboardError:
            pass
        assert dump(self.conn) == before

    # ------------------------------------------------------------------ invariants

    def _none(self, sql: str) -> None:
        found = [tuple(r) for r in self.conn.execute(sql).fetchall()]
        assert found == [], (sql, found)

    @invariant()
    def one_workspace_per_entered_project(self) -> None:
        self._none("SELECT project_id FROM frames WHERE role = 'workspace'"
                   " GROUP BY host_id, project_id HAVING COUNT(*) > 1")
        for name in self.entered:
            count = self.conn.execute(
                "SELECT COUNT(*) FROM frames f JOIN projects p USING (project_id)"
                " WHERE p.name = ? AND f.role = 'workspace'", (name,)).fetchone()[0]
            assert count == 1, name
        self._none("SELECT project_id FROM user_views WHERE state <> 'retired'"
                   " AND project_id IS NOT NULL GROUP BY project_id HAVING COUNT(*) > 1")

    @invariant()
    def at_most_one_nonterminal_transition_per_view(self) -> None:
        self._none(f"SELECT view_id FROM view_transitions WHERE state IN {NONTERMINAL}"
                   " GROUP BY view_id HAVING COUNT(*) > 1")

    @invariant()
    def active_placement_agrees_with_the_view(self) -> None:
        self._none("SELECT view_id FROM frame_placements WHERE state = 'active'"
                   " GROUP BY view_id HAVING COUNT(*) > 1")
        self._none("SELECT p.placement_id FROM frame_placements p JOIN user_views v"
                   " USING (view_id) WHERE p.state = 'active' AND v.state IN"
                   " ('ready', 'transitioning') AND v.active_frame_id IS NOT p.frame_id")

    @invariant()
    def one_owning_placement_per_open_frame(self) -> None:
        self._none("SELECT frame_id FROM frame_placements WHERE state <> 'orphaned'"
                   " GROUP BY frame_id HAVING COUNT(*) > 1")
        self._none("SELECT f.frame_id FROM frames f WHERE f.lifecycle_state = 'open'"
                   " AND NOT EXISTS (SELECT 1 FROM frame_placements p WHERE p.frame_id ="
                   " f.frame_id AND p.state <> 'orphaned')")
        # while the project has a live view, its open frames are owned in that view
        self._none("SELECT f.frame_id FROM frames f JOIN user_views v ON v.project_id ="
                   " f.project_id AND v.state <> 'retired' WHERE f.lifecycle_state = 'open'"
                   " AND NOT EXISTS (SELECT 1 FROM frame_placements p WHERE p.frame_id ="
                   " f.frame_id AND p.state <> 'orphaned' AND p.view_id = v.view_id)")

    @invariant()
    def held_contexts_have_an_open_foreground_member(self) -> None:
        self._none("SELECT w.work_context_id FROM work_contexts w WHERE w.claim_state = 'held'"
                   " AND NOT EXISTS (SELECT 1 FROM frames f WHERE f.frame_id ="
                   " w.foreground_frame_id AND f.work_context_id = w.work_context_id"
                   " AND f.lifecycle_state = 'open')")
        self._none("SELECT checkout_id FROM work_contexts WHERE claim_state = 'held'"
                   " GROUP BY checkout_id HAVING COUNT(*) > 1")

    @invariant()
    def frame_tree_is_consistent(self) -> None:
        self._none("SELECT c.frame_id FROM frames c JOIN frames p ON p.frame_id ="
                   " c.parent_frame_id WHERE c.lifecycle_state = 'open'"
                   " AND p.lifecycle_state <> 'open'")
        self._none("SELECT c.frame_id FROM frames c JOIN frames p ON p.frame_id ="
                   " c.parent_frame_id WHERE c.depth <> p.depth + 1"
                   " OR c.project_id <> p.project_id OR c.work_context_id <> p.work_context_id")
        self._none(f"SELECT frame_id FROM frames WHERE depth > {MAX_DEPTH}")
        self._none("SELECT frame_id FROM frames WHERE (role = 'task') <> (parent_frame_id IS"
                   " NOT NULL)")

    @invariant()
    def views_show_open_frames(self) -> None:
        self._none("SELECT v.view_id FROM user_views v JOIN frames f ON f.frame_id ="
                   " v.active_frame_id WHERE v.state <> 'retired'"
                   " AND f.lifecycle_state <> 'open'")

    @invariant()
    def sessions_belong_to_one_frame(self) -> None:
        self._none("SELECT session_key FROM frame_sessions GROUP BY session_key"
                   " HAVING COUNT(*) > 1")
        self._none("SELECT f.frame_id FROM frames f WHERE f.current_session_key IS NOT NULL"
                   " AND NOT EXISTS (SELECT 1 FROM frame_sessions s WHERE s.frame_id ="
                   " f.frame_id AND s.session_key = f.current_session_key)")
        self._none("SELECT session_key FROM launch_intents WHERE state IN"
                   " ('planned', 'authorized', 'started') AND session_key IS NOT NULL"
                   " GROUP BY session_key HAVING COUNT(*) > 1")

    @invariant()
    def semantic_records_match_their_transitions(self) -> None:
        self._none("SELECT t.transition_id FROM view_transitions t WHERE t.kind = 'push' AND"
                   " (SELECT COUNT(*) FROM transition_briefs b WHERE b.transition_id ="
                   " t.transition_id) <> 1")
        self._none("SELECT t.transition_id FROM view_transitions t WHERE"
                   " t.kind = 'complete_return' AND (SELECT COUNT(*) FROM completion_handoffs"
                   " h WHERE h.transition_id = t.transition_id) <> 1")
        self._none("SELECT t.transition_id FROM view_transitions t WHERE t.kind NOT IN"
                   " ('push', 'complete_return') AND EXISTS (SELECT 1 FROM control_turns c"
                   " WHERE c.transition_id = t.transition_id)")
        self._none("SELECT control_turn_id FROM control_turns WHERE submission_count > 1")
        self._none("SELECT f.frame_id FROM frames f WHERE f.lifecycle_state = 'closed'"
                   " AND f.close_reason = 'completed' AND NOT EXISTS (SELECT 1 FROM"
                   " completion_handoffs h WHERE h.source_frame_id = f.frame_id"
                   " AND h.first_claimed_at IS NOT NULL)")

    @invariant()
    def requests_are_completed_or_absent(self) -> None:
        self._none("SELECT request_id FROM request_records WHERE state <> 'completed'")

    @invariant()
    def retired_views_are_frozen(self) -> None:
        for row in self.conn.execute("SELECT view_id, mode, active_frame_id, revision"
                                     " FROM user_views WHERE state = 'retired'"):
            frozen = self.retired.setdefault(row[0], tuple(row))
            assert tuple(row) == frozen, (frozen, tuple(row))

    @invariant()
    def counters_only_move_forward(self) -> None:
        for kind, sql in (
                ("view", "SELECT view_id, revision FROM user_views"),
                ("context", "SELECT work_context_id, claim_generation FROM work_contexts"),
                ("placement", "SELECT placement_id, generation FROM frame_placements")):
            for key, value in self.conn.execute(sql):
                previous = self.high.get((kind, key), value)
                assert value >= previous, (kind, key, previous, value)
                self.high[(kind, key)] = value

    @invariant()
    def terminal_rows_never_change(self) -> None:
        for kind, (table, key, terminal) in TERMINAL.items():
            column = STATE_COLUMN.get(kind, "state")
            for row_id, state in self.conn.execute(f"SELECT {key}, {column} FROM {table}"):
                seen = self.terminal.get((kind, row_id))
                if seen is not None:
                    assert state == seen, (kind, row_id, seen, state)
                elif state in terminal:
                    self.terminal[(kind, row_id)] = state


EngineMachine.TestCase.settings = settings(
    max_examples=60, stateful_step_count=30, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
TestEngineMachine = EngineMachine.TestCase
