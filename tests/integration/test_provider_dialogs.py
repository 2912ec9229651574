"""A pane waiting on its CLI's own start-up dialog is needs-input, quoted, never typed into.

The fake agent shows the dialog Claude Code 2.1.300+ shows once ("Make auto mode your
default permission mode?", ``--startup-dialog``), as the real one does: a list answered
with arrows and Enter, pastes refused, an initial prompt held until it is answered.
The same journey runs against the real CLIs in ``tests/realcli``.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from core.config.config import ProviderConfig, load_config, render_config
from core.context.requests import new_request_id
from core.model.enums import Provider
from core.reconcile.reconcile import reconcile
from tests.integration.journey_env import (
    fake_provider_command,
    make_live_engine,
    one,
    tmux,
    type_line,
)
from tests.waiting import retry_until

TITLE = "Make auto mode your default permission mode?"


def _open_dialog(engine) -> tuple | None:  # noqa: ANN001
    reconcile(engine)  # the navigator's reconcile turn
    return one(engine, "SELECT bounded_explanation, subject_id FROM recoveries"
                       " WHERE kind = 'provider_dialog' AND state = 'open'")


def _activity(engine, title: str) -> tuple:  # noqa: ANN001
    return tuple(one(engine, "SELECT s.activity, s.activity_reason FROM provider_sessions s"
                             " JOIN frames f ON f.current_session_key = s.session_key"
                             " WHERE f.title = ?", title))


def test_a_start_up_dialog_is_needs_input_until_the_person_answers_it(
        tmp_path: Path, tmux_socket: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SWITCHBOARD_HOME", str(tmp_path))
    engine = make_live_engine(tmp_path, tmux_socket)
    dialog = (*fake_provider_command("claude"), "--startup-dialog", TITLE)
    providers = dict(engine.config.providers)
    providers[Provider.CLAUDE] = ProviderConfig(command=dialog)
    engine.config = replace(engine.config, providers=providers)
    route = engine.project_enter(new_request_id(), "alpha")
    engine.frame_start(new_request_id(), route.frame_id, Provider.CLAUDE)
    main = one(engine, "SELECT main_pane_id FROM user_views")[0]
    assert retry_until(lambda: TITLE in tmux(tmux_socket, "capture-pane", "-p", "-t", main),
                       15), tmux(tmux_socket, "capture-pane", "-p", "-t", main)

    # the reconcile turn reads the fresh launch's pane and finds the dialog
    assert retry_until(lambda: _open_dialog(engine) is not None, 20)
    words, surface = _open_dialog(engine) or ("", "")
    assert TITLE in words and "never types" in words
    assert _activity(engine, "alpha") == ("needs_input", "question")
    assert surface == one(engine, "SELECT surface_id FROM surfaces WHERE pane_id = ?"
                                  " AND lifecycle_state = 'live'", main)[0]

    # a line typed now would answer it (a paste is refused): nothing of Switchboard's is
    # typed; the person answers it
    tmux(tmux_socket, "send-keys", "-t", main, "Down")
    tmux(tmux_socket, "send-keys", "-t", main, "Enter")
    assert retry_until(lambda: "✓ No, keep manual mode" in
                       tmux(tmux_socket, "capture-pane", "-p", "-t", main), 15)
    assert retry_until(lambda: _open_dialog(engine) is None, 10)
    assert _activity(engine, "alpha") == ("unknown", "unknown")  # only a Stop says ready
    type_line(tmux_socket, main, "hello")
    assert retry_until(lambda: _activity(engine, "alpha")[0] == "ready", 15)


def test_a_child_whose_cli_opens_on_a_dialog_claims_after_the_answer(
        tmp_path: Path, tmux_socket: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The brief's fixed line is the child's launch prompt: its CLI holds it behind the
    dialog, the control turn stays unconfirmed, the pane is read and shown as waiting;
    once the person answers, the prompt goes in and the child claims its brief."""
    monkeypatch.setenv("SWITCHBOARD_HOME", str(tmp_path))
    engine = make_live_engine(tmp_path, tmux_socket)
    route = engine.project_enter(new_request_id(), "alpha")
    engine.frame_start(new_request_id(), route.frame_id, Provider.CLAUDE)
    main = one(engine, "SELECT main_pane_id FROM user_views")[0]
    assert retry_until(lambda: ">" in tmux(tmux_socket, "capture-pane", "-p", "-t", main)
                       .split(), 15)
    # the child's launch (made by the agent's own tool call) meets the dialog
    config_path = tmp_path / "config.toml"
    config = load_config(config_path)
    providers = dict(config.providers)
    providers[Provider.CLAUDE] = ProviderConfig(
        command=(*fake_provider_command("claude"), "--startup-dialog", TITLE))
    config_path.write_text(render_config(replace(config, providers=providers)))
    type_line(tmux_socket, main, "/push Fix the bug :: Make test_foo pass")
    assert retry_until(lambda: one(engine, "SELECT COUNT(*) FROM frames"
                                           " WHERE title = 'Fix the bug'") == (1,), 20)
    assert retry_until(lambda: _open_dialog(engine) is not None, 20)
    child_pane = one(engine, "SELECT main_pane_id FROM user_views")[0]
    assert _activity(engine, "Fix the bug") == ("needs_input", "question")
    assert one(engine, "SELECT first_claimed_at FROM transition_briefs") == (None,)
    screen = tmux(tmux_socket, "capture-pane", "-p", "-t", child_pane)
    assert "transition_claim" not in screen  # the fixed line waits behind the dialog

    tmux(tmux_socket, "send-keys", "-t", child_pane, "Enter")  # the person: yes
    assert retry_until(lambda: one(engine, "SELECT state FROM view_transitions"
                                           " WHERE kind = 'push'") == ("completed",), 20)
    assert one(engine, "SELECT first_claimed_at FROM transition_briefs")[0] is not None
    assert retry_until(lambda: _open_dialog(engine) is None, 10)


def test_a_claim_line_is_never_typed_into_a_notice_shown_after_a_turn(
        tmp_path: Path, tmux_socket: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The parent's turn ended (a trusted Stop: ready), then its CLI put up a notice.
    The returning child's claim line is not typed into it: the parent is needs-input with
    the notice's words; once the person answers it, their next prompt carries the fixed
    line as context and the handoff is claimed without a line ever being typed."""
    monkeypatch.setenv("SWITCHBOARD_HOME", str(tmp_path))
    engine = make_live_engine(tmp_path, tmux_socket)
    route = engine.project_enter(new_request_id(), "alpha")
    engine.frame_start(new_request_id(), route.frame_id, Provider.CLAUDE)
    main = one(engine, "SELECT main_pane_id FROM user_views")[0]

    def screen(pane: str) -> str:
        return tmux(tmux_socket, "capture-pane", "-p", "-t", pane)
    assert retry_until(lambda: ">" in screen(main).split(), 15)
    notice = "We're changing auto mode for gateways"
    type_line(tmux_socket, main, f"/notice {notice}")  # shown after the next turn
    assert retry_until(lambda: _activity(engine, "alpha")[0] == "ready", 15)
    type_line(tmux_socket, main, "/push Fix the bug :: Make test_foo pass")
    assert retry_until(lambda: one(engine, "SELECT state FROM view_transitions"
                                           " WHERE kind = 'push'") == ("completed",), 20)
    child_pane = one(engine, "SELECT main_pane_id FROM user_views")[0]
    assert retry_until(lambda: notice in screen(main), 15)  # up over the parked parent
    assert _activity(engine, "alpha") == ("ready", "turn_complete")  # the hooks' word

    type_line(tmux_socket, child_pane, "/complete Fixed foo :: review and merge")
    assert retry_until(lambda: one(engine, "SELECT main_pane_id FROM user_views") == (main,),
                       20)
    assert retry_until(lambda: one(engine, "SELECT bounded_explanation FROM recoveries"
                                           " WHERE kind = 'provider_dialog' AND state = 'open'")
                       is not None, 15)
    (words,) = one(engine, "SELECT bounded_explanation FROM recoveries"
                           " WHERE kind = 'provider_dialog' AND state = 'open'")
    assert notice in words
    assert _activity(engine, "alpha") == ("needs_input", "question")
    assert one(engine, "SELECT state, submission_count FROM control_turns"
                       " WHERE kind = 'claim_handoff'") == ("prepared", 0)
    assert "transition_claim" not in screen(main)

    tmux(tmux_socket, "send-keys", "-t", main, "Down")  # the person answers it
    tmux(tmux_socket, "send-keys", "-t", main, "Enter")
    assert retry_until(lambda: "✓ No, keep manual mode" in screen(main), 15)
    assert retry_until(lambda: _open_dialog(engine) is None, 10)
    # The person's next prompt carries the fixed line as the prompt hook's context (the
    # handoff waits): the parent claims it in that turn, and nothing was ever typed.
    type_line(tmux_socket, main, "thanks")
    assert retry_until(lambda: one(engine, "SELECT first_claimed_at FROM completion_handoffs")[0]
                       is not None, 20)
    assert one(engine, "SELECT state, submission_count FROM control_turns"
                       " WHERE kind = 'claim_handoff'") == ("superseded", 0)
    assert "> Call transition_claim()" not in screen(main)
