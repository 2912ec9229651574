"""No view ever stays stuck: one test per way a view used to end blocked (issue 11).

Each test drives the real engine against a private tmux server with fake
providers, reaches the state that used to be a dead end, and checks that the
way out the recovery names actually works. The invariant itself is
``core.reconcile.settlement.invariant_problems``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest

from core.agent import tools as agent_tools
from core.config.config import ProviderConfig, TmuxConfig
from core.config.home import Home
from core.config.registry import init_registry
from core.context.requests import new_request_id
from core.engine.engine import Engine
from core.engine.open import open_engine
from core.model.enums import Actionability, Activity, ActivityReason, Provider, RecoveryKind
from core.model.errors import Conflict, ProviderError
from core.reconcile import recovery
from core.reconcile.reconcile import reconcile
from core.reconcile.settlement import invariant_problems
from core.runtime.claims import claim_for_frame
from core.runtime.sagas import LEASE_MS
from core.runtime.stage import CONTROL_TEMPLATE
from storage.connection import write_transaction
from storage.operations import recoveries as recoveries_ops
from storage.operations import sessions as sessions_ops
from tests.factories import project_config
from tests.integration.journey_env import tmux
from tests.integration.transitions_env import (
    OffsetClock,
    build_world,
    live_provider_command,
    make_engine,
    mark_ready,
    open_stage_engine,
    pane_env,
    pane_of,
    problems,
    screen,
    session_of,
    wait_prompt,
)
from tests.waiting import retry_until

pytestmark = [pytest.mark.tmux, pytest.mark.usefixtures("no_server_pass")]
REPO = Path(__file__).resolve().parents[2]
LATER = LEASE_MS + 120_000


class InjectedFault(Exception):
    """Raised at a saga point: the engine stops there as if its process died."""


def _fault_at(point: str):
    def fault(reached: str) -> None:
        if reached == point:
            raise InjectedFault(reached)
    return fault


def _view_recoveries(engine: Engine, view_id: str) -> list[recovery.RecoveryRecord]:
    return [r for r in recovery.list_recoveries(engine)
            if r.subject_type == "view" and r.subject_id == view_id]


def _pending(engine: Engine, view_id: str) -> tuple | None:
    row = engine.conn.execute(
        "SELECT kind, state FROM view_transitions WHERE view_id = ? AND state IN"
        " ('prepared', 'executing', 'presented', 'awaiting_claim', 'settling')",
        (view_id,)).fetchone()
    return tuple(row) if row else None


def _view_state(engine: Engine, view_id: str) -> str:
    return engine.conn.execute("SELECT state FROM user_views WHERE view_id = ?",
                               (view_id,)).fetchone()[0]


def _turn(engine: Engine) -> tuple:
    return tuple(engine.conn.execute(
        "SELECT state, submission_count FROM control_turns WHERE kind = 'claim_handoff'"
        " ORDER BY created_at DESC LIMIT 1").fetchone())


def _activity(engine: Engine, frame_id: str) -> str:
    return engine.conn.execute("SELECT activity FROM provider_sessions WHERE session_key = ?",
                               (session_of(engine, frame_id),)).fetchone()[0]


def _mark_working(engine: Engine, frame_id: str) -> None:
    with write_transaction(engine.conn) as conn:
        sessions_ops.record_activity(conn, session_of(engine, frame_id),
                                     activity=Activity.WORKING,
                                     reason=ActivityReason.UNKNOWN,
                                     runtime_presence="live", turn_id=None,
                                     provider_version=None, now=engine.now())




def _input_off(engine: Engine, pane: str) -> bool:
    shown = engine.stage.snapshot().pane(pane)
    assert shown is not None
    return shown.input_off


# ---------------------------------------------------------------------- item 1

def test_a_return_whose_executor_died_after_the_swap_becomes_a_recovery(
        tmp_path: Path, tmux_socket: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The line reached the parent, its claim was refused (transition still executing
    under the dead executor's lease) and it ended its turn. After the lease, reconcile
    finishes the swap from pane evidence, marks the turn uncertain and opens a recovery
    whose Enter makes the view ready; the handoff is still the parent's to claim."""
    monkeypatch.setenv("SWITCHBOARD_HOME", str(tmp_path))
    engine, world = build_world(tmp_path, tmux_socket, quiet=False)
    assert world.child_id
    parent = pane_of(engine, world.workspace_id)
    mark_ready(engine, world.workspace_id)
    engine.fault = _fault_at("after_swap")
    with pytest.raises(InjectedFault):
        engine.frame_complete(new_request_id(), world.child_id, "Fixed foo", "merge it")
    # The fake parent follows the line, is told "not ready" (executing) and gives up.
    assert retry_until(lambda: _turn(engine)[0] == "observed" and
                       _activity(engine, world.workspace_id) == "ready",
                       60, interval=0.02), _turn(engine)
    engine.conn.close()

    fresh = open_stage_engine(tmp_path, clock=OffsetClock(LATER))
    reconcile(fresh)
    assert _turn(fresh) == ("uncertain", 1)
    (stalled,) = [r for r in _view_recoveries(fresh, world.view_id)
                  if r.kind == "transition_interrupted"]
    assert stalled.actionability == "safe_auto" and "Enter" in stalled.explanation
    assert "“alpha”" in stalled.explanation  # it names the parent frame
    assert invariant_problems(fresh) == []

    recovery.execute(fresh, new_request_id(), stalled.recovery_id)  # Enter / R
    assert _pending(fresh, world.view_id) is None
    assert _view_state(fresh, world.view_id) == "ready"
    fresh.view_focus(new_request_id(), world.view_id, world.workspace_id)  # not refused
    claimed = claim_for_frame(fresh, world.workspace_id, session_of(fresh, world.workspace_id))
    assert (claimed.kind, claimed.summary) == ("handoff", "Fixed foo")
    assert fresh.conn.execute("SELECT lifecycle_state FROM frames WHERE frame_id = ?",
                              (world.child_id,)).fetchone()[0] == "closed"
    assert screen(tmux_socket, str(parent)).count(CONTROL_TEMPLATE) == 1
    assert invariant_problems(fresh) == [] and problems(fresh, world.view_id) == []


# ---------------------------------------------------------------------- item 2

def test_a_return_to_a_parent_of_unknown_activity_is_never_unobservable(
        tmp_path: Path, tmux_socket: Path) -> None:
    """The parent never had a Stop (activity unknown): no line is typed, and at once a
    recovery names the parent and settles the view on Enter; the handoff stays."""
    engine, world = build_world(tmp_path, tmux_socket)
    assert world.child_id
    assert _activity(engine, world.workspace_id) != "ready"
    done = engine.frame_complete(new_request_id(), world.child_id, "Fixed foo", "merge it")
    assert done.state == "awaiting_claim"
    assert _turn(engine) == ("prepared", 0)
    (stalled,) = _view_recoveries(engine, world.view_id)
    assert "“alpha”" in stalled.explanation and "not typed" in stalled.explanation
    assert invariant_problems(engine) == []

    recovery.execute(engine, new_request_id(), stalled.recovery_id)
    assert _pending(engine, world.view_id) is None
    assert _view_state(engine, world.view_id) == "ready"
    engine.view_mode(new_request_id(), world.view_id)  # navigation works again
    claimed = claim_for_frame(engine, world.workspace_id,
                              session_of(engine, world.workspace_id))
    assert (claimed.kind, claimed.summary) == ("handoff", "Fixed foo")
    assert screen(tmux_socket, str(pane_of(engine, world.workspace_id))) \
        .count(CONTROL_TEMPLATE) == 0  # never typed into an unproven parent
    assert invariant_problems(engine) == [] and problems(engine, world.view_id) == []


# ---------------------------------------------------------------------- item 3

def test_a_killed_agent_pane_in_main_is_repaired_by_reconcile(
        tmp_path: Path, tmux_socket: Path) -> None:
    engine, world = build_world(tmp_path, tmux_socket, with_child=False)
    pane = str(pane_of(engine, world.workspace_id))
    tmux(tmux_socket, "kill-pane", "-t", pane)
    report = reconcile(engine)
    assert report.mains_restored == 1
    assert problems(engine, world.view_id) == []  # the placeholder is main
    row = engine.conn.execute("SELECT runtime_presence FROM provider_sessions"
                              " WHERE session_key = ?",
                              (session_of(engine, world.workspace_id),)).fetchone()
    assert row[0] == "stopped"  # the badge cannot say ready
    assert invariant_problems(engine) == []
    (gone,) = [r for r in recovery.list_recoveries(engine) if r.kind == "pane_vanished"]
    assert "press n" in gone.explanation and "“alpha”" in gone.explanation

    engine.frame_start(new_request_id(), world.workspace_id)  # n resumes it
    new_pane = pane_of(engine, world.workspace_id)
    assert new_pane is not None and new_pane != pane
    assert retry_until(lambda: problems(engine, world.view_id) == [], 10, interval=0.02), \
        problems(engine, world.view_id)
    assert [r for r in recovery.list_recoveries(engine) if r.kind == "pane_vanished"] == []
    assert reconcile(engine).recoveries_opened == 0


# ---------------------------------------------------------------------- item 4

def test_a_killed_parked_agent_is_stopped_and_n_resumes_it(
        tmp_path: Path, tmux_socket: Path) -> None:
    engine, world = build_world(tmp_path, tmux_socket)
    parked = str(pane_of(engine, world.workspace_id))
    tmux(tmux_socket, "kill-pane", "-t", parked)
    reconcile(engine)
    assert engine.conn.execute(
        "SELECT state FROM frame_placements WHERE frame_id = ? AND state <> 'orphaned'",
        (world.workspace_id,)).fetchone()[0] == "stopped_affinity"
    assert invariant_problems(engine) == [] and problems(engine, world.view_id) == []
    (gone,) = [r for r in recovery.list_recoveries(engine) if r.kind == "pane_vanished"]
    assert "“alpha”" in gone.explanation and "press n" in gone.explanation

    engine.frame_start(new_request_id(), world.workspace_id)  # n, though not shown
    assert engine.conn.execute("SELECT active_frame_id FROM user_views").fetchone()[0] == \
        world.workspace_id
    assert pane_of(engine, world.workspace_id) is not None
    assert retry_until(lambda: problems(engine, world.view_id) == [], 10, interval=0.02), \
        problems(engine, world.view_id)
    assert [r for r in recovery.list_recoveries(engine) if r.kind == "pane_vanished"] == []


# ---------------------------------------------------------------------- item 5

def test_a_refused_start_rolls_its_bundle_back_exactly(
        tmp_path: Path, tmux_socket: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SWITCHBOARD_HOME", str(tmp_path))
    script = tmp_path / "not-claude"
    script.write_text(f"#!{sys.executable}\nprint('this is not a version line')\n")
    script.chmod(0o755)
    home = Home(root=tmp_path, config_path=tmp_path / "config.toml")
    template = replace(project_config(tmp_path / "src"),
                       providers={p: ProviderConfig(command=(str(script),)) for p in Provider},
                       tmux=TmuxConfig(socket_path=str(tmux_socket)))
    init_registry(home, template=template)
    engine = open_engine(home, with_stage=True)
    route = engine.project_enter(new_request_id(), "alpha")
    for _ in range(2):  # the second n is refused for the same reason, not "staged"
        with pytest.raises(ProviderError) as refused:
            engine.frame_start(new_request_id(), route.frame_id)
        assert refused.value.code.startswith("provider_version")
    placement = engine.conn.execute(
        "SELECT state, surface_id FROM frame_placements WHERE frame_id = ?"
        " AND state <> 'orphaned'", (route.frame_id,)).fetchone()
    assert tuple(placement) == ("stopped_affinity", None)
    assert engine.conn.execute("SELECT current_session_key FROM frames").fetchone()[0] is None
    assert engine.conn.execute("SELECT claim_state FROM work_contexts").fetchone()[0] == \
        "released"
    assert {r[0] for r in engine.conn.execute("SELECT lifecycle_state FROM surfaces")} == \
        {"retired"}
    assert invariant_problems(engine) == []


# ---------------------------------------------------------------------- item 6

def test_cancel_withdraws_a_waiting_push_from_the_cli_and_the_agent(
        tmp_path: Path, tmux_socket: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SWITCHBOARD_HOME", str(tmp_path))
    engine, world = build_world(tmp_path, tmux_socket, with_child=False)
    _mark_working(engine, world.workspace_id)  # the push waits for this agent's Stop
    pushed = engine.frame_push(new_request_id(), world.workspace_id, "Task", "brief")
    assert pushed.state == "prepared"
    with pytest.raises(Conflict) as refused:
        engine.view_focus(new_request_id(), world.view_id, world.workspace_id)
    assert refused.value.code == "transition_in_flight"

    env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}
    rid = new_request_id()
    argv = [sys.executable, "-m", "navigator.cli", "transition", "cancel", "--view",
            world.view_id, "--request-id", rid, "--json"]
    first = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True)
    again = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True)
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["state"] == "cancelled"
    assert json.loads(again.stdout) == json.loads(first.stdout)  # retry-safe
    child = engine.conn.execute("SELECT lifecycle_state, close_reason FROM frames"
                                " WHERE frame_id = ?", (pushed.target_frame_id,)).fetchone()
    assert tuple(child) == ("closed", "dismissed")
    assert _pending(engine, world.view_id) is None
    assert invariant_problems(engine) == []

    # The agent withdraws its own waiting push through its tool (its pane's capability).
    second = engine.frame_push(new_request_id(), world.workspace_id, "Other", "brief")
    assert second.state == "prepared"
    out = agent_tools.transition_cancel(env=pane_env(engine, world.workspace_id))
    assert out["state"] == "cancelled" and out["transition_id"] == second.transition_id
    late = subprocess.run(argv[:-3] + ["--json"], cwd=REPO, env=env, capture_output=True,
                          text=True)
    assert late.returncode != 0 and "nothing to cancel" in late.stderr
    assert problems(engine, world.view_id) == []


def test_only_a_prepared_transition_can_be_cancelled(tmp_path: Path,
                                                     tmux_socket: Path) -> None:
    engine, world = build_world(tmp_path, tmux_socket)
    done = engine.frame_complete(new_request_id(), str(world.child_id), "s", "n")
    assert done.state == "awaiting_claim"
    with pytest.raises(Conflict) as refused:
        engine.transition_cancel(new_request_id(), view_id=world.view_id)
    assert refused.value.code == "not_cancellable" and "recovery" in refused.value.message


# ---------------------------------------------------------------------- item 7

def test_the_fence_lifts_on_the_lines_user_prompt_submit_not_on_its_enter(
        tmp_path: Path, tmux_socket: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SWITCHBOARD_HOME", str(tmp_path))
    hold = tmp_path / "hold-control-prompt"
    wrapper = tmp_path / "held_hook.py"
    wrapper.write_text(
        "import os, subprocess, sys, time\n"
        "hold, args = sys.argv[1], sys.argv[2:]\n"
        "data = sys.stdin.buffer.read()\n"
        "if 'UserPromptSubmit' in args and b'transition_claim()' in data:\n"
        "    while os.path.exists(hold):\n"
        "        time.sleep(0.05)\n"
        "sys.exit(subprocess.run([sys.executable, '-m', 'navigator.cli', 'hook', *args],\n"
        "                        input=data).returncode)\n")

    def held(provider: str) -> tuple[str, ...]:
        base = live_provider_command(provider)
        return (*base[:3], "--hook-command", f"{sys.executable} {wrapper} {hold}", *base[3:])

    engine = make_engine(tmp_path, tmux_socket, provider_command=held, watchdog_seconds=60)
    route = engine.project_enter(new_request_id(), "alpha")
    engine.frame_start(new_request_id(), route.frame_id)
    parent = str(pane_of(engine, route.frame_id))
    wait_prompt(tmux_socket, parent)
    mark_ready(engine, route.frame_id)
    pushed = engine.frame_push(new_request_id(), route.frame_id, "Task", "The brief")
    assert retry_until(lambda: engine.conn.execute(
        "SELECT state FROM view_transitions WHERE transition_id = ?",
        (pushed.transition_id,)).fetchone()[0] == "completed", 30, interval=0.02)
    assert retry_until(lambda: _activity(engine, pushed.target_frame_id) == "ready", 30,
                       interval=0.02)
    mark_ready(engine, route.frame_id)

    hold.touch()
    done = engine.frame_complete(new_request_id(), pushed.target_frame_id, "Fixed foo", "m")
    assert done.state == "awaiting_claim"
    assert engine.stage.snapshot().view(route.view_id).main.pane_id == parent
    time.sleep(1.0)  # the Enter is long past; the prompt evidence is held back
    assert _input_off(engine, parent), "input came back before the UserPromptSubmit"
    hold.unlink()
    assert retry_until(lambda: not _input_off(engine, parent), 20,
                       interval=0.02)  # well before the watchdog
    assert retry_until(lambda: _turn(engine)[0] in ("claimed", "settled"), 30, interval=0.02)
    assert screen(tmux_socket, parent).count(CONTROL_TEMPLATE) == 1


# ---------------------------------------------------------------------- item 8

def test_the_settlement_watchdog_runs_without_a_reconcile(tmp_path: Path,
                                                          tmux_socket: Path) -> None:
    engine, world = build_world(tmp_path, tmux_socket)
    parent = str(pane_of(engine, world.workspace_id))
    mark_ready(engine, world.workspace_id)
    done = engine.frame_complete(new_request_id(), str(world.child_id), "Fixed foo", "m")
    assert done.state == "awaiting_claim"
    # No reconcile runs: the watchdog process (the default 5 s) marks the turn
    # uncertain with its recovery and lifts the fence of the parent in main.
    assert retry_until(lambda: _turn(engine)[0] == "uncertain", 30, interval=0.02), _turn(engine)
    assert [r.kind for r in recovery.list_recoveries(engine)
            if r.subject_type == "control_turn"] == ["control_submit_uncertain"]
    assert retry_until(lambda: not _input_off(engine, parent), 10, interval=0.02)
    assert _turn(engine)[1] == 1


def test_a_claim_checks_the_callers_placement_generation(tmp_path: Path,
                                                         tmux_socket: Path) -> None:
    engine, world = build_world(tmp_path, tmux_socket)
    from core.config.capabilities import ENV_CAPABILITY, authenticate

    raw = pane_env(engine, str(world.child_id))[ENV_CAPABILITY]
    with write_transaction(engine.conn) as conn:
        authority = authenticate(conn, raw, engine.now())
    ok = claim_for_frame(engine, str(world.child_id), authority.session_key,
                         authority=authority)
    assert ok.kind == "brief"
    ahead = authority._replace(placement_generation=authority.placement_generation + 99)
    with pytest.raises(Conflict) as refused:
        claim_for_frame(engine, str(world.child_id), authority.session_key, authority=ahead)
    assert refused.value.code == "stale_placement"


def test_reconcile_resolves_stale_uncertain_records_of_settled_turns(
        tmp_path: Path, tmux_socket: Path) -> None:
    engine, world = build_world(tmp_path, tmux_socket)
    turn_id, transition = engine.conn.execute(
        "SELECT control_turn_id, t.state FROM control_turns c JOIN view_transitions t"
        " USING (transition_id) WHERE c.state = 'settled'").fetchone()
    assert transition == "completed"
    with write_transaction(engine.conn) as conn:  # an older record nobody resolved
        recoveries_ops.open_recovery(
            conn, recovery_id=engine.ids.new_id(), host_id=engine.host_id,
            kind=RecoveryKind.CONTROL_SUBMIT_UNCERTAIN, subject_type="control_turn",
            subject_id=turn_id, actionability=Actionability.OPEN_VIEW,
            explanation="old record; press Enter", now=engine.now())
    reconcile(engine)
    assert [r for r in recovery.list_recoveries(engine)
            if r.kind == "control_submit_uncertain"] == []


def test_a_waiting_return_is_run_now_by_stopping_the_agent_it_waits_for(
        tmp_path: Path, tmux_socket: Path) -> None:
    """A return cannot be withdrawn (its task is closing with the handoff stored); the
    refusal names the key that works instead: s on the busy agent runs it at once."""
    engine, world = build_world(tmp_path, tmux_socket)
    child = str(world.child_id)
    _mark_working(engine, child)
    mark_ready(engine, world.workspace_id)
    waiting = engine.frame_complete(new_request_id(), child, "Fixed foo", "merge it")
    assert waiting.state == "prepared"
    with pytest.raises(Conflict) as refused:
        engine.transition_cancel(new_request_id(), view_id=world.view_id)
    assert refused.value.code == "not_cancellable" and "press s" in refused.value.message
    assert "“Task”" in refused.value.message
    engine.frame_stop(new_request_id(), child)  # s on the task
    assert _pending(engine, world.view_id) == ("complete_return", "awaiting_claim")
    assert engine.conn.execute("SELECT active_frame_id FROM user_views").fetchone()[0] == \
        world.workspace_id
    claimed = claim_for_frame(engine, world.workspace_id,
                              session_of(engine, world.workspace_id))
    assert (claimed.kind, claimed.summary) == ("handoff", "Fixed foo")
    assert retry_until(lambda: problems(engine, world.view_id) == [], 10, interval=0.02), \
        problems(engine, world.view_id)


def test_an_unproven_parents_next_turn_claims_the_returned_handoff(
        tmp_path: Path, tmux_socket: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The return is shown to a parent of unknown activity with no line typed; the
    person's next prompt to it carries the fixed line as context (Claude), the parent
    claims, and the recovery that explained the wait is resolved by that claim."""
    monkeypatch.setenv("SWITCHBOARD_HOME", str(tmp_path))
    engine, world = build_world(tmp_path, tmux_socket, quiet=False)
    assert _activity(engine, world.workspace_id) != "ready"
    done = engine.frame_complete(new_request_id(), str(world.child_id), "Fixed foo", "m")
    assert done.state == "awaiting_claim" and _turn(engine) == ("prepared", 0)
    assert _view_recoveries(engine, world.view_id)
    parent = str(pane_of(engine, world.workspace_id))
    tmux(tmux_socket, "send-keys", "-t", parent, "-l", "what next?")
    tmux(tmux_socket, "send-keys", "-t", parent, "Enter")
    assert retry_until(lambda: engine.conn.execute(
        "SELECT first_claimed_at IS NOT NULL FROM completion_handoffs WHERE transition_id = ?",
        (done.transition_id,)).fetchone()[0] == 1, 30, interval=0.02)
    assert retry_until(lambda: _pending(engine, world.view_id) is None, 30, interval=0.02)
    assert _view_recoveries(engine, world.view_id) == []
    assert _view_state(engine, world.view_id) == "ready"
    assert screen(tmux_socket, parent).count(CONTROL_TEMPLATE) <= 1
    assert invariant_problems(engine) == []


def _reconcile_later(root: Path, delay_s: float) -> None:
    """Another process carries the transition on (here: reconcile past its lease)."""
    time.sleep(delay_s)
    other = open_stage_engine(root, clock=OffsetClock(LEASE_MS + 5_000))
    try:
        reconcile(other)
    finally:
        other.conn.close()


def test_a_claim_made_before_the_presentation_commits_waits_for_it(
        tmp_path: Path, tmux_socket: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The resumed parent can call transition_claim() while the return is still
    executing: the tool waits for the commit instead of telling the model to retry
    (a model told "again in a moment" may just stop); past its bound it refuses."""
    engine, world = build_world(tmp_path, tmux_socket)

    def fault(point: str) -> None:
        if point == "after_claim":
            raise RuntimeError(point)

    engine.fault = fault
    with pytest.raises(RuntimeError):
        engine.frame_complete(new_request_id(), str(world.child_id), "the summary", "next")
    engine.fault = None
    state = engine.conn.execute("SELECT state FROM view_transitions WHERE kind ="
                                " 'complete_return'").fetchone()[0]
    assert state == "executing"
    env = pane_env(engine, world.workspace_id)
    monkeypatch.setattr(agent_tools, "CLAIM_WAIT_S", 0.4)
    with pytest.raises(Conflict) as early:
        agent_tools.transition_claim(env=env)
    assert early.value.code == "transition_not_ready"
    monkeypatch.setattr(agent_tools, "CLAIM_WAIT_S", 20.0)
    later = threading.Thread(target=_reconcile_later, args=(tmp_path, 0.6))
    later.start()
    started = time.monotonic()
    out = agent_tools.transition_claim(env=env)
    later.join()
    assert out["kind"] == "handoff" and out["summary"] == "the summary"
    assert time.monotonic() - started >= 0.5
