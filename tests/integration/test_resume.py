"""Resume by exact session identity: a stopped frame restarts on its own session, and a
return to a stopped parent resumes it with the fixed line as its initial prompt."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.context.requests import new_request_id
from tests.integration.journey_env import make_live_engine, one, pane_ids, tmux, type_line
from tests.waiting import retry_until


@pytest.fixture
def live(tmp_path: Path, tmux_socket: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("SWITCHBOARD_HOME", str(tmp_path))
    engine = make_live_engine(tmp_path, tmux_socket)
    route = engine.project_enter(new_request_id(), "alpha")
    started = engine.frame_start(new_request_id(), route.frame_id)
    assert retry_until(lambda: one(engine, "SELECT state FROM launch_intents WHERE launch_id = ?",
                                    started.launch_id) == ("bound",), 15.0)
    return engine, route, started


def test_stop_then_start_resumes_the_exact_session(live, tmux_socket: Path) -> None:
    engine, route, started = live
    pane = one(engine, "SELECT main_pane_id FROM user_views")[0]
    engine.frame_stop(new_request_id(), route.frame_id)
    assert retry_until(lambda: pane not in pane_ids(tmux_socket), 15.0)
    assert one(engine, "SELECT runtime_presence FROM provider_sessions") == ("stopped",)
    roles = tmux(tmux_socket, "list-panes", "-a", "-F", "#{session_name} #{@sb_role}")
    assert "switchboard placeholder" in roles.splitlines()  # the empty frame shows in main
    again = engine.frame_start(new_request_id(), route.frame_id)
    assert again.session_key == started.session_key  # same provider session, resumed
    launch = one(engine, "SELECT action, target_session_key FROM launch_intents"
                          " WHERE launch_id = ?", again.launch_id)
    assert launch == ("resume", started.session_key)
    assert one(engine, "SELECT COUNT(*) FROM frame_sessions") == (1,)  # no new membership
    main = one(engine, "SELECT main_pane_id FROM user_views")[0]
    session_id = started.session_key.rsplit(":", 1)[1]
    assert retry_until(lambda: session_id in tmux(tmux_socket, "capture-pane", "-p", "-J",
                                                  "-t", main), 15.0)
    engine.frame_stop(new_request_id(), route.frame_id)
    fresh = engine.frame_start(new_request_id(), route.frame_id, fresh=True)
    assert fresh.session_key != started.session_key
    reasons = [r[0] for r in engine.conn.execute(
        "SELECT membership_reason FROM frame_sessions ORDER BY ordinal")]
    assert reasons == ["started", "rollover"]


def test_return_to_a_stopped_parent_resumes_it_with_the_fixed_line(live,
                                                                   tmux_socket: Path) -> None:
    engine, route, started = live
    push = engine.frame_push(new_request_id(), route.frame_id, "Child", "the child's brief")
    assert retry_until(lambda: one(engine, "SELECT state FROM view_transitions"
                                            " WHERE transition_id = ?", push.transition_id)
                       == ("completed",), 20)
    engine.frame_stop(new_request_id(), route.frame_id)  # the parked parent stops
    assert one(engine, "SELECT runtime_presence FROM provider_sessions WHERE session_key = ?",
                started.session_key) == ("stopped",)
    child_pane = one(engine, "SELECT main_pane_id FROM user_views")[0]
    type_line(tmux_socket, child_pane, "/complete done it :: merge")
    assert retry_until(lambda: one(engine, "SELECT state FROM view_transitions WHERE kind ="
                                            " 'complete_return'") == ("completed",), 25)
    turn = one(engine, "SELECT transport, state, submission_count FROM control_turns"
                        " WHERE kind = 'claim_handoff'")
    assert turn == ("resume_initial", "settled", 1)
    launches = [tuple(r) for r in engine.conn.execute(
        "SELECT action, session_key FROM launch_intents ORDER BY created_at, rowid")]
    assert ("resume", started.session_key) in launches
    parent_main = one(engine, "SELECT main_pane_id FROM user_views")[0]
    screen = tmux(tmux_socket, "capture-pane", "-p", "-J", "-t", parent_main)
    assert screen.count("Call transition_claim() and follow") == 1
    assert "finished and returned" in screen


def test_resume_only_stops_an_idle_live_parent_and_resumes_it_with_the_fixed_line(
        tmp_path: Path, tmux_socket: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """control_turns.transport = resume_only never types into a live pane: the idle
    parent's runtime is stopped and its exact session resumed with the line."""
    from core.config.config import ControlTurnsConfig
    from core.model.enums import TransportPolicy

    monkeypatch.setenv("SWITCHBOARD_HOME", str(tmp_path))
    engine = make_live_engine(tmp_path, tmux_socket, control_turns=ControlTurnsConfig(
        transport=TransportPolicy.RESUME_ONLY))
    route = engine.project_enter(new_request_id(), "alpha")
    started = engine.frame_start(new_request_id(), route.frame_id)
    assert retry_until(lambda: one(engine, "SELECT state FROM launch_intents WHERE launch_id = ?",
                                    started.launch_id) == ("bound",), 15.0)
    parent_pane = one(engine, "SELECT main_pane_id FROM user_views")[0]
    type_line(tmux_socket, parent_pane, "hello")  # a turn of its own: ready after its Stop
    assert retry_until(lambda: one(engine, "SELECT activity FROM provider_sessions WHERE"
                                            " session_key = ?", started.session_key) == ("ready",),
                       15.0)
    push = engine.frame_push(new_request_id(), route.frame_id, "Child", "the child's brief")
    assert retry_until(lambda: one(engine, "SELECT state FROM view_transitions"
                                            " WHERE transition_id = ?", push.transition_id)
                       == ("completed",), 20)
    child_pane = one(engine, "SELECT main_pane_id FROM user_views")[0]
    assert one(engine, "SELECT runtime_presence, activity FROM provider_sessions WHERE"
                        " session_key = ?", started.session_key) == ("live", "ready")

    type_line(tmux_socket, child_pane, "/complete done it :: merge")
    assert retry_until(lambda: one(engine, "SELECT state FROM view_transitions WHERE kind ="
                                            " 'complete_return'") == ("completed",), 25), \
        one(engine, "SELECT state, failure FROM view_transitions WHERE kind ="
                     " 'complete_return'")
    turn = one(engine, "SELECT transport, state, submission_count FROM control_turns"
                        " WHERE kind = 'claim_handoff'")
    assert turn == ("resume_initial", "settled", 1)
    launches = [tuple(r) for r in engine.conn.execute(
        "SELECT action, session_key FROM launch_intents WHERE frame_id = ?"
        " ORDER BY created_at, rowid", (route.frame_id,))]
    assert launches == [("new", started.session_key), ("resume", started.session_key)]
    assert retry_until(lambda: parent_pane not in pane_ids(tmux_socket), 15.0)  # the old runtime
    parent_main = one(engine, "SELECT main_pane_id FROM user_views")[0]
    assert parent_main not in (parent_pane, child_pane)
    screen = tmux(tmux_socket, "capture-pane", "-p", "-J", "-t", parent_main)
    assert screen.count("Call transition_claim() and follow") == 1
    assert "finished and returned" in screen


def test_handoff_policy_reminds_the_parents_next_turn_to_claim(
        tmp_path: Path, tmux_socket: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """complete_return = "handoff": no line is typed; the parent's next normal turn gets
    the fixed line as hook context (Claude's additionalContext) and claims the handoff."""
    from core.config.config import AutomationConfig
    from core.model.enums import CompleteReturnPolicy

    monkeypatch.setenv("SWITCHBOARD_HOME", str(tmp_path))
    engine = make_live_engine(tmp_path, tmux_socket, automation=AutomationConfig(
        complete_return=CompleteReturnPolicy.HANDOFF))
    route = engine.project_enter(new_request_id(), "alpha")
    started = engine.frame_start(new_request_id(), route.frame_id)
    assert retry_until(lambda: one(engine, "SELECT state FROM launch_intents WHERE launch_id = ?",
                                    started.launch_id) == ("bound",), 15.0)
    parent_pane = one(engine, "SELECT main_pane_id FROM user_views")[0]
    push = engine.frame_push(new_request_id(), route.frame_id, "Child", "the child's brief")
    assert retry_until(lambda: one(engine, "SELECT state FROM view_transitions"
                                            " WHERE transition_id = ?", push.transition_id)
                       == ("completed",), 20)
    child_pane = one(engine, "SELECT main_pane_id FROM user_views")[0]
    type_line(tmux_socket, child_pane, "/complete done it :: merge")
    assert retry_until(lambda: one(engine, "SELECT state FROM view_transitions WHERE kind ="
                                            " 'complete_return'") == ("awaiting_claim",), 25)
    assert one(engine, "SELECT main_pane_id FROM user_views") == (parent_pane,)
    assert one(engine, "SELECT COUNT(*) FROM control_turns WHERE kind = 'claim_handoff'") \
        == (0,)
    screen = tmux(tmux_socket, "capture-pane", "-p", "-J", "-t", parent_pane)
    assert "Call transition_claim()" not in screen  # nothing typed

    type_line(tmux_socket, parent_pane, "what next?")  # the person's next normal turn
    assert retry_until(lambda: one(engine, "SELECT state FROM view_transitions WHERE kind ="
                                            " 'complete_return'") == ("completed",), 25)
    assert one(engine, "SELECT first_claimed_at IS NOT NULL FROM completion_handoffs") \
        == (1,)
    assert one(engine, "SELECT lifecycle_state, close_reason FROM frames WHERE title ="
                        " 'Child'") == ("closed", "completed")
    screen = tmux(tmux_socket, "capture-pane", "-p", "-J", "-t", parent_pane)
    assert "finished and returned" in screen and "> Call transition_claim()" not in screen
