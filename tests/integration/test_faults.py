"""Fault injection: kill the executing engine between saga steps, then reconcile.

For each transition kind and each transport phase, the engine is stopped at a
named saga point (``Engine.fault``): in process by raising, and for a subset
in a separate process that calls ``os._exit`` there. A fresh engine on the
same registry, whose clock is past every lease and watchdog, then runs
``core.reconcile.reconcile.reconcile``. Afterwards tmux and the registry must agree
(``transitions_env.problems``): one pane in main, the committed placement is
what tmux shows, nothing left executing, no second control line or
submission, no lost brief or handoff, and a recovery wherever the outcome is
uncertain. The last test prints how many faults were injected and how many
ended consistent.

Saga points (core/runtime/sagas.py, core/runtime/stage.py): after_claim (intent), after_launch
(push: child pane staged behind its gate), after_submit_recorded /
after_submit (complete_return: before / after the one paste), before_swap (intent
recorded, the swap batch not started), after_swap (the
swap happened, phase still intent), after_move (moved; a focus or back whose re-read
shows its target is inspected and committed by then, recorded whole in one commit),
after_inspect (inspected), after_commit (committed; a stopped child's pane not yet killed),
mode_after_move (view mode: tmux changed, registry write not committed).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from core.context.requests import new_request_id
from core.engine.engine import Engine
from core.model.enums import ViewMode
from core.reconcile import recovery
from core.reconcile.reconcile import ReconcileReport, reconcile
from core.runtime.claims import claim_for_frame
from core.runtime.sagas import LEASE_MS
from core.runtime.stage import CONTROL_TEMPLATE
from tests.integration.fault_child import EXIT_AT_FAULT, perform
from tests.integration.journey_env import tmux
from tests.integration.transitions_env import (
    OffsetClock,
    World,
    build_world,
    live_provider_command,
    make_engine,
    mark_ready,
    open_stage_engine,
    pane_of,
    problems,
    screen,
    session_of,
    wait_prompt,
)
from tests.waiting import retry_until

pytestmark = [pytest.mark.tmux, pytest.mark.usefixtures("no_server_pass")]
REPO = Path(__file__).resolve().parents[2]
AFTER_EVERY_LEASE = LEASE_MS + 120_000  # past the lease and any watchdog (<= 120 s)

SAGA = ["after_claim", "after_swap", "after_move", "after_inspect", "after_commit"]
POINTS: dict[str, list[str]] = {
    "focus": ["after_claim", "before_swap", *SAGA[1:]],
    "back": SAGA,
    "human_close": SAGA,
    "recover": SAGA,
    "push": ["after_claim", "after_launch", *SAGA[1:]],
    "complete_return": ["after_claim", "after_submit_recorded", "after_submit", *SAGA[1:]],
    "mode_direct": ["mode_after_move"],
    "mode_navigator": ["mode_after_move"],
}
EXITS = [("focus", "before_swap"), ("focus", "after_swap"), ("back", "after_move"),
         ("human_close", "after_commit"),
         ("push", "after_launch"), ("push", "after_swap"), ("complete_return", "after_submit"),
         ("complete_return", "after_inspect"), ("mode_direct", "mode_after_move"),
         ("recover", "after_swap")]
CASES = [(kind, point, "raise") for kind, points in POINTS.items() for point in points] + \
    [(kind, point, "exit") for kind, point in EXITS]

OUTCOMES: list[tuple[str, str, str, bool, str]] = []
"""(kind, point, crash, consistent, what reconcile did) of every injected fault."""


class InjectedFault(Exception):
    """Raised at a saga point: the engine stops there as if its process died."""


def _prepare(engine: Engine, world: World, kind: str) -> dict[str, str | None]:
    """Bring the world to where ``kind`` can run; return the ids the request needs."""
    ids = world.ids()
    if kind == "complete_return":
        mark_ready(engine, world.workspace_id)  # the parent's trusted Stop
    if kind == "mode_navigator":
        engine.view_mode(new_request_id(), world.view_id, ViewMode.DIRECT)
    if kind == "recover":
        # A person swaps panes by hand; reconcile notices and offers a safe_auto recovery.
        workspace, child = pane_of(engine, world.workspace_id), pane_of(engine, world.child_id)
        tmux(world.socket, "swap-pane", "-d", "-s", str(workspace), "-t", str(child))
        reconcile(engine)
        (found,) = [r for r in recovery.list_recoveries(engine)
                    if r.kind == "placement_orphaned"]
        ids["recovery_id"] = found.recovery_id
    return ids


def _inject(engine: Engine, world: World, kind: str, point: str, crash: str,
            ids: dict[str, str | None]) -> None:
    if crash == "raise":
        def fault(reached: str) -> None:
            if reached == point:
                raise InjectedFault(reached)

        engine.fault = fault
        with pytest.raises(InjectedFault):
            perform(engine, kind, ids)
        return
    env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}
    env["SWITCHBOARD_HOME"] = str(world.root)
    done = subprocess.run(
        [sys.executable, "-m", "tests.integration.fault_child", str(world.root), point, kind,
         json.dumps(ids)], cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == EXIT_AT_FAULT, done.stderr[-2000:]


def _uncertain_turns_have_recoveries(engine: Engine) -> list[str]:
    found = []
    overdue = engine.now() - int(engine.config.control_turns.watchdog_timeout_seconds * 1000)
    for turn in engine.conn.execute("SELECT * FROM control_turns WHERE kind = 'claim_handoff'"):
        if turn["state"] == "submitted" and turn["submitted_at"] < overdue:
            found.append("a submitted turn past its watchdog was not marked uncertain")
        if turn["state"] == "uncertain" and engine.conn.execute(
                "SELECT COUNT(*) FROM recoveries WHERE subject_id = ? AND state = 'open'"
                " AND kind = 'control_submit_uncertain'",
                (turn["control_turn_id"],)).fetchone()[0] != 1:
            found.append("an uncertain turn has no open control_submit_uncertain recovery")
    return found


@pytest.mark.parametrize(("kind", "point", "crash"), CASES,
                         ids=[f"{k}-{p}-{c}" for k, p, c in CASES])
def test_fault_then_reconcile_is_consistent(tmp_path: Path, tmux_socket: Path, kind: str,
                                            point: str, crash: str) -> None:
    engine, world = build_world(tmp_path, tmux_socket,
                                with_child=kind not in ("push", "mode_direct",
                                                        "mode_navigator"))
    ids = _prepare(engine, world, kind)
    lines_before = screen(tmux_socket, str(pane_of(engine, world.workspace_id))) \
        .count(CONTROL_TEMPLATE)
    _inject(engine, world, kind, point, crash, ids)
    engine.conn.close()  # the interrupted engine is gone

    fresh = open_stage_engine(tmp_path, clock=OffsetClock(AFTER_EVERY_LEASE))
    report = reconcile(fresh)
    found = problems(fresh, world.view_id) + _uncertain_turns_have_recoveries(fresh)
    for row in fresh.conn.execute("SELECT kind, transport_phase FROM view_transitions"
                                  " WHERE state = 'failed'"):
        found.append(f"{row['kind']} failed at {row['transport_phase']}: reconcile should "
                     "have finished it from pane evidence")
    if kind == "complete_return":
        # The parent got the line at most once; never again after reconcile.
        typed = screen(tmux_socket, str(pane_of(fresh, world.workspace_id))) \
            .count(CONTROL_TEMPLATE) - lines_before
        expected = 0 if point == "after_submit_recorded" else 1
        if not retry_until(lambda: screen(tmux_socket, str(pane_of(fresh, world.workspace_id)))
                           .count(CONTROL_TEMPLATE) - lines_before == expected, 2.0, interval=0.02):
            found.append(f"the parent shows the control line {typed} times, "
                         f"expected {expected}")
    again = reconcile(fresh)  # idempotent: a second pass changes nothing
    if (again.transitions_finished, again.transitions_resumed,
            again.transitions_rolled_back, again.recoveries_opened) != (0, 0, 0, 0):
        found.append(f"a second reconcile still acted: {again}")
    found += problems(fresh, world.view_id)
    OUTCOMES.append((kind, point, crash, not found, _action(report)))
    assert found == []


def _action(report: ReconcileReport) -> str:
    """What reconcile did, in words, for the summary."""
    done = [name for name, count in (
        ("finished from pane evidence", report.transitions_finished),
        ("resumed from intent", report.transitions_resumed),
        ("rolled back", report.transitions_rolled_back),
        ("adopted the observed mode", report.views_repaired),
        ("stopped a committed child's pane", report.panes_stopped),
        ("turn uncertain + recovery", report.turns_marked_uncertain)) if count]
    return ", ".join(done) or "nothing (already committed)"


def test_control_turn_watchdog_uncertain_then_settled_by_hook_evidence(
        tmp_path: Path, tmux_socket: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One fenced submission; the watchdog makes it uncertain, never typed again; the
    late UserPromptSubmit and claim settle it and resolve the recovery."""
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

    engine = make_engine(tmp_path, tmux_socket, provider_command=held, watchdog_seconds=0.5)
    engine.stage.navigator_command = ["sleep", "600"]
    route = engine.project_enter(new_request_id(), "alpha")
    engine.frame_start(new_request_id(), route.frame_id)
    parent = pane_of(engine, route.frame_id)
    wait_prompt(tmux_socket, parent)
    tmux(tmux_socket, "send-keys", "-t", str(parent), "-l", "hello")
    tmux(tmux_socket, "send-keys", "-t", str(parent), "Enter")

    def activity(frame_id: str) -> str:
        return engine.conn.execute("SELECT activity FROM provider_sessions WHERE"
                                   " session_key = ?", (session_of(engine, frame_id),)
                                   ).fetchone()[0]

    assert retry_until(lambda: activity(route.frame_id) == "ready", 15,
                       interval=0.02)  # a trusted Stop
    pushed = engine.frame_push(new_request_id(), route.frame_id, "Task", "The brief")
    assert retry_until(lambda: engine.conn.execute(
        "SELECT state FROM view_transitions WHERE transition_id = ?",
        (pushed.transition_id,)).fetchone()[0] == "completed",
        15, interval=0.02)  # the child claimed
    assert retry_until(lambda: activity(pushed.target_frame_id) == "ready", 15, interval=0.02)

    hold.touch()
    fences: dict[str, tuple[bool, bool]] = {}

    def spy(point: str) -> None:
        if point in ("after_submit_recorded", "after_submit"):
            shown = engine.stage.snapshot().pane(str(parent))
            assert shown is not None
            fences[point] = (shown.parked, shown.input_off)

    engine.fault = spy
    done = engine.frame_complete(new_request_id(), pushed.target_frame_id, "Fixed foo",
                                 "review and merge")
    engine.fault = None
    assert done.state == "awaiting_claim"
    assert fences == {"after_submit_recorded": (True, True), "after_submit": (True, True)}
    assert retry_until(lambda: CONTROL_TEMPLATE in screen(tmux_socket, str(parent)), 5.0,
                       interval=0.02)

    def turn() -> tuple:
        return tuple(engine.conn.execute(
            "SELECT state, submission_count, control_turn_id, claimed_at FROM control_turns"
            " WHERE transition_id = ?", (done.transition_id,)).fetchone())

    assert turn()[:2] == ("submitted", 1)
    time.sleep(0.6)  # past the 0.5 s watchdog, the prompt evidence still held back
    report = reconcile(engine)
    # this reconcile, or the view navigator's own host turn just before it, says so
    assert report.turns_marked_uncertain == 1 or turn()[0] == "uncertain"
    state, count, turn_id, _ = turn()
    assert (state, count) == ("uncertain", 1)
    (pending,) = [r for r in recovery.list_recoveries(engine)
                  if r.kind == "control_submit_uncertain"]
    assert pending.subject_id == turn_id
    again = reconcile(engine)
    assert (again.turns_marked_uncertain, again.recoveries_opened) == (0, 0)
    assert screen(tmux_socket, str(parent)).count(CONTROL_TEMPLATE) == 1  # never typed again

    hold.unlink()  # the late UserPromptSubmit arrives, then the agent claims the handoff
    assert retry_until(lambda: turn()[0] == "settled", 20, interval=0.02), turn()
    row = engine.conn.execute("SELECT state, updated_at FROM recoveries WHERE recovery_id = ?",
                              (pending.recovery_id,)).fetchone()
    assert row["state"] == "resolved"
    assert row["updated_at"] == turn()[3]  # resolved in the claim's own transaction
    assert turn()[1] == 1
    assert screen(tmux_socket, str(parent)).count(CONTROL_TEMPLATE) == 1
    assert engine.conn.execute("SELECT first_claimed_at IS NOT NULL FROM completion_handoffs"
                               " WHERE transition_id = ?",
                               (done.transition_id,)).fetchone()[0] == 1
    assert retry_until(lambda: problems(engine, route.view_id) == [], 5.0, interval=0.02), \
        problems(engine, route.view_id)


def test_a_brief_claim_never_races_ahead_of_the_push_commit(
        tmp_path: Path, tmux_socket: Path) -> None:
    """After a crash between the swap and the commit, the child runs its initial prompt
    before reconcile commits: its claim must not be answered "no pending transition"."""
    engine, world = build_world(tmp_path, tmux_socket, with_child=False)

    def fault(reached: str) -> None:
        if reached == "after_swap":
            raise InjectedFault(reached)

    engine.fault = fault
    with pytest.raises(InjectedFault):
        engine.frame_push(new_request_id(), world.workspace_id, "Task", "The brief")
    child = engine.conn.execute("SELECT frame_id FROM frames WHERE role = 'task'").fetchone()[0]
    early = None
    try:
        early = claim_for_frame(engine, child, session_of(engine, child))
    except Exception as exc:  # noqa: BLE001 - any refusal that says "retry" is acceptable
        early = exc
    fresh = open_stage_engine(tmp_path, clock=OffsetClock(AFTER_EVERY_LEASE))
    reconcile(fresh)
    assert problems(fresh, world.view_id) == []  # the brief itself is kept and claimable
    assert getattr(early, "kind", "retry") != "none", \
        "the child was told there is no transition for it while its push was executing"


def test_a_dead_executors_swap_landing_after_reconcile_read_tmux_rolls_forward(
        tmp_path: Path, tmux_socket: Path) -> None:
    """kill -9 while a focus's swap batch is in flight: that batch is a tmux process of its
    own, so it outlives the engine and can land after reconcile read tmux (the target
    still parked, phase intent: reconcile resumes the focus) and before reconcile's own
    swap, which its guard then refuses. The pane evidence (the target in main, the old
    main parked and fenced: only that batch does both) proves the focus moved: the one
    reconcile rolls it forward instead of failing it with tmux showing the target."""
    engine, world = build_world(tmp_path, tmux_socket)
    assert world.child_id is not None
    old_main, target = pane_of(engine, world.child_id), pane_of(engine, world.workspace_id)
    assert old_main is not None and target is not None
    surface = engine.conn.execute("SELECT surface_id FROM surfaces WHERE pane_id = ? AND"
                                  " lifecycle_state = 'live'", (target,)).fetchone()[0]
    server = engine.conn.execute("SELECT tmux_server_id FROM user_views WHERE view_id = ?",
                                 (world.view_id,)).fetchone()[0]
    _inject(engine, world, "focus", "before_swap", "exit", world.ids())
    engine.conn.close()

    fresh = open_stage_engine(tmp_path, clock=OffsetClock(AFTER_EVERY_LEASE))
    landed: list[str] = []

    def dead_batch_lands(reached: str) -> None:
        if reached == "before_swap" and not landed:  # reconcile's resumed focus, about to swap
            landed.append(reached)
            fresh.stage.adapter_for(server).present(
                main_pane=old_main, target_pane=target, view_id=world.view_id,
                target_surface_id=surface)

    fresh.fault = dead_batch_lands
    report = reconcile(fresh)
    fresh.fault = None
    assert landed, "reconcile did not resume the focus"
    assert problems(fresh, world.view_id) == []
    row = fresh.conn.execute("SELECT state, transport_phase FROM view_transitions"
                             " WHERE kind = 'focus'").fetchone()
    assert tuple(row) == ("completed", "committed")
    assert report.transitions_rolled_back == 0
    assert [r.kind for r in recovery.list_recoveries(fresh) if r.subject_type == "view"] == []
    again = reconcile(fresh)
    assert (again.transitions_finished, again.transitions_resumed,
            again.transitions_rolled_back, again.recoveries_opened) == (0, 0, 0, 0)
    assert problems(fresh, world.view_id) == []


def test_kill_9_with_the_swap_batch_in_flight_rolls_forward_in_one_reconcile(
        tmp_path: Path, tmux_socket: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same race, end to end: every swap batch's tmux client is held back 1 s, the
    focusing engine is killed with SIGKILL while its batch waits, and its batch lands
    while reconcile's resumed swap waits in turn (the chaos test's kill9:focus found it)."""
    engine, world = build_world(tmp_path, tmux_socket)
    ids = world.ids()
    engine.conn.close()
    started = tmp_path / "swap-started"
    real = shutil.which("tmux")
    wrapper = tmp_path / "bin" / "tmux"
    wrapper.parent.mkdir()
    wrapper.write_text(f'#!/bin/sh\ncase "$*" in *swap-pane*) : > "{started}"; sleep 1;; esac\n'
                       f'exec {real} "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setenv("PATH", f"{wrapper.parent}{os.pathsep}{os.environ['PATH']}")
    env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}
    env["SWITCHBOARD_HOME"] = str(tmp_path)
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.integration.fault_child", str(tmp_path), "none", "focus",
         json.dumps(ids)], cwd=REPO, env=env)
    try:
        assert retry_until(started.exists, 30, interval=0.01)
    finally:
        child.kill()  # kill -9 while its swap batch (its own tmux process) is in flight
        child.wait()

    fresh = open_stage_engine(tmp_path, clock=OffsetClock(AFTER_EVERY_LEASE))
    report = reconcile(fresh)
    assert problems(fresh, world.view_id) == []
    assert (report.transitions_resumed, report.transitions_rolled_back) == (1, 0), report
    assert fresh.conn.execute("SELECT state FROM view_transitions WHERE kind = 'focus'"
                              ).fetchone()[0] == "completed"
    assert [r.kind for r in recovery.list_recoveries(fresh) if r.subject_type == "view"] == []


def test_fault_injection_summary(capsys: pytest.CaptureFixture[str]) -> None:
    """Print the figures; every injected fault must have ended consistent."""
    if not OUTCOMES:
        pytest.skip("no fault case ran in this session")
    by_crash = Counter(crash for _, _, crash, _, _ in OUTCOMES)
    consistent = sum(ok for _, _, _, ok, _ in OUTCOMES)
    kinds = Counter(kind for kind, *_ in OUTCOMES)
    actions = Counter(action for *_, action in OUTCOMES)
    with capsys.disabled():
        print(f"\nfault injection: {len(OUTCOMES)} faults injected ({by_crash['raise']} raised, "
              f"{by_crash['exit']} os._exit in a child process) over "
              f"{len(kinds)} transition kinds; {consistent} ended consistent")
        for kind, count in sorted(kinds.items()):
            good = sum(ok for k, _, _, ok, _ in OUTCOMES if k == kind)
            print(f"  {kind:<16} {count:>2} injected, {good:>2} consistent")
        for action, count in actions.most_common():
            print(f"  reconcile: {action}: {count}")
    assert consistent == len(OUTCOMES)
