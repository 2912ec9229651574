"""Which view, frame or task a key acts on, and the refusals, without a screen."""

from __future__ import annotations

from dataclasses import replace

from core.apps.client import SubjectPlace
from core.state.state_types import HostRow, NavigatorState, ProjectRow
from navigator.lookup import frame_by_id, view_by_id
from navigator.targeting import (
    NO_VIEW,
    Panel,
    Refusal,
    RemoteFrame,
    Selection,
    closed_frame_for_key,
    frame_for_key,
    inbox_view_id,
    recovery_about,
    recovery_target,
    remote_frame_for_key,
    target_frame,
    target_view,
    task_for_key,
    view_for_key,
    view_to_focus,
)
from tests.navigator.scenario import Scenario

REMOTE_HOST = "44444444-4444-4444-8444-444444444444"


def _project(state: NavigatorState, name: str) -> ProjectRow:
    return next(p for p in state.projects if p.name == name)


def _on_tree(demo: Scenario, state: NavigatorState, title: str, **extra: object) -> Selection:
    frame = frame_by_id(state, demo.frames[title])
    assert frame is not None
    return Selection(focused=Panel.TREE, tree_project_id=_project(state, "alpha").project_id,
                     tree_frame=frame, **extra)  # type: ignore[arg-type]


def test_the_bound_view_wins_then_the_focused_panel_then_the_current_view(
        demo: Scenario) -> None:
    state = demo.client.state()
    alpha, beta = demo.views["alpha"], demo.views["beta"]
    on_tree = _on_tree(demo, state, "Fix login", current_view_id=beta)
    assert target_view(state, on_tree).view_id == alpha  # type: ignore[union-attr]
    assert target_view(state, replace(on_tree, bound_view_id=beta)).view_id == beta  # type: ignore[union-attr]
    on_views = Selection(focused=Panel.VIEWS, views_cursor=beta, current_view_id=alpha)
    assert target_view(state, on_views).view_id == beta  # type: ignore[union-attr]
    elsewhere = Selection(focused=Panel.OTHER, views_cursor=beta, current_view_id=alpha)
    assert target_view(state, elsewhere).view_id == alpha  # type: ignore[union-attr]
    assert target_view(state, Selection()) is not None  # the first live view
    assert target_view(None, Selection()) is None


def test_the_frame_is_the_tree_cursor_only_while_the_tree_has_the_keyboard(
        demo: Scenario) -> None:
    state = demo.client.state()
    on_tree = _on_tree(demo, state, "Write docs")
    assert target_frame(state, on_tree).frame_id == demo.frames["Write docs"]  # type: ignore[union-attr]
    away = replace(on_tree, focused=Panel.OTHER, current_view_id=demo.views["alpha"])
    view = view_by_id(state, demo.views["alpha"])
    assert view is not None
    assert target_frame(state, away).frame_id == view.active_frame_id  # type: ignore[union-attr]


def test_frame_keys_refuse_with_what_to_select(demo: Scenario) -> None:
    state = demo.client.state()
    assert frame_for_key(None, Selection(), "Select a frame.") == Refusal("Select a frame.")
    closed = _on_tree(demo, state, "Old spike")
    refusal = frame_for_key(state, closed, "unused", open_only=True)
    assert refusal == Refusal("“Old spike” is closed; press r to reopen it first.")
    assert frame_for_key(state, closed, "unused").frame_id == demo.frames["Old spike"]  # type: ignore[union-attr]
    assert closed_frame_for_key(state, closed).frame_id == demo.frames["Old spike"]  # type: ignore[union-attr]
    assert closed_frame_for_key(state, _on_tree(demo, state, "Fix login")) == Refusal(
        "Select a closed frame under History to reopen it.")


def test_complete_and_close_need_an_open_task(demo: Scenario) -> None:
    state = demo.client.state()
    workspace = _on_tree(demo, state, "alpha")
    assert task_for_key(state, workspace, "complete") == Refusal(
        "The workspace “alpha” has no parent; select a task to complete.")
    assert task_for_key(state, _on_tree(demo, state, "Old spike"), "close") == Refusal(
        "“Old spike” is closed, not open.")
    task = task_for_key(state, _on_tree(demo, state, "Fix login"), "close")
    assert not isinstance(task, Refusal) and task.frame_id == demo.frames["Fix login"]


def test_another_hosts_rows_are_never_targets(demo: Scenario) -> None:
    state = demo.client.state()
    alpha = _project(state, "alpha")
    remote = replace(
        state, hosts=(*state.hosts, HostRow(host_id=REMOTE_HOST, display_name="buildbox",
                                            generation_id=REMOTE_HOST, stale=False,
                                            reachability="online")),
        projects=tuple(replace(p, host_id=REMOTE_HOST) if p is alpha else p
                       for p in state.projects),
        views=tuple(replace(v, host_id=REMOTE_HOST) if v.view_id == demo.views["alpha"]
                    else v for v in state.views))
    refusal = Refusal("This belongs to host buildbox; its state here is a read-only cache. "
                      "From here, enter opens it on buildbox, t messages its agent and p "
                      "pushes a task under it; run other actions on buildbox.")
    assert frame_for_key(remote, _on_tree(demo, remote, "Fix login"), "x") == refusal
    assert view_for_key(remote, Selection(bound_view_id=demo.views["alpha"])) == refusal
    assert view_to_focus(remote, alpha.project_id) == refusal
    assert view_for_key(state, Selection(bound_view_id="gone")) == Refusal(NO_VIEW)


def test_a_remote_frame_is_acted_on_through_its_host_while_it_is_online(
        demo: Scenario) -> None:
    state = demo.client.state()
    alpha = _project(state, "alpha")

    def hosted(reachability: str):  # alpha's rows as another host's cached rows
        return replace(
            state, hosts=(*state.hosts, HostRow(host_id=REMOTE_HOST, display_name="buildbox",
                                                generation_id=REMOTE_HOST, stale=False,
                                                reachability=reachability)),
            projects=tuple(replace(p, host_id=REMOTE_HOST) if p is alpha else p
                           for p in state.projects),
            views=tuple(replace(v, host_id=REMOTE_HOST) if v.view_id == demo.views["alpha"]
                        else v for v in state.views))
    online = hosted("online")
    found = remote_frame_for_key(online, _on_tree(demo, online, "Fix login"))
    assert found == RemoteFrame(REMOTE_HOST, "buildbox",
                                _on_tree(demo, online, "Fix login").tree_frame)
    closed = remote_frame_for_key(online, _on_tree(demo, online, "Old spike"), open_only=True)
    assert closed == Refusal("“Old spike” on buildbox is closed; reopen it on buildbox first.")
    offline = hosted("offline")
    assert remote_frame_for_key(offline, _on_tree(demo, offline, "Fix login")) == Refusal(
        "Host buildbox is offline; its frames take requests again once it is back.")
    # a local frame is not a remote one
    assert remote_frame_for_key(state, _on_tree(demo, state, "Fix login")) is None


def test_inbox_follows_the_wanted_view_while_it_lives(demo: Scenario) -> None:
    state = demo.client.state()
    assert inbox_view_id(state, demo.views["beta"]) == demo.views["beta"]
    assert inbox_view_id(state, "retired-or-unknown") in {demo.views["alpha"],
                                                          demo.views["beta"]}


def test_a_recovery_subject_fills_in_its_view_or_frame(demo: Scenario) -> None:
    state = demo.client.state()
    alpha_view = view_by_id(state, demo.views["alpha"])
    assert alpha_view is not None
    by_frame = recovery_target(state, SubjectPlace(None, demo.frames["Fix login"]))
    assert by_frame.view == alpha_view and by_frame.found is not None
    by_view = recovery_target(state, SubjectPlace(demo.views["alpha"], None))
    assert by_view.found is not None and by_view.found[0].frame_id == alpha_view.active_frame_id
    gone = recovery_target(state, SubjectPlace(None, None))
    assert gone.view is None and gone.found is None
    assert recovery_about(state, SubjectPlace(None, demo.frames["Fix login"])) == \
        "Fix login (alpha)"
    assert recovery_about(state, SubjectPlace(demo.views["alpha"], None)) == \
        f"the view {alpha_view.title}"
    assert recovery_about(state, SubjectPlace(None, None)) is None
