"""A notice the CLI puts up mid-turn, announced only by its hook, is needs-input at once.

Claude Code 2.1.332 behind a gateway shows a full-screen notice before the first action
auto mode checks and sends ``Notification(agent_needs_input)``; the turn waits on it (no
Stop) until the person presses Enter. The fake agent does the same on "NOTICETEST". The
hook is the trigger: the session is needs-input when the hook returns, and the dialog
watch reads that pane (it reads no other) and quotes the notice in the recovery; Enter
lets the turn go on, its Stop makes it ready and the recovery resolves. The same journey
runs against the real CLI in ``tests/realcli/test_claude_journey.py``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from core.context.requests import new_request_id
from core.model.enums import Provider
from core.providers.fake.agent import NOTICE_TITLE
from core.reconcile.reconcile import reconcile
from tests.integration.journey_env import make_live_engine, one, tmux, type_line
from tests.waiting import retry_until


def _activity(engine) -> tuple:  # noqa: ANN001
    return tuple(one(engine, "SELECT s.activity, s.activity_reason FROM provider_sessions s"
                             " JOIN frames f ON f.current_session_key = s.session_key"
                             " WHERE f.title = 'alpha'"))


def _open_notice(engine) -> tuple | None:  # noqa: ANN001
    reconcile(engine)  # the navigator's reconcile turn
    return one(engine, "SELECT bounded_explanation FROM recoveries"
                       " WHERE kind = 'provider_dialog' AND state = 'open'")


def test_a_mid_turn_notice_is_needs_input_then_ready_after_enter(
        tmp_path: Path, tmux_socket: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SWITCHBOARD_HOME", str(tmp_path))
    engine = make_live_engine(tmp_path, tmux_socket)
    route = engine.project_enter(new_request_id(), "alpha")
    engine.frame_start(new_request_id(), route.frame_id, Provider.CLAUDE)
    main = one(engine, "SELECT main_pane_id FROM user_views")[0]

    def screen() -> str:
        return tmux(tmux_socket, "capture-pane", "-p", "-t", main)
    assert retry_until(lambda: ">" in screen().split(), 15), screen()
    type_line(tmux_socket, main, "hello")
    assert retry_until(lambda: _activity(engine)[0] == "ready", 15)
    read: list[str] = []  # every pane the dialog watch reads from now on
    stage = engine.stage
    assert stage is not None
    real_read = stage.read_screens

    def counted(server_id: str, panes: Sequence[str], lines: int) -> dict[str, list[str]]:
        read.extend(panes)
        return real_read(server_id, panes, lines)
    monkeypatch.setattr(stage, "read_screens", counted)
    type_line(tmux_socket, main, "another turn, no notice")  # a turn no hook asks about
    for _ in range(3):
        assert _open_notice(engine) is None  # reconcile turns while it works and after
        time.sleep(0.5)
    assert read == []  # nothing is polled: no hook asked

    type_line(tmux_socket, main, "NOTICETEST please")
    assert retry_until(lambda: NOTICE_TITLE in screen(), 15), screen()
    shown = time.monotonic()
    # the hook wrote it before the notice was drawn: needs input within a second
    assert retry_until(lambda: _activity(engine) == ("needs_input", "question"), 1.0), \
        _activity(engine)
    assert time.monotonic() - shown <= 1.0
    assert retry_until(lambda: _open_notice(engine) is not None, 10)
    assert set(read) == {main}  # the hook made the watch read that pane, and only it
    (words,) = _open_notice(engine) or ("",)
    assert NOTICE_TITLE[:60] in words and "never types" in words, words

    # the turn waits on it: typed text is lost, no Stop comes
    tmux(tmux_socket, "send-keys", "-t", main, "-l", "xyz")
    time.sleep(1.5)
    assert _activity(engine) == ("needs_input", "question")
    assert NOTICE_TITLE in screen()

    tmux(tmux_socket, "send-keys", "-t", main, "Enter")  # the person: continue
    assert retry_until(lambda: _activity(engine) == ("ready", "turn_complete"), 15), \
        _activity(engine)
    assert "⎿ ran" in screen()
    assert retry_until(lambda: _open_notice(engine) is None, 10)
    assert one(engine, "SELECT state FROM recoveries WHERE kind = 'provider_dialog'") == \
        ("resolved",)
    assert _activity(engine) == ("ready", "turn_complete")  # the watch leaves Stop's word
