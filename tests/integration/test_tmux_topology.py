"""Views, holding session, present/park, mode toggle and kill on a real private tmux server."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from core.model.enums import ViewMode
from core.tmux import (
    HOLDING_SESSION,
    NavigatorSpawn,
    PaneNotFound,
    PaneRole,
    PaneSnapshot,
    PlacementRefused,
    ServerIdentityMismatch,
    TmuxAdapter,
    TmuxRunner,
    UnmanagedPane,
    ViewLayout,
    ensure_holding_session,
    read_identity,
)
from core.tmux.topology import DEFAULT_NAVIGATOR_WIDTH
from tests.integration.conftest import received, wait_ready
from tests.waiting import assert_until

VIEW = "aaaaaaaa-0000-4000-8000-000000000001"
OTHER_VIEW = "aaaaaaaa-0000-4000-8000-000000000002"
SLEEP = ["sleep", "600"]


def surface(n: int) -> str:
    return f"55555555-0000-4000-8000-{n:012d}"


def make_view(adapter: TmuxAdapter, session: str = "scratch") -> ViewLayout:
    return adapter.create_view(
        session_name=session, view_id=VIEW, window_name="proj",
        navigator_command=SLEEP, main_command=SLEEP,
    )


def test_create_view_builds_navigator_left_and_main_right(adapter: TmuxAdapter) -> None:
    before = adapter.invocations
    layout = make_view(adapter)
    assert adapter.invocations - before == 2
    assert layout.mode is ViewMode.NAVIGATOR and not layout.zoomed
    assert layout.navigator is not None and layout.main is not None
    assert layout.navigator.left == 0 and layout.navigator.width == DEFAULT_NAVIGATOR_WIDTH
    assert layout.main.left > layout.navigator.left
    assert layout.navigator.active and layout.navigator.role is PaneRole.NAVIGATOR
    assert layout.main.role is PaneRole.PLACEHOLDER and layout.main.window_name == "proj"
    again = make_view(adapter)  # idempotent on view id: nothing new is created
    assert again.window_id == layout.window_id
    assert len(adapter.snapshot().panes) == len(set(p.pane_id for p in adapter.snapshot()))


def test_create_view_makes_a_missing_session(adapter: TmuxAdapter) -> None:
    layout = make_view(adapter, session="fresh")
    assert layout.session_name == "fresh" and layout.main is not None


def test_staged_pane_is_tagged_fenced_and_parked(adapter: TmuxAdapter) -> None:
    pane = adapter.launch_staged_pane(surface_id=surface(1), command=SLEEP)
    assert pane.parked and pane.session_name == HOLDING_SESSION
    assert pane.input_off and pane.surface_id == surface(1) and pane.role is PaneRole.PROVIDER
    assert pane.window_panes == 1 and not pane.dead


def test_capability_env_reaches_only_the_launched_pane(
    adapter: TmuxAdapter, tmp_path: Path
) -> None:
    out = tmp_path / "env.txt"
    adapter.launch_staged_pane(
        surface_id=surface(1),
        command=["sh", "-c", f'echo "$SB_CAPABILITY" > {out}; exec sleep 600'],
        env={"SB_CAPABILITY": "cap-secret-123;"},
    )
    assert_until(lambda: out.exists() and out.read_text().strip() != "", 5.0, interval=0.02)
    assert out.read_text().strip() == "cap-secret-123;"
    runner = adapter.runner
    for scope in (("-g",), ("-t", f"={HOLDING_SESSION}")):
        shown = runner.run([("show-environment", *scope)]).stdout
        assert not any("SB_CAPABILITY" in line for line in shown)


def test_present_and_park_round_trip(adapter: TmuxAdapter) -> None:
    layout = make_view(adapter)
    assert layout.main is not None
    placeholder = layout.main.pane_id
    a = adapter.launch_staged_pane(surface_id=surface(1), command=SLEEP)
    b = adapter.launch_staged_pane(surface_id=surface(2), command=SLEEP)

    before = adapter.invocations
    shown = adapter.present(main_pane=placeholder, target_pane=a.pane_id, view_id=VIEW)
    assert adapter.invocations - before == 1  # guard, swap, fence and re-read: one process
    assert shown.main.pane_id == a.pane_id and shown.main.view_id == VIEW
    assert not shown.main.parked and not shown.main.input_off
    assert shown.parked.pane_id == placeholder and shown.parked.parked and shown.parked.input_off

    step = adapter.present(main_pane=a.pane_id, target_pane=b.pane_id, view_id=VIEW)
    assert step.main.pane_id == b.pane_id and step.parked.pane_id == a.pane_id
    assert step.parked.input_off
    back = adapter.present(main_pane=b.pane_id, target_pane=a.pane_id, view_id=VIEW,
                           target_surface_id=surface(1))
    assert back.main.pane_id == a.pane_id and not back.main.input_off

    after = adapter.snapshot()
    view = after.view(VIEW)
    assert view is not None and view.main is not None and view.main.pane_id == a.pane_id
    # processes were never restarted: same pids as at launch
    assert after.pane(a.pane_id).pane_pid == a.pane_pid  # type: ignore[union-attr]
    assert after.pane(b.pane_id).pane_pid == b.pane_pid  # type: ignore[union-attr]
    assert view.navigator is not None and view.navigator.width == DEFAULT_NAVIGATOR_WIDTH


def test_present_refuses_and_moves_nothing(adapter: TmuxAdapter) -> None:
    layout = make_view(adapter)
    assert layout.main is not None and layout.navigator is not None
    main, nav = layout.main.pane_id, layout.navigator.pane_id
    a = adapter.launch_staged_pane(surface_id=surface(1), command=SLEEP)
    scratch = next(p for p in adapter.snapshot() if p.session_name == "scratch"
                   and p.view_id is None)
    before = adapter.snapshot().panes

    with pytest.raises(UnmanagedPane):  # a person's own pane
        adapter.present(main_pane=main, target_pane=scratch.pane_id)
    with pytest.raises(UnmanagedPane):  # the wrong surface
        adapter.present(main_pane=main, target_pane=a.pane_id, target_surface_id=surface(9))
    with pytest.raises(PlacementRefused):  # main must not be the navigator
        adapter.present(main_pane=nav, target_pane=a.pane_id)
    with pytest.raises(PlacementRefused):  # the wrong view
        adapter.present(main_pane=main, target_pane=a.pane_id, view_id=surface(7))
    adapter.present(main_pane=main, target_pane=a.pane_id)
    with pytest.raises(PlacementRefused):  # a is on screen now, not parked
        adapter.present(main_pane=main, target_pane=a.pane_id)
    moved = {p.pane_id: p.session_name for p in adapter.snapshot()}
    assert moved[a.pane_id] == "scratch" and moved[main] == HOLDING_SESSION
    assert {p.pane_id for p in before} == set(moved)


def test_parked_panes_drop_keys(
    adapter: TmuxAdapter, recorder: Callable[[str], tuple[list[str], Path]]
) -> None:
    argv, log = recorder("parked")
    pane = adapter.launch_staged_pane(surface_id=surface(1), command=argv)
    wait_ready(log)
    assert pane.input_off
    adapter.runner.run([("send-keys", "-t", pane.pane_id, "typed-while-parked", "Enter")])
    time.sleep(0.3)
    assert received(log) == b""
    adapter.enable_input(pane_id=pane.pane_id, surface_id=surface(1))
    adapter.runner.run([("send-keys", "-t", pane.pane_id, "-l", "now")])
    assert_until(lambda: received(log) == b"now", 5.0, interval=0.02)


@pytest.mark.parametrize("zoomed", [True, False])
def test_mode_toggle_keeps_provider_and_zoom(adapter: TmuxAdapter, zoomed: bool) -> None:
    layout = make_view(adapter)
    assert layout.main is not None
    provider = adapter.launch_staged_pane(surface_id=surface(1), command=SLEEP)
    adapter.present(main_pane=layout.main.pane_id, target_pane=provider.pane_id)
    if zoomed:
        adapter.runner.run([("resize-pane", "-Z", "-t", provider.pane_id)])
    assert adapter.snapshot().view(VIEW).zoomed is zoomed  # type: ignore[union-attr]

    before = adapter.invocations
    direct = adapter.set_mode(view_id=VIEW, mode=ViewMode.DIRECT)
    assert adapter.invocations - before <= 3
    assert direct.mode is ViewMode.DIRECT and direct.zoomed is zoomed
    assert direct.window_id == layout.window_id
    assert direct.main is not None and direct.main.pane_id == provider.pane_id
    assert direct.main.pane_pid == provider.pane_pid and direct.main.window_panes == 1
    assert direct.navigator is not None and direct.navigator.parked and direct.navigator.input_off

    before = adapter.invocations
    back = adapter.set_mode(view_id=VIEW, mode=ViewMode.NAVIGATOR)
    assert adapter.invocations - before <= 3
    assert back.mode is ViewMode.NAVIGATOR and back.zoomed is zoomed
    assert back.main is not None and back.main.pane_id == provider.pane_id
    assert back.main.pane_pid == provider.pane_pid
    assert back.navigator is not None and back.navigator.pane_id == layout.navigator.pane_id  # type: ignore[union-attr]
    assert back.navigator.left == 0 and not back.navigator.input_off
    assert back.navigator.width == DEFAULT_NAVIGATOR_WIDTH
    assert back.navigator.pane_pid == layout.navigator.pane_pid  # type: ignore[union-attr]
    assert adapter.set_mode(view_id=VIEW, mode=ViewMode.NAVIGATOR) == back  # no-op


def test_present_keeps_zoom(adapter: TmuxAdapter) -> None:
    layout = make_view(adapter)
    assert layout.main is not None
    a = adapter.launch_staged_pane(surface_id=surface(1), command=SLEEP)
    adapter.runner.run([("resize-pane", "-Z", "-t", layout.main.pane_id)])
    shown = adapter.present(main_pane=layout.main.pane_id, target_pane=a.pane_id)
    assert shown.main.zoomed and shown.main.active


def test_holding_panes_are_unreachable_by_window_navigation(adapter: TmuxAdapter) -> None:
    layout = make_view(adapter)
    runner = adapter.runner
    runner.run([("new-window", "-d", "-t", "=scratch:", *SLEEP)])
    for n in range(3):
        adapter.launch_staged_pane(surface_id=surface(n + 1), command=SLEEP)
    holding = {p.window_id for p in adapter.snapshot() if p.parked}
    holding_panes = {p.pane_id for p in adapter.snapshot() if p.parked}
    reached_windows, reached_panes = set(), set()
    for step in ("next-window", "previous-window", "last-window"):
        for _ in range(6):
            out = runner.run([(step, "-t", "=scratch:"),
                              ("display-message", "-p", "-t", "=scratch:", "#{window_id}")],
                             check=False)
            reached_windows.update(line for line in out.stdout if line.startswith("@"))
    for index in range(12):
        out = runner.run([("select-window", "-t", f"=scratch:{index}"),
                          ("display-message", "-p", "-t", "=scratch:", "#{window_id}")],
                         check=False)
        reached_windows.update(line for line in out.stdout if line.startswith("@"))
    for _ in range(4):
        out = runner.run([("select-pane", "-t", f"{layout.window_id}.{{next}}"),
                          ("display-message", "-p", "-t", layout.window_id, "#{pane_id}")])
        reached_panes.update(out.stdout)
    assert layout.window_id in reached_windows
    assert reached_windows.isdisjoint(holding)
    assert reached_panes.isdisjoint(holding_panes)
    listed = runner.run([("list-windows", "-t", "=scratch:", "-F", "#{window_id}")]).stdout
    assert holding.isdisjoint(listed)


def test_kill_only_the_exact_parked_launch_owned_pane(adapter: TmuxAdapter) -> None:
    layout = make_view(adapter)
    assert layout.main is not None and layout.navigator is not None
    a = adapter.launch_staged_pane(surface_id=surface(1), command=SLEEP)
    b = adapter.launch_staged_pane(surface_id=surface(2), command=SLEEP)
    adapter.present(main_pane=layout.main.pane_id, target_pane=b.pane_id)
    snap = adapter.snapshot()
    anchor = next(p for p in snap if p.role is PaneRole.ANCHOR)
    scratch = next(p for p in snap if p.session_name == "scratch" and p.view_id is None)

    with pytest.raises(UnmanagedPane):
        adapter.kill_surface_pane(pane_id=a.pane_id, surface_id=surface(2))  # wrong surface
    with pytest.raises(UnmanagedPane):
        adapter.kill_surface_pane(pane_id=scratch.pane_id, surface_id=surface(1))
    with pytest.raises(UnmanagedPane):
        adapter.kill_surface_pane(pane_id=anchor.pane_id, surface_id=surface(1))
    with pytest.raises(UnmanagedPane):
        adapter.kill_surface_pane(pane_id=layout.navigator.pane_id, surface_id=surface(1))
    with pytest.raises(PlacementRefused):  # b is on screen in the view
        adapter.kill_surface_pane(pane_id=b.pane_id, surface_id=surface(2))
    assert {p.pane_id for p in adapter.snapshot()} == {p.pane_id for p in snap}

    adapter.kill_surface_pane(pane_id=a.pane_id, surface_id=surface(1))
    left = adapter.snapshot()
    assert left.pane(a.pane_id) is None
    assert {p.pane_id for p in left} == {p.pane_id for p in snap} - {a.pane_id}
    assert left.view(VIEW) is not None and HOLDING_SESSION in left.sessions()


def test_a_vanished_pane_is_reported_not_guessed(adapter: TmuxAdapter) -> None:
    layout = make_view(adapter)
    assert layout.main is not None
    with pytest.raises(PaneNotFound) as raised:
        adapter.present(main_pane=layout.main.pane_id, target_pane="%999")
    assert raised.value.pane_id == "%999"
    with pytest.raises(PaneNotFound):
        adapter.kill_surface_pane(pane_id="%999", surface_id=surface(1))
    view = adapter.snapshot().view(VIEW)
    assert view is not None and view.main is not None
    assert view.main.pane_id == layout.main.pane_id


def test_a_provider_exit_in_direct_mode_leaves_the_view_standing(adapter: TmuxAdapter) -> None:
    assert adapter.ensure_holding_session() is False  # already there: idempotent
    layout = make_view(adapter)
    assert layout.main is not None
    short = adapter.launch_staged_pane(surface_id=surface(1), command=["sh", "-c", "read x"])
    adapter.present(main_pane=layout.main.pane_id, target_pane=short.pane_id)
    adapter.set_mode(view_id=VIEW, mode=ViewMode.DIRECT)
    adapter.runner.run([("send-keys", "-t", short.pane_id, "Enter")])  # provider exits
    assert_until(lambda: adapter.snapshot().pane(short.pane_id).dead,  # type: ignore[union-attr]
                 timeout=10.0, interval=0.02)
    # tmux records the exit status when it reaps the child, a moment after it marks the
    # pane dead; tmux 3.3a sometimes misses that SIGCHLD (the child stays a zombie until
    # another one exits), so `dead` is the evidence and the status is a bonus.
    try:
        assert_until(lambda: adapter.snapshot().pane(  # type: ignore[union-attr]
            short.pane_id).dead_status is not None, timeout=2.0, interval=0.02)
    except AssertionError:
        pass
    view = adapter.snapshot().view(VIEW)
    assert view is not None and view.window_id == layout.window_id
    assert view.main is not None and view.main.pane_id == short.pane_id and view.main.dead
    assert view.main.dead_status in (0, None)


def test_launch_gate_opens_only_with_the_swap(adapter: TmuxAdapter, tmp_path: Path) -> None:
    layout = make_view(adapter)
    assert layout.main is not None and layout.navigator is not None
    marker = tmp_path / "exec.txt"
    gated = ["sh", "-c", f"tmux wait-for sb-launch-1 && echo started > {marker}; exec sleep 600"]
    pane = adapter.launch_staged_pane(surface_id=surface(1), command=gated)
    with pytest.raises(PlacementRefused):  # refused move: the gate stays shut
        adapter.present(main_pane=layout.navigator.pane_id, target_pane=pane.pane_id,
                        launch_gate="sb-launch-1")
    time.sleep(0.3)
    assert not marker.exists()
    shown = adapter.present(main_pane=layout.main.pane_id, target_pane=pane.pane_id,
                            launch_gate="sb-launch-1")
    assert shown.gate_opened and shown.main.pane_id == pane.pane_id
    assert_until(marker.exists, 5.0, interval=0.02)


def test_holding_session_is_recognised_by_its_tag_not_its_name(runner: TmuxRunner) -> None:

    assert ensure_holding_session(runner, holding_session="parked_here") is True
    adapter = TmuxAdapter(runner, read_identity(runner), holding_session="parked_here")
    assert adapter.ensure_holding_session() is False
    layout = make_view(adapter)
    assert layout.main is not None
    pane = adapter.launch_staged_pane(surface_id=surface(1), command=SLEEP)
    assert pane.session_name == "parked_here" and pane.parked
    shown = adapter.present(main_pane=layout.main.pane_id, target_pane=pane.pane_id)
    assert shown.parked.session_name == "parked_here" and shown.parked.parked
    direct = adapter.set_mode(view_id=VIEW, mode=ViewMode.DIRECT)
    assert direct.navigator is not None and direct.navigator.session_name == "parked_here"


# ------------------------------------------------------------------ navigator respawn

def _spawn(view_id: str = VIEW, *command: str) -> NavigatorSpawn:
    return NavigatorSpawn(view_id=view_id, command=tuple(command or SLEEP),
                          env={"SB_TEST_NAV": "it's;"})


def _kill_process(adapter: TmuxAdapter, pane_id: str) -> None:
    """End the pane's program (a crash, or ctrl+q); remain-on-exit keeps the pane, dead."""
    pane = adapter.snapshot().pane(pane_id)
    assert pane is not None and pane.pane_pid is not None
    os.kill(pane.pane_pid, signal.SIGKILL)
    assert_until(lambda: adapter.snapshot().pane(pane_id).dead, timeout=10.0, interval=0.02)  # type: ignore[union-attr]


def _pane(adapter: TmuxAdapter, pane_id: str) -> PaneSnapshot:
    pane = adapter.snapshot().pane(pane_id)
    assert pane is not None
    return pane


def test_a_dead_navigator_is_respawned_in_place_in_one_process(adapter: TmuxAdapter) -> None:
    layout = make_view(adapter)
    other = adapter.create_view(session_name="scratch", view_id=OTHER_VIEW, window_name="two",
                                navigator_command=SLEEP, main_command=SLEEP)
    assert layout.navigator is not None and other.navigator is not None
    adapter.set_mode(view_id=OTHER_VIEW, mode=ViewMode.DIRECT)  # its navigator is parked
    nav, parked = layout.navigator.pane_id, other.navigator.pane_id
    _kill_process(adapter, nav)
    _kill_process(adapter, parked)

    before = adapter.invocations
    results = adapter.respawn_navigators([(nav, _spawn()), (parked, _spawn(OTHER_VIEW))])
    assert adapter.invocations - before == 1
    assert results == {nav: "ok", parked: "ok"}
    again, held = _pane(adapter, nav), _pane(adapter, parked)
    assert not again.dead and not held.dead
    assert again.pane_pid != layout.navigator.pane_pid
    # In place: same pane, same window, same tags; the parked one stays parked and fenced.
    assert (again.window_id, again.role, again.serves_view, again.input_off) == (
        layout.window_id, PaneRole.NAVIGATOR, VIEW, False)
    assert held.parked and held.input_off and held.serves_view == OTHER_VIEW
    env = Path(f"/proc/{again.pane_pid}/environ").read_bytes().split(b"\0")
    assert b"SB_TEST_NAV=it's;" in env  # data stays literal at argv level
    options = adapter.runner.run([("show-options", "-p", "-v", "-t", nav, "remain-on-exit")])
    assert options.stdout == ("on",)
    assert adapter.runner.run([("list-buffers",)]).stdout == ()  # no gate buffer left


def test_respawn_refuses_anything_but_a_dead_navigator_of_that_view(
        adapter: TmuxAdapter) -> None:
    layout = make_view(adapter)
    assert layout.navigator is not None and layout.main is not None
    nav, main = layout.navigator.pane_id, layout.main.pane_id
    alive = _pane(adapter, nav)
    assert adapter.respawn_navigators([(nav, _spawn())]) == {nav: "navigator_running"}
    assert _pane(adapter, nav).pane_pid == alive.pane_pid  # never killed (no -k)

    _kill_process(adapter, main)  # a dead pane that is not a navigator
    assert adapter.respawn_navigators([(main, _spawn())]) == {main: "not_navigator"}
    assert _pane(adapter, main).dead

    _kill_process(adapter, nav)
    # The navigator of another view is not this spawn's pane.
    assert adapter.respawn_navigators([(nav, _spawn(OTHER_VIEW))]) == {nav: "not_navigator"}
    # A refusal stops the batch: nothing after it runs.
    results = adapter.respawn_navigators([(main, _spawn()), (nav, _spawn())])
    assert results == {main: "not_navigator", nav: "not_reached"}
    assert _pane(adapter, nav).dead and _pane(adapter, main).dead
    assert adapter.respawn_navigators([("%999", _spawn())]) == {"%999": "missing_999"}

    stale = TmuxAdapter(adapter.runner, replace(adapter.expected, server_start_time=1))
    with pytest.raises(ServerIdentityMismatch):
        stale.respawn_navigators([(nav, _spawn())])
    assert _pane(adapter, nav).dead
    assert adapter.respawn_navigators([(nav, _spawn())]) == {nav: "ok"}
    assert adapter.runner.run([("list-buffers",)]).stdout == ()


def test_back_to_navigator_mode_respawns_a_dead_parked_navigator(adapter: TmuxAdapter) -> None:
    layout = make_view(adapter)
    assert layout.navigator is not None and layout.main is not None
    nav = layout.navigator.pane_id
    adapter.set_mode(view_id=VIEW, mode=ViewMode.DIRECT)
    _kill_process(adapter, nav)
    before = adapter.invocations
    back = adapter.set_mode(view_id=VIEW, mode=ViewMode.NAVIGATOR, navigator=_spawn())
    assert adapter.invocations - before == 2  # snapshot, then respawn + join in one batch
    assert back.mode is ViewMode.NAVIGATOR and back.navigator is not None
    assert back.navigator.pane_id == nav and not back.navigator.dead
    assert not back.navigator.input_off and back.navigator.width == DEFAULT_NAVIGATOR_WIDTH
    assert back.main is not None and back.main.pane_pid == layout.main.pane_pid

    # Already in navigator mode, a dead navigator is respawned where it is.
    _kill_process(adapter, nav)
    same = adapter.set_mode(view_id=VIEW, mode=ViewMode.NAVIGATOR, navigator=_spawn())
    assert same.navigator is not None and same.navigator.pane_id == nav
    assert not _pane(adapter, nav).dead
    with pytest.raises(ValueError):
        adapter.set_mode(view_id=VIEW, mode=ViewMode.NAVIGATOR, navigator=_spawn(OTHER_VIEW))


def test_back_to_navigator_mode_splits_a_new_navigator_when_it_is_gone(
        adapter: TmuxAdapter) -> None:
    layout = make_view(adapter)
    assert layout.navigator is not None and layout.main is not None
    adapter.runner.run([("kill-pane", "-t", layout.navigator.pane_id)])
    gone = adapter.snapshot().view(VIEW)
    assert gone is not None and gone.navigator is None and gone.mode is ViewMode.DIRECT
    with pytest.raises(PlacementRefused):  # nothing to show without a spawn
        adapter.set_mode(view_id=VIEW, mode=ViewMode.NAVIGATOR)
    back = adapter.set_mode(view_id=VIEW, mode=ViewMode.NAVIGATOR, navigator=_spawn())
    assert back.mode is ViewMode.NAVIGATOR and back.navigator is not None
    assert back.navigator.pane_id != layout.navigator.pane_id
    assert (back.navigator.role, back.navigator.serves_view, back.navigator.left) == (
        PaneRole.NAVIGATOR, VIEW, 0)
    assert back.navigator.width == DEFAULT_NAVIGATOR_WIDTH
    assert back.main is not None and back.main.pane_id == layout.main.pane_id
    assert back.main.pane_pid == layout.main.pane_pid


def test_a_window_name_with_hashes_is_shown_as_written(adapter: TmuxAdapter) -> None:
    """rename-window expands formats: a project "a#{b} #1" named its window "a 1" and
    "#{x}" left it empty (issue 31.10)."""
    layout = adapter.create_view(session_name="scratch", view_id=VIEW,
                                 window_name="a#{b} #1 ##", navigator_command=SLEEP,
                                 main_command=SLEEP)
    assert layout.main is not None and layout.main.window_name == "a#{b} #1 ##"
