"""Every state machine of the contract, edge by edge, enforced by the registry itself.

Table-driven from ``core.model.machines.ALL``: for every machine and every ordered
pair of distinct states, a row is brought to the first state by legal edges
(raw SQL on a real registry file) and the second state is written. Storage must
accept exactly the legal edges and refuse every other with
``illegal_edge:<machine>``, whatever else the writer gets right. The counter
triggers (claim generation, placement generation, view revision) are checked
on their own.
"""

from __future__ import annotations

import itertools
import sqlite3
from pathlib import Path

import pytest

from core.model import machines
from core.model.errors import IllegalEdge, InvariantViolation
from storage import schema
from storage.connection import write_transaction
from tests.storage import registry_rows as rows

# The contract's edges, transcribed independently from navigator-contract.txt, so a
# change to core/model/machines.py that drifts from the spec fails here.
CONTRACT_EDGES: dict[str, dict[str, set[str]]] = {
    "frame": {"open": {"closing"}, "closing": {"closed"}, "closed": {"open"}},
    "work_context": {"released": {"held", "blocked"}, "held": {"released", "blocked"},
                     "blocked": {"released", "held"}},
    "user_view": {"ready": {"transitioning", "degraded", "retired"},
                  "transitioning": {"ready", "degraded"}, "degraded": {"ready", "retired"}},
    "placement": {"staged": {"active", "orphaned"},
                  "active": {"parked", "stopped_affinity", "orphaned"},
                  "parked": {"active", "stopped_affinity", "orphaned"},
                  "stopped_affinity": {"staged", "orphaned"}},
    "surface": {"planned": {"live", "orphaned", "retired"}, "live": {"dead", "orphaned"},
                "dead": {"retired"}, "orphaned": {"live", "dead", "retired"}},
    "launch": {"planned": {"authorized", "failed", "superseded"},
               "authorized": {"started", "failed", "superseded"},
               "started": {"bound", "failed"}},
    "transition": {"prepared": {"executing", "cancelled", "superseded", "failed"},
                   "executing": {"presented", "failed"},
                   "presented": {"awaiting_claim", "settling", "failed"},
                   "awaiting_claim": {"settling", "failed"}, "settling": {"completed", "failed"}},
    "transport": {"intent": {"moved", "inspected"}, "moved": {"inspected", "rolled_back"},
                  "inspected": {"committed", "rolled_back"}},
    "control_turn": {"prepared": {"submitted", "failed", "superseded"},
                     "submitted": {"observed", "uncertain"},
                     "observed": {"claimed", "uncertain", "failed"},
                     "uncertain": {"observed", "claimed", "failed"},
                     "claimed": {"settled", "failed"}},
    "recovery": {"open": {"resolved", "dismissed"}},
    "lease": {"offered": {"claimed", "expired"}},
    "request": {"prepared": {"completed", "failed"}},
}

# Rows that are retained for audit and never reopened (contract: "Terminal rows").
CONTRACT_TERMINAL: dict[str, set[str]] = {
    "frame": set(),  # closed -> open is the one reopen edge
    "work_context": set(),
    "user_view": {"retired"},
    "placement": {"orphaned"},
    "surface": {"retired"},
    "launch": {"bound", "failed", "superseded"},
    "transition": {"completed", "cancelled", "superseded", "failed"},
    "transport": {"committed", "rolled_back"},
    "control_turn": {"settled", "failed", "superseded"},
    "recovery": {"resolved", "dismissed"},
    "lease": {"claimed", "expired"},
    "request": {"completed", "failed"},
}

MACHINES = {m.name: m for m in machines.ALL}


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return rows.build_template(tmp_path_factory.mktemp("edges-template"))


@pytest.fixture
def conn(template: Path, tmp_path: Path):
    connection = rows.open_copy(template, tmp_path)
    yield connection
    connection.close()


def _pairs() -> list:
    cases = []
    for machine in machines.ALL:
        states = [s.value for s in machine.states]
        for old, new in itertools.permutations(states, 2):
            legal = machine.allows(old, new)
            cases.append(pytest.param(machine.name, old, new, legal,
                                      id=f"{machine.name}:{old}->{new}:"
                                         f"{'legal' if legal else 'illegal'}"))
    return cases


# --------------------------------------------------------------------------- the table


def test_machines_match_the_contract() -> None:
    assert set(MACHINES) == set(CONTRACT_EDGES)
    for name, machine in MACHINES.items():
        edges = {old: set(new) for old, new in machine.edges.items() if new}
        assert edges == CONTRACT_EDGES[name], name
        assert set(machine.terminal()) == CONTRACT_TERMINAL[name], name


@pytest.mark.parametrize("name", sorted(CONTRACT_EDGES))
def test_every_state_is_reachable_from_birth(name: str) -> None:
    machine = MACHINES[name]
    for state in machine.states:
        assert rows.path_to(machine, rows.BIRTH_STATE[name], state.value) is not None, state


@pytest.mark.parametrize(("name", "old", "new", "legal"), _pairs())
def test_edge_accepted_iff_legal(conn: sqlite3.Connection, name: str, old: str, new: str,
                                 legal: bool) -> None:
    machine = MACHINES[name]
    subject = rows.subject_in_state(conn, machine, old)
    if legal:
        rows.edge_update(conn, machine, subject, new)
        assert rows.current_state(conn, machine, subject) == new
    else:
        with pytest.raises(sqlite3.IntegrityError) as refused:
            rows.edge_update(conn, machine, subject, new)
        assert str(refused.value) == f"illegal_edge:{name}"
        assert str(refused.value).startswith("illegal_edge:")
        assert rows.current_state(conn, machine, subject) == old


@pytest.mark.parametrize("name", sorted(CONTRACT_TERMINAL))
def test_terminal_rows_never_reopen(conn: sqlite3.Connection, name: str) -> None:
    machine = MACHINES[name]
    for terminal in sorted(CONTRACT_TERMINAL[name]):
        subject = rows.subject_in_state(conn, machine, terminal)
        for other in machine.states:
            if other.value == terminal:
                continue
            with pytest.raises(sqlite3.IntegrityError, match=f"^illegal_edge:{name}$"):
                rows.edge_update(conn, machine, subject, other.value)
        assert rows.current_state(conn, machine, subject) == terminal


@pytest.mark.parametrize("name", sorted(n for n, m in MACHINES.items() if any(
    not m.allows(o, x) for o, x in itertools.permutations([s.value for s in m.states], 2))))
def test_illegal_edge_maps_to_domain_error(conn: sqlite3.Connection, name: str) -> None:
    """Through the one transaction helper an illegal edge is IllegalEdge, rolled back."""
    machine = MACHINES[name]
    old, new = next((o, n) for o, n in itertools.permutations(
        [s.value for s in machine.states], 2) if not machine.allows(o, n))
    with write_transaction(conn):
        subject = rows.subject_in_state(conn, machine, old)
    with pytest.raises(IllegalEdge) as refused, write_transaction(conn):
        rows.edge_update(conn, machine, subject, new)
    assert refused.value.code == "illegal_edge"
    assert not conn.in_transaction
    assert rows.current_state(conn, machine, subject) == old


@pytest.mark.parametrize("name", sorted(CONTRACT_EDGES))
def test_rows_are_born_only_in_entry_states(conn: sqlite3.Connection, name: str) -> None:
    """Inserting a row straight into a later state would skip its edges."""
    machine = MACHINES[name]
    born = set(schema.INITIAL_STATES[name])
    assert rows.BIRTH_STATE[name] in born
    assert not born & set(machine.terminal()), "a row must never be born terminal"
    for state in machine.states:
        conn.execute("SAVEPOINT birth")
        try:
            if state.value in born:
                rows.SUBJECTS[name](conn, state.value)
            else:
                with pytest.raises(sqlite3.IntegrityError,
                                   match=f"^illegal_initial_state:{name}$"):
                    rows.SUBJECTS[name](conn, state.value)
        finally:
            conn.execute("ROLLBACK TO birth")
            conn.execute("RELEASE birth")


def test_writing_the_same_state_is_not_an_edge(conn: sqlite3.Connection) -> None:
    """A rewrite of the current value changes nothing and is not refused, even when
    terminal (touching updated_at on an audit row is not a reopen)."""
    machine = MACHINES["transition"]
    subject = rows.subject_in_state(conn, machine, "completed")
    conn.execute("UPDATE view_transitions SET state = 'completed', updated_at = 1 WHERE rowid = ?",
                 (subject.rowid,))
    assert rows.current_state(conn, machine, subject) == "completed"


def test_transport_terminal_never_runs_again(conn: sqlite3.Connection) -> None:
    machine = MACHINES["transport"]
    for terminal in ("committed", "rolled_back"):
        subject = rows.subject_in_state(conn, machine, terminal)
        for phase in ("intent", "moved", "inspected", "committed", "rolled_back"):
            if phase == terminal:
                continue
            with pytest.raises(sqlite3.IntegrityError, match="^illegal_edge:transport$"):
                conn.execute("UPDATE view_transitions SET transport_phase = ? WHERE rowid = ?",
                             (phase, subject.rowid))
        # the transition state column is a separate machine and still moves
        assert rows.current_state(conn, MACHINES["transition"], subject) == "prepared"


# --------------------------------------------------------------------------- counters


def _context(conn: sqlite3.Connection) -> rows.Subject:
    return rows.subject_in_state(conn, MACHINES["work_context"], "released")


def _generation(conn: sqlite3.Connection, subject: rows.Subject) -> int:
    return conn.execute("SELECT claim_generation FROM work_contexts WHERE rowid = ?",
                        (subject.rowid,)).fetchone()[0]


def test_claim_edge_without_generation_bump_is_refused(conn: sqlite3.Connection) -> None:
    subject = _context(conn)
    frame = subject.extras["frame_id"]
    for bump in ("claim_generation", "claim_generation + 2", "claim_generation - 1"):
        with pytest.raises(sqlite3.IntegrityError,
                           match="^invariant:claim_edge_bumps_generation$"):
            conn.execute(f"UPDATE work_contexts SET claim_state = 'held',"
                         f" foreground_frame_id = ?, claim_generation = {bump}"
                         f" WHERE rowid = ?", (frame, subject.rowid))
    assert _generation(conn, subject) == 0
    conn.execute("UPDATE work_contexts SET claim_state = 'held', foreground_frame_id = ?,"
                 " claim_generation = claim_generation + 1 WHERE rowid = ?",
                 (frame, subject.rowid))
    assert _generation(conn, subject) == 1


def test_foreground_transfer_without_generation_bump_is_refused(
        conn: sqlite3.Connection) -> None:
    subject = _context(conn)
    frame = subject.extras["frame_id"]
    conn.execute("UPDATE work_contexts SET claim_state = 'held', foreground_frame_id = ?,"
                 " claim_generation = claim_generation + 1 WHERE rowid = ?",
                 (frame, subject.rowid))
    context_id = conn.execute("SELECT work_context_id FROM work_contexts WHERE rowid = ?",
                              (subject.rowid,)).fetchone()[0]
    child = rows.new_id()
    rows.insert_frame(conn, child, parent=frame, context_id=context_id,
                      project_id=rows.PROJECT_2)
    with pytest.raises(sqlite3.IntegrityError, match="^invariant:claim_edge_bumps_generation$"):
        conn.execute("UPDATE work_contexts SET foreground_frame_id = ? WHERE rowid = ?",
                     (child, subject.rowid))
    conn.execute("UPDATE work_contexts SET foreground_frame_id = ?,"
                 " claim_generation = claim_generation + 1 WHERE rowid = ?",
                 (child, subject.rowid))
    assert _generation(conn, subject) == 2


def test_claim_generation_moves_only_on_claim_edges(conn: sqlite3.Connection) -> None:
    subject = _context(conn)
    with pytest.raises(sqlite3.IntegrityError,
                       match="^invariant:claim_generation_only_moves_on_edges$"):
        conn.execute("UPDATE work_contexts SET claim_generation = claim_generation + 1"
                     " WHERE rowid = ?", (subject.rowid,))
    # unrelated columns may change without a bump
    conn.execute("UPDATE work_contexts SET background_state = 'known', updated_at = 5"
                 " WHERE rowid = ?", (subject.rowid,))
    assert _generation(conn, subject) == 0


def test_placement_edge_without_generation_bump_is_refused(conn: sqlite3.Connection) -> None:
    subject = rows.subject_in_state(conn, MACHINES["placement"], "staged")
    with pytest.raises(sqlite3.IntegrityError,
                       match="^invariant:placement_edge_bumps_generation$"):
        conn.execute("UPDATE frame_placements SET state = 'active' WHERE rowid = ?",
                     (subject.rowid,))
    launch = rows.new_id()
    rows.insert_launch(conn, launch)
    surface = rows.new_id()
    rows.insert_surface(conn, surface, launch_id=launch)
    with pytest.raises(sqlite3.IntegrityError,
                       match="^invariant:placement_edge_bumps_generation$"):
        conn.execute("UPDATE frame_placements SET surface_id = ? WHERE rowid = ?",
                     (surface, subject.rowid))
    conn.execute("UPDATE frame_placements SET surface_id = ?, generation = generation + 1"
                 " WHERE rowid = ?", (surface, subject.rowid))
    rows.edge_update(conn, MACHINES["placement"], subject, "active")
    generation = conn.execute("SELECT generation FROM frame_placements WHERE rowid = ?",
                              (subject.rowid,)).fetchone()[0]
    assert generation == 2


@pytest.mark.parametrize(("column", "value"), [
    ("mode", "'direct'"), ("active_frame_id", f"'{rows.WORKSPACE}'"), ("state", "'degraded'"),
])
def test_view_mutation_without_revision_bump_is_refused(conn: sqlite3.Connection, column: str,
                                                        value: str) -> None:
    subject = rows.subject_in_state(conn, MACHINES["user_view"], "ready")
    for revision in ("revision", "revision + 2"):
        with pytest.raises(sqlite3.IntegrityError,
                           match="^invariant:view_mutation_bumps_revision$"):
            conn.execute(f"UPDATE user_views SET {column} = {value}, revision = {revision}"
                         f" WHERE rowid = ?", (subject.rowid,))
    conn.execute(f"UPDATE user_views SET {column} = {value}, revision = revision + 1"
                 f" WHERE rowid = ?", (subject.rowid,))
    assert conn.execute("SELECT revision FROM user_views WHERE rowid = ?",
                        (subject.rowid,)).fetchone()[0] == 1


def test_counter_refusal_maps_to_named_invariant(conn: sqlite3.Connection) -> None:
    with write_transaction(conn):
        subject = rows.subject_in_state(conn, MACHINES["user_view"], "ready")
    with pytest.raises(InvariantViolation) as refused, write_transaction(conn):
        conn.execute("UPDATE user_views SET mode = 'direct' WHERE rowid = ?", (subject.rowid,))
    assert refused.value.code == "view_mutation_bumps_revision"


def test_control_turn_submits_at_most_once(conn: sqlite3.Connection) -> None:
    subject = rows.subject_in_state(conn, MACHINES["control_turn"], "prepared")
    conn.execute("UPDATE control_turns SET state = 'submitted',"
                 " submission_count = submission_count + 1 WHERE rowid = ?", (subject.rowid,))
    with pytest.raises(sqlite3.IntegrityError, match="CHECK constraint failed"):
        conn.execute("UPDATE control_turns SET submission_count = 2 WHERE rowid = ?",
                     (subject.rowid,))
    with pytest.raises(sqlite3.IntegrityError,
                       match="^invariant:submission_count_never_decreases$"):
        conn.execute("UPDATE control_turns SET submission_count = 0 WHERE rowid = ?",
                     (subject.rowid,))


def test_frame_close_reason_follows_lifecycle(conn: sqlite3.Connection) -> None:
    subject = rows.subject_in_state(conn, MACHINES["frame"], "open")
    with pytest.raises(sqlite3.IntegrityError, match="open_frame_has_no_close_reason"):
        conn.execute("UPDATE frames SET lifecycle_state = 'closing' WHERE rowid = ?",
                     (subject.rowid,))
    rows.edge_update(conn, MACHINES["frame"], subject, "closing")
    rows.edge_update(conn, MACHINES["frame"], subject, "closed")
    with pytest.raises(sqlite3.IntegrityError, match="close_reason_only_when_closing"):
        conn.execute("UPDATE frames SET lifecycle_state = 'open' WHERE rowid = ?",
                     (subject.rowid,))


def test_completed_close_requires_a_claimed_handoff(conn: sqlite3.Connection) -> None:
    subject = rows.subject_in_state(conn, MACHINES["frame"], "open")
    frame_id = conn.execute("SELECT frame_id FROM frames WHERE rowid = ?",
                            (subject.rowid,)).fetchone()[0]
    conn.execute("UPDATE frames SET lifecycle_state = 'closing', close_reason = 'completed'"
                 " WHERE rowid = ?", (subject.rowid,))
    with pytest.raises(sqlite3.IntegrityError,
                       match="^invariant:completed_requires_claimed_handoff$"):
        conn.execute("UPDATE frames SET lifecycle_state = 'closed' WHERE rowid = ?",
                     (subject.rowid,))
    transition = rows.new_id()
    rows.insert_transition(conn, transition, kind="complete_return")
    rows.insert_handoff(conn, rows.new_id(), transition_id=transition, source=frame_id)
    with pytest.raises(sqlite3.IntegrityError,
                       match="^invariant:completed_requires_claimed_handoff$"):
        conn.execute("UPDATE frames SET lifecycle_state = 'closed' WHERE rowid = ?",
                     (subject.rowid,))
    conn.execute("UPDATE completion_handoffs SET first_claimed_at = 1 WHERE transition_id = ?",
                 (transition,))
    conn.execute("UPDATE frames SET lifecycle_state = 'closed' WHERE rowid = ?",
                 (subject.rowid,))


def test_a_parent_with_an_open_child_cannot_close(conn: sqlite3.Connection) -> None:
    parent = rows.subject_in_state(conn, MACHINES["frame"], "open")
    parent_id = conn.execute("SELECT frame_id FROM frames WHERE rowid = ?",
                             (parent.rowid,)).fetchone()[0]
    child = rows.new_id()
    rows.insert_frame(conn, child, parent=parent_id, depth=2)
    with pytest.raises(sqlite3.IntegrityError,
                       match="^invariant:no_open_child_under_closing_parent$"):
        rows.edge_update(conn, MACHINES["frame"], parent, "closing")
    conn.execute("UPDATE frames SET lifecycle_state = 'closing', close_reason = 'dismissed'"
                 " WHERE frame_id = ?", (child,))
    rows.edge_update(conn, MACHINES["frame"], parent, "closing")  # a closing child is fine
    assert rows.current_state(conn, MACHINES["frame"], parent) == "closing"


def test_a_child_reopens_only_under_an_open_parent(conn: sqlite3.Connection) -> None:
    parent = rows.subject_in_state(conn, MACHINES["frame"], "open")
    parent_id = conn.execute("SELECT frame_id FROM frames WHERE rowid = ?",
                             (parent.rowid,)).fetchone()[0]
    child = rows.new_id()
    rows.insert_frame(conn, child, parent=parent_id, depth=2)
    for state in ("closing", "closed"):
        conn.execute("UPDATE frames SET lifecycle_state = ?, close_reason = 'dismissed'"
                     " WHERE frame_id = ?", (state, child))
    rows.edge_update(conn, MACHINES["frame"], parent, "closing")
    rows.edge_update(conn, MACHINES["frame"], parent, "closed")
    with pytest.raises(sqlite3.IntegrityError, match="^invariant:reopen_needs_open_parent$"):
        conn.execute("UPDATE frames SET lifecycle_state = 'open', close_reason = NULL"
                     " WHERE frame_id = ?", (child,))
    rows.edge_update(conn, MACHINES["frame"], parent, "open")
    conn.execute("UPDATE frames SET lifecycle_state = 'open', close_reason = NULL"
                 " WHERE frame_id = ?", (child,))
