"""What each engine key asks for, without a screen: a request, a dialog, a refusal."""

from __future__ import annotations

from core.model.errors import SwitchboardError
from core.state.state_types import NavigatorState
from navigator import intents
from navigator.jobs import problem_text, request_problem
from navigator.lookup import frame_by_id
from navigator.screens.confirm import ConfirmScreen
from navigator.targeting import Panel, Refusal, Selection
from tests.navigator.scenario import Scenario


def _on(demo: Scenario, state: NavigatorState, title: str) -> Selection:
    frame = frame_by_id(state, demo.frames[title])
    assert frame is not None
    project = next(p for p in state.projects if frame in p.frames)
    return Selection(focused=Panel.TREE, tree_project_id=project.project_id, tree_frame=frame)


def test_keys_name_their_request_without_running_it(demo: Scenario) -> None:
    state = demo.client.state()
    start = intents.start(state, _on(demo, state, "Fix login"), demo.client)
    assert isinstance(start, intents.Request)
    assert (start.description, start.done) == ("Start", "Starting a session in Fix login")
    stop = intents.stop(state, _on(demo, state, "Fix login"), demo.client)
    assert isinstance(stop, intents.Ask) and isinstance(stop.screen, ConfirmScreen)
    assert stop.done(True) == "Stopped the agent of Fix login"
    mode = intents.toggle_mode(state, Selection(bound_view_id=demo.views["alpha"]),
                               demo.client)
    assert isinstance(mode, intents.Request) and mode.done.startswith("alpha: direct mode")


def test_a_key_without_a_target_is_refused(demo: Scenario) -> None:
    state = demo.client.state()
    closed = _on(demo, state, "Old spike")
    assert intents.start(state, closed, demo.client) == Refusal(
        "“Old spike” is closed; press r to reopen it first.")
    assert intents.complete(state, _on(demo, state, "alpha"), demo.client) == Refusal(
        "The workspace “alpha” has no parent; select a task to complete.")
    assert intents.recover(state, Selection(), demo.client) == Refusal(
        "No recovery selected: none is open.")
    assert isinstance(intents.reopen(state, closed, demo.client), intents.Request)


def test_failures_are_worded_for_a_person() -> None:
    refused = SwitchboardError("the view is moving", code="conflict")
    assert problem_text(refused) == "the view is moving"
    assert problem_text(RuntimeError("tmux did not answer")) == \
        "RuntimeError: tmux did not answer"
    assert request_problem("Start", NotImplementedError()) == (
        "Start is not available in this build yet; use the CLI (`switchboard --help`).")
    assert request_problem("Start", KeyError("x")).startswith(
        "Start failed unexpectedly (KeyError: 'x'). Nothing is retried automatically")
