"""Engine requests: idempotent retries, fingerprint conflicts, and whole journeys.

A retried request (same UUID, same normalized meaning) returns the stored
result and writes nothing; the same UUID with another meaning is refused.
Journeys drive the named operations end to end on a real registry and assert
the rows the contract names: frames, transitions, control turns, placements,
views and the WorkContext claim generation.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from core.config.config import AutomationConfig
from core.context.requests import fingerprint
from core.engine.engine import Engine
from core.model.enums import ClaimState, Provider, ViewMode
from core.model.errors import Conflict, RequestConflict, SwitchboardError
from core.runtime import claims
from storage.connection import write_transaction
from storage.operations import frames as frames_ops
from tests.core.engines import counts, dump, fresh_engine, rid, row

RID = "20000000-0000-4000-8000-000000000001"


@pytest.fixture
def engine(tmp_path: Path) -> Engine:
    engine = fresh_engine(tmp_path / "home")
    yield engine
    engine.conn.close()


@pytest.fixture
def deep_engine(tmp_path: Path) -> Engine:
    engine = fresh_engine(tmp_path / "home", automation=AutomationConfig(initial_max_depth=2))
    yield engine
    engine.conn.close()


@dataclass
class World:
    view_id: str = ""
    workspace_id: str = ""
    child_id: str = ""
    context_id: str = ""


def entered(engine: Engine) -> World:
    route = engine.project_enter(rid(900), "alpha")
    context = engine.conn.execute("SELECT work_context_id FROM frames WHERE frame_id = ?",
                                  (route.frame_id,)).fetchone()[0]
    return World(route.view_id, route.frame_id, "", context)


def pushed(engine: Engine) -> World:
    """Entered, a child pushed and its brief claimed: the view shows the child."""
    world = entered(engine)
    push = engine.frame_push(rid(901), world.workspace_id, "child", "do the thing")
    world.child_id = push.target_frame_id
    claims.claim_for_frame(engine, world.child_id, None)
    return world


def backed(engine: Engine) -> World:
    world = pushed(engine)
    engine.frame_back(rid(902), world.view_id)
    return world


def closed_child(engine: Engine) -> World:
    world = pushed(engine)
    engine.frame_close(rid(903), world.child_id)
    return world


def started(engine: Engine) -> World:
    world = entered(engine)
    engine.frame_start(rid(904), world.workspace_id)
    return world


def nonterminal_transitions(engine: Engine) -> int:
    return engine.conn.execute(
        "SELECT COUNT(*) FROM view_transitions WHERE state IN"
        " ('prepared', 'executing', 'presented', 'awaiting_claim', 'settling')").fetchone()[0]


# --------------------------------------------------------------------------- idempotency

Call = Callable[[Engine, World, str], Any]

RETRIES: list = [
    pytest.param(lambda e: World(), lambda e, w, r: e.project_enter(r, "alpha"),
                 id="project.enter-first"),
    pytest.param(entered, lambda e, w, r: e.project_enter(r, "alpha"), id="project.enter-again"),
    pytest.param(entered, lambda e, w, r: e.frame_push(r, w.workspace_id, "child", "brief"),
                 id="frame.push"),
    pytest.param(entered, lambda e, w, r: e.frame_start(r, w.workspace_id), id="frame.start"),
    pytest.param(pushed, lambda e, w, r: e.frame_complete(r, w.child_id, "done", "next"),
                 id="frame.complete"),
    pytest.param(closed_child, lambda e, w, r: e.frame_reopen(r, w.child_id), id="frame.reopen"),
    pytest.param(entered, lambda e, w, r: e.view_mode(r, w.view_id, ViewMode.DIRECT),
                 id="view.mode-explicit"),
    pytest.param(entered, lambda e, w, r: e.view_retire(r, w.view_id), id="view.retire"),
    pytest.param(started, lambda e, w, r: e.context_release(r, w.context_id),
                 id="context.release"),
    pytest.param(backed, lambda e, w, r: e.view_focus(r, w.view_id, w.child_id),
                 id="view.focus"),
    pytest.param(entered, lambda e, w, r: e.view_mode(r, w.view_id),
                 id="view.mode-toggle"),
    pytest.param(pushed, lambda e, w, r: e.frame_back(r, w.view_id),
                 id="frame.back"),
    pytest.param(pushed, lambda e, w, r: e.frame_close(r, w.child_id),
                 id="frame.close"),
]


@pytest.mark.parametrize(("setup", "call"), RETRIES)
def test_retry_returns_the_stored_result_and_writes_nothing(
        engine: Engine, setup: Callable[[Engine], World], call: Call) -> None:
    world = setup(engine)
    first = call(engine, world, RID)
    before = dump(engine.conn)
    second = call(engine, world, RID)
    assert second == first
    assert dump(engine.conn) == before


def test_push_retry_after_the_claim_still_creates_nothing(engine: Engine) -> None:
    world = entered(engine)
    first = engine.frame_push(RID, world.workspace_id, "child", "brief")
    claims.claim_for_frame(engine, first.target_frame_id, None)
    before = counts(engine.conn)
    again = engine.frame_push(RID, world.workspace_id, "child", "brief")
    assert (again.transition_id, again.target_frame_id) == (first.transition_id,
                                                            first.target_frame_id)
    assert again.state == "completed"  # the stored outcome, read now
    assert counts(engine.conn) == before
    assert before["frames"] == 2 and before["provider_sessions"] == 1
    assert before["launch_intents"] == 1 and before["transition_briefs"] == 1


def test_normalized_payload_is_the_same_request(engine: Engine) -> None:
    """Whitespace the fingerprint normalizes away does not make a new request."""
    world = entered(engine)
    first = engine.frame_push(RID, world.workspace_id, "child", "do  the   thing")
    before = dump(engine.conn)
    again = engine.frame_push(RID, world.workspace_id, "  child ", "do the thing")
    assert again == first
    assert dump(engine.conn) == before


def test_presentation_capability_is_not_part_of_the_fingerprint() -> None:
    semantic = {"view_id": "v", "target": "f"}
    assert fingerprint("view.focus", semantic) == fingerprint(
        "view.focus", {**semantic, "desktop_focus_available": True})
    assert fingerprint("view.focus", semantic) != fingerprint("view.focus",
                                                              {**semantic, "target": "g"})
    assert fingerprint("view.focus", semantic) != fingerprint("view.back", semantic)


CONFLICTS: list = [
    pytest.param(entered,
                 lambda e, w, r: e.frame_push(r, w.workspace_id, "child", "brief"),
                 lambda e, w, r: e.frame_push(r, w.workspace_id, "child", "another brief"),
                 id="push-other-brief"),
    pytest.param(entered,
                 lambda e, w, r: e.frame_push(r, w.workspace_id, "child", "brief"),
                 lambda e, w, r: e.frame_push(r, w.workspace_id, "other child", "brief"),
                 id="push-other-title"),
    pytest.param(lambda e: World(),
                 lambda e, w, r: e.project_enter(r, "alpha"),
                 lambda e, w, r: e.project_enter(r, "beta"), id="enter-other-project"),
    pytest.param(entered,
                 lambda e, w, r: e.view_mode(r, w.view_id, ViewMode.DIRECT),
                 lambda e, w, r: e.view_mode(r, w.view_id, ViewMode.NAVIGATOR),
                 id="mode-other-mode"),
    pytest.param(pushed,
                 lambda e, w, r: e.frame_complete(r, w.child_id, "done", "next"),
                 lambda e, w, r: e.frame_complete(r, w.child_id, "done differently", "next"),
                 id="complete-other-summary"),
    pytest.param(entered,
                 lambda e, w, r: e.frame_start(r, w.workspace_id, Provider.CLAUDE),
                 lambda e, w, r: e.frame_start(r, w.workspace_id, Provider.CODEX),
                 id="start-other-provider"),
    pytest.param(entered,
                 lambda e, w, r: e.frame_push(r, w.workspace_id, "child", "brief"),
                 lambda e, w, r: e.frame_reopen(r, w.workspace_id),
                 id="other-operation"),
]


@pytest.mark.parametrize(("setup", "first", "second"), CONFLICTS)
def test_same_request_id_with_another_meaning_is_refused(
        engine: Engine, setup: Callable[[Engine], World], first: Call, second: Call) -> None:
    world = setup(engine)
    first(engine, world, RID)
    before = dump(engine.conn)
    with pytest.raises(RequestConflict) as refused:
        second(engine, world, RID)
    assert refused.value.code == "request_conflict"
    assert RID in refused.value.message
    assert dump(engine.conn) == before


def test_a_refused_request_leaves_no_record(engine: Engine) -> None:
    """A body that raises rolls its request record back: the id stays usable."""
    world = entered(engine)
    before = dump(engine.conn)
    with pytest.raises(Conflict):
        engine.frame_complete(RID, world.workspace_id, "done", "")  # a workspace cannot
    assert dump(engine.conn) == before
    push = engine.frame_push(RID, world.workspace_id, "child", "brief")
    assert push.kind == "push"


# --------------------------------------------------------------------------- journeys


def context_of(engine: Engine, world: World) -> dict[str, Any]:
    return row(engine.conn, "SELECT * FROM work_contexts WHERE work_context_id = ?",
               world.context_id)


def view_of(engine: Engine, world: World) -> dict[str, Any]:
    return row(engine.conn, "SELECT * FROM user_views WHERE view_id = ?", world.view_id)


def placement_of(engine: Engine, frame_id: str) -> tuple[str, int]:
    found = row(engine.conn, "SELECT state, generation FROM frame_placements"
                             " WHERE frame_id = ? AND state <> 'orphaned'", frame_id)
    return found["state"], found["generation"]


def transition(engine: Engine, transition_id: str) -> dict[str, Any]:
    return row(engine.conn, "SELECT * FROM view_transitions WHERE transition_id = ?",
               transition_id)


def control_of(engine: Engine, transition_id: str) -> dict[str, Any] | None:
    found = engine.conn.execute("SELECT * FROM control_turns WHERE transition_id = ?",
                                (transition_id,)).fetchone()
    return dict(found) if found else None


def frame(engine: Engine, frame_id: str) -> dict[str, Any]:
    return row(engine.conn, "SELECT * FROM frames WHERE frame_id = ?", frame_id)


def test_enter_push_claim_back_focus_complete_claim_settle(engine: Engine) -> None:
    world = entered(engine)
    ws = world.workspace_id
    assert view_of(engine, world)["active_frame_id"] == ws
    assert view_of(engine, world)["revision"] == 0
    assert placement_of(engine, ws) == ("stopped_affinity", 0)
    assert (context_of(engine, world)["claim_state"], context_of(engine, world)[
        "claim_generation"]) == ("released", 0)

    # push: child, brief, claim_brief turn, start bundle, presented, awaiting the claim
    push = engine.frame_push(rid(1), ws, "child", "do the thing")
    child = push.target_frame_id
    world.child_id = child
    assert (push.kind, push.state, push.transport_phase) == ("push", "awaiting_claim",
                                                             "committed")
    assert frame(engine, child)["parent_frame_id"] == ws
    assert frame(engine, child)["depth"] == 1
    assert frame(engine, child)["work_context_id"] == world.context_id
    brief = row(engine.conn, "SELECT * FROM transition_briefs WHERE transition_id = ?",
                push.transition_id)
    assert (brief["brief"], brief["first_claimed_at"]) == ("do the thing", None)
    session_key = frame(engine, child)["current_session_key"]
    assert session_key is not None
    membership = row(engine.conn, "SELECT * FROM frame_sessions WHERE frame_id = ?", child)
    assert (membership["session_key"], membership["ordinal"],
            membership["membership_reason"]) == (session_key, 1, "started")
    control = control_of(engine, push.transition_id)
    assert control is not None
    assert (control["kind"], control["state"], control["target_session_key"]) == (
        "claim_brief", "prepared", session_key)
    assert row(engine.conn, "SELECT state, action FROM launch_intents WHERE frame_id = ?",
               child) == {"state": "planned", "action": "new"}
    assert placement_of(engine, child) == ("active", 2)  # stopped_affinity->staged->active
    assert view_of(engine, world)["active_frame_id"] == child
    assert view_of(engine, world)["revision"] == 1
    context = context_of(engine, world)
    assert (context["claim_state"], context["foreground_frame_id"],
            context["claim_generation"]) == ("held", child, 1)

    # the child claims its brief: the push settles; a second claim changes nothing
    claim = claims.claim_for_frame(engine, child, session_key)
    assert (claim.kind, claim.body, claim.first_claim) == ("brief", "do the thing", True)
    assert transition(engine, push.transition_id)["state"] == "completed"
    assert row(engine.conn, "SELECT first_claimed_at FROM transition_briefs")[
        "first_claimed_at"] is not None
    before = dump(engine.conn)
    again = claims.claim_for_frame(engine, child, session_key)
    assert (again.kind, again.body, again.first_claim) == ("brief", "do the thing", False)
    assert dump(engine.conn) == before

    # back: the exact parent is presented; no handoff, no control turn
    back = engine.frame_back(rid(2), world.view_id)
    assert (back.kind, back.state, back.target_frame_id) == ("back", "completed", ws)
    assert control_of(engine, back.transition_id) is None
    assert engine.conn.execute("SELECT COUNT(*) FROM completion_handoffs").fetchone()[0] == 0
    assert frame(engine, child)["lifecycle_state"] == "open"
    assert placement_of(engine, child) == ("parked", 3)
    assert view_of(engine, world)["active_frame_id"] == ws
    assert view_of(engine, world)["revision"] == 2
    assert (context_of(engine, world)["foreground_frame_id"],
            context_of(engine, world)["claim_generation"]) == (ws, 2)

    # focus the child again: navigation only
    focus = engine.view_focus(rid(3), world.view_id, child)
    assert (focus.kind, focus.state) == ("focus", "completed")
    assert placement_of(engine, child) == ("active", 4)
    assert view_of(engine, world)["revision"] == 3
    assert (context_of(engine, world)["foreground_frame_id"],
            context_of(engine, world)["claim_generation"]) == (child, 3)

    # complete-and-return: handoff stored, child closing, parent presented, turn prepared
    complete = engine.frame_complete(rid(4), child, "it is done", "review it")
    assert (complete.kind, complete.state, complete.target_frame_id) == (
        "complete_return", "awaiting_claim", ws)
    assert (frame(engine, child)["lifecycle_state"],
            frame(engine, child)["close_reason"]) == ("closing", "completed")
    handoff = row(engine.conn, "SELECT * FROM completion_handoffs WHERE transition_id = ?",
                  complete.transition_id)
    assert (handoff["summary"], handoff["next_action"], handoff["first_claimed_at"]) == (
        "it is done", "review it", None)
    control = control_of(engine, complete.transition_id)
    assert control is not None
    assert (control["kind"], control["state"], control["transport"],
            control["submission_count"]) == ("claim_handoff", "prepared", "resume_initial", 0)
    assert view_of(engine, world)["active_frame_id"] == ws
    assert view_of(engine, world)["revision"] == 4
    assert placement_of(engine, child) == ("parked", 5)
    assert (context_of(engine, world)["foreground_frame_id"],
            context_of(engine, world)["claim_generation"]) == (ws, 4)

    # the parent claims the handoff: the child closes and its runtime stops
    handoff_claim = claims.claim_for_frame(engine, ws, None)
    assert (handoff_claim.kind, handoff_claim.summary, handoff_claim.next_action) == (
        "handoff", "it is done", "review it")
    assert (frame(engine, child)["lifecycle_state"],
            frame(engine, child)["close_reason"]) == ("closed", "completed")
    assert transition(engine, complete.transition_id)["state"] == "settling"
    assert control_of(engine, complete.transition_id)["state"] in ("superseded", "settled")
    assert row(engine.conn, "SELECT state FROM launch_intents WHERE frame_id = ?",
               child)["state"] in ("superseded", "failed")
    assert row(engine.conn, "SELECT lifecycle_state FROM surfaces")["lifecycle_state"] \
        == "retired"
    assert row(engine.conn, "SELECT runtime_presence FROM provider_sessions WHERE"
                            " session_key = ?", session_key)["runtime_presence"] == "stopped"
    assert placement_of(engine, child) == ("stopped_affinity", 6)

    # the parent's post-claim Stop settles the presentation
    assert claims.settle_after_stop(engine, ws) == [complete.transition_id]
    assert transition(engine, complete.transition_id)["state"] == "completed"
    assert nonterminal_transitions(engine) == 0
    assert context_of(engine, world)["claim_generation"] == 4  # settle is not a claim edge
    states = {r[0] for r in engine.conn.execute("SELECT state FROM request_records")}
    assert states == {"completed"}


def test_a_settled_push_leaves_no_pending_control_turn(engine: Engine) -> None:
    world = pushed(engine)
    pending = engine.conn.execute(
        "SELECT c.state FROM control_turns c JOIN view_transitions t USING (transition_id)"
        " WHERE t.state = 'completed' AND c.state NOT IN ('settled', 'failed', 'superseded')"
    ).fetchall()
    assert world.child_id
    assert [tuple(p) for p in pending] == []


def test_human_close_presents_the_parent_then_stops_and_closes(engine: Engine) -> None:
    world = pushed(engine)
    child = world.child_id
    close = engine.frame_close(rid(10), child)
    assert (close.kind, close.state, close.target_frame_id) == (
        "human_close", "completed", world.workspace_id)
    assert (frame(engine, child)["lifecycle_state"],
            frame(engine, child)["close_reason"]) == ("closed", "dismissed")
    assert view_of(engine, world)["active_frame_id"] == world.workspace_id
    assert context_of(engine, world)["foreground_frame_id"] == world.workspace_id
    assert placement_of(engine, child)[0] == "stopped_affinity"
    assert engine.conn.execute("SELECT COUNT(*) FROM completion_handoffs").fetchone()[0] == 0
    assert control_of(engine, close.transition_id) is None
    assert row(engine.conn, "SELECT state FROM launch_intents")["state"] == "superseded"
    assert row(engine.conn, "SELECT lifecycle_state FROM surfaces")["lifecycle_state"] \
        == "retired"
    assert nonterminal_transitions(engine) == 0


def test_close_refusals(deep_engine: Engine) -> None:
    engine = deep_engine
    world = pushed(engine)
    with pytest.raises(Conflict) as refused:
        engine.frame_close(rid(20), world.workspace_id)
    assert refused.value.code == "not_a_task"
    grandchild = engine.frame_push(rid(21), world.child_id, "grandchild", "deeper")
    claims.claim_for_frame(engine, grandchild.target_frame_id, None)
    with pytest.raises(Conflict) as refused:
        engine.frame_close(rid(22), world.child_id)
    assert refused.value.code == "has_open_children"
    engine.frame_close(rid(23), grandchild.target_frame_id)
    with pytest.raises(Conflict):
        engine.frame_close(rid(24), grandchild.target_frame_id)


def test_reopen_keeps_identity_and_lineage(engine: Engine) -> None:
    world = closed_child(engine)
    child = world.child_id
    before = frame(engine, child)
    reopened = engine.frame_reopen(rid(30), child)
    assert (reopened.frame_id, reopened.lifecycle_state) == (child, "open")
    after = frame(engine, child)
    assert after["close_reason"] is None
    for key in ("frame_id", "parent_frame_id", "project_id", "work_context_id", "depth",
                "title", "role", "current_session_key", "created_at"):
        assert after[key] == before[key], key
    assert engine.conn.execute("SELECT COUNT(*) FROM frame_sessions WHERE frame_id = ?",
                               (child,)).fetchone()[0] == 1
    assert engine.conn.execute("SELECT COUNT(*) FROM launch_intents").fetchone()[0] == 1
    focus = engine.view_focus(rid(31), world.view_id, child)
    assert focus.state == "completed"
    assert view_of(engine, world)["active_frame_id"] == child
    with pytest.raises(Conflict):
        engine.frame_reopen(rid(32), child)  # already open


def test_reopen_under_a_closed_parent_is_refused(deep_engine: Engine) -> None:
    engine = deep_engine
    world = pushed(engine)
    grandchild = engine.frame_push(rid(40), world.child_id, "grandchild", "deeper")
    claims.claim_for_frame(engine, grandchild.target_frame_id, None)
    engine.frame_close(rid(41), grandchild.target_frame_id)
    engine.frame_close(rid(42), world.child_id)
    before = dump(engine.conn)
    with pytest.raises(Conflict) as refused:
        engine.frame_reopen(rid(43), grandchild.target_frame_id)
    assert refused.value.code == "parent_closed"
    assert dump(engine.conn) == before


def test_push_beyond_the_depth_limit_is_refused(engine: Engine) -> None:
    world = pushed(engine)  # initial_max_depth = 1 by default
    before = dump(engine.conn)
    with pytest.raises(Conflict) as refused:
        engine.frame_push(rid(50), world.child_id, "grandchild", "too deep")
    assert refused.value.code == "depth_exceeded"
    assert dump(engine.conn) == before


def test_depth_limit_follows_config(deep_engine: Engine) -> None:
    world = pushed(deep_engine)
    grandchild = deep_engine.frame_push(rid(51), world.child_id, "grandchild", "ok")
    assert frame(deep_engine, grandchild.target_frame_id)["depth"] == 2
    claims.claim_for_frame(deep_engine, grandchild.target_frame_id, None)
    with pytest.raises(Conflict) as refused:
        deep_engine.frame_push(rid(52), grandchild.target_frame_id, "too deep", "no")
    assert refused.value.code == "depth_exceeded"


def _make_surface_live(engine: Engine) -> str:
    surface_id = engine.conn.execute("SELECT surface_id FROM surfaces").fetchone()[0]
    with write_transaction(engine.conn) as conn:
        conn.execute("INSERT INTO tmux_servers (tmux_server_id, host_id, socket_path,"
                     " server_pid, server_start_time, observed_at)"
                     " VALUES ('srv', ?, '/tmp/x.sock', 1, 1, 1)", (engine.host_id,))
        conn.execute("UPDATE surfaces SET lifecycle_state = 'live', tmux_server_id = 'srv',"
                     " pane_id = '%1' WHERE surface_id = ?", (surface_id,))
    return surface_id


def test_retire_refuses_while_a_surface_is_live(engine: Engine) -> None:
    world = started(engine)
    surface_id = _make_surface_live(engine)
    before = dump(engine.conn)
    with pytest.raises(Conflict) as refused:
        engine.view_retire(rid(60), world.view_id)
    assert refused.value.code == "live_surfaces"
    assert dump(engine.conn) == before
    with write_transaction(engine.conn) as conn:
        conn.execute("UPDATE surfaces SET lifecycle_state = 'dead' WHERE surface_id = ?",
                     (surface_id,))
    revision = view_of(engine, world)["revision"]
    retired = engine.view_retire(rid(61), world.view_id)
    assert view_of(engine, world)["state"] == "retired"
    assert retired.revision == revision + 1


def test_retire_refuses_while_a_transition_is_in_flight(engine: Engine) -> None:
    world = entered(engine)
    engine.frame_push(rid(62), world.workspace_id, "child", "brief")  # awaiting its claim
    with pytest.raises(Conflict):
        engine.view_retire(rid(63), world.view_id)
    assert view_of(engine, world)["state"] == "ready"


RETIRED_VIEW_CALLS: list = [
    pytest.param(entered, lambda e, w, r: e.frame_push(r, w.workspace_id, "child", "brief"),
                 id="push"),
    pytest.param(pushed, lambda e, w, r: e.frame_complete(r, w.child_id, "done", ""),
                 id="complete"),
    pytest.param(entered, lambda e, w, r: e.view_mode(r, w.view_id, ViewMode.DIRECT),
                 id="mode"),
    pytest.param(backed, lambda e, w, r: e.view_focus(r, w.view_id, w.child_id), id="focus"),
    pytest.param(pushed, lambda e, w, r: e.frame_back(r, w.view_id), id="back"),
    pytest.param(pushed, lambda e, w, r: e.frame_close(r, w.child_id), id="close"),
]


@pytest.mark.parametrize(("setup", "call"), RETIRED_VIEW_CALLS)
def test_retired_view_is_not_mutated(engine: Engine, setup: Callable[[Engine], World],
                                     call: Call) -> None:
    world = setup(engine)
    engine.view_retire(rid(75), world.view_id)
    frozen = view_of(engine, world)
    try:
        call(engine, world, RID)
    except SwitchboardError:
        pass
    assert view_of(engine, world) == frozen


def test_reentry_after_retire_works_in_the_new_view(engine: Engine) -> None:
    world = entered(engine)
    engine.view_retire(rid(70), world.view_id)
    retired_before = view_of(engine, world)
    route = engine.project_enter(rid(71), "alpha")
    assert route.view_id != world.view_id
    push = engine.frame_push(rid(72), world.workspace_id, "child", "brief")
    assert push.view_id == route.view_id
    assert view_of(engine, world) == retired_before


def test_reopen_after_reentry_lands_in_the_live_view(engine: Engine) -> None:
    world = closed_child(engine)
    engine.view_retire(rid(76), world.view_id)
    route = engine.project_enter(rid(77), "alpha")
    engine.frame_reopen(rid(78), world.child_id)
    owner = row(engine.conn, "SELECT view_id FROM frame_placements WHERE frame_id = ?"
                             " AND state <> 'orphaned'", world.child_id)
    assert owner["view_id"] == route.view_id
    focus = engine.view_focus(rid(79), route.view_id, world.child_id)
    assert focus.state == "completed"


def test_complete_with_an_open_child_is_refused(deep_engine: Engine) -> None:
    engine = deep_engine
    world = pushed(engine)
    grandchild = engine.frame_push(rid(80), world.child_id, "grandchild", "deeper")
    claims.claim_for_frame(engine, grandchild.target_frame_id, None)
    try:
        engine.frame_complete(rid(81), world.child_id, "done", "")
        claims.claim_for_frame(engine, world.workspace_id, None)
    except Conflict as refused:
        assert refused.code == "has_open_children"
    orphans = engine.conn.execute(
        "SELECT COUNT(*) FROM frames c JOIN frames p ON p.frame_id = c.parent_frame_id"
        " WHERE c.lifecycle_state = 'open' AND p.lifecycle_state <> 'open'").fetchone()[0]
    assert orphans == 0


# --------------------------------------------------------------------------- claims


def test_release_preconditions_and_generation(engine: Engine) -> None:
    world = started(engine)
    assert (context_of(engine, world)["claim_state"],
            context_of(engine, world)["claim_generation"]) == ("held", 1)
    with write_transaction(engine.conn) as conn:
        frames_ops.set_background(conn, world.context_id, "known", engine.now())
    with pytest.raises(Conflict) as refused:
        engine.context_release(rid(90), world.context_id)
    assert refused.value.code == "background_work"
    with write_transaction(engine.conn) as conn:
        frames_ops.set_background(conn, world.context_id, "safe", engine.now())
    surface_id = _make_surface_live(engine)
    with pytest.raises(Conflict) as refused:
        engine.context_release(rid(91), world.context_id)
    assert refused.value.code == "live_surfaces"
    with write_transaction(engine.conn) as conn:
        conn.execute("UPDATE surfaces SET lifecycle_state = 'dead' WHERE surface_id = ?",
                     (surface_id,))
    engine.context_release(rid(92), world.context_id)
    context = context_of(engine, world)
    assert (context["claim_state"], context["foreground_frame_id"],
            context["claim_generation"]) == ("released", None, 2)


def test_blocked_claim_needs_explicit_resolution(engine: Engine) -> None:
    world = entered(engine)
    with write_transaction(engine.conn) as conn:
        frames_ops.block_claim(conn, world.context_id, 0, engine.now())
    assert context_of(engine, world)["claim_generation"] == 1
    with pytest.raises(SwitchboardError) as refused:
        engine.frame_start(rid(95), world.workspace_id)
    assert refused.value.code == "claim_blocked"
    assert engine.conn.execute("SELECT COUNT(*) FROM launch_intents").fetchone()[0] == 0
    engine.context_resolve(rid(96), world.context_id, ClaimState.HELD, world.workspace_id)
    context = context_of(engine, world)
    assert (context["claim_state"], context["foreground_frame_id"],
            context["claim_generation"]) == ("held", world.workspace_id, 2)
    with pytest.raises(Conflict):  # only a blocked claim is resolved
        engine.context_resolve(rid(97), world.context_id, ClaimState.RELEASED)


@pytest.mark.parametrize(("parent", "named", "expected"), [
    (Provider.CODEX, None, Provider.CODEX),  # a Codex agent's task runs on Codex
    (Provider.CLAUDE, None, Provider.CLAUDE),
    (Provider.CODEX, Provider.CLAUDE, Provider.CLAUDE),  # the push names one: that one
    (None, None, None),  # no agent yet: the project's / first enabled provider decides
])
def test_a_pushed_task_runs_on_its_parent_agents_provider(
        engine: Engine, parent: Provider | None, named: Provider | None,
        expected: Provider | None) -> None:
    world = entered(engine)
    if parent is not None:
        engine.frame_start(rid(905), world.workspace_id, parent)
    push = engine.frame_push(rid(906), world.workspace_id, "child", "brief", provider=named)
    preferred = engine.conn.execute("SELECT preferred_provider FROM frames WHERE frame_id = ?",
                                    (push.target_frame_id,)).fetchone()[0]
    assert preferred == (expected.value if expected else None)
    session = engine.conn.execute(
        "SELECT s.provider FROM frames f JOIN provider_sessions s"
        " ON s.session_key = f.current_session_key WHERE f.frame_id = ?",
        (push.target_frame_id,)).fetchone()
    assert session is not None and session[0] == (expected or Provider.CLAUDE).value
