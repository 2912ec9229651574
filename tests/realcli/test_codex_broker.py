"""Issue 13 with the real Codex CLI: a task agent messages its parked workspace agent.

The same journey as ``test_claude_journey``'s broker test (and the fake-agent
``tests/integration/test_broker_agents.py``), with each Codex of the tested window in the
person's own Codex home against the loopback Responses stand-in: the child
sends through MCP (``message_send``); nothing is typed while the workspace is
parked; showing it types the one notification line, which Codex must submit
(it reads a burst of keys as a paste, where Enter is a newline); the workspace
agent polls and ACKs; the person sees the message in the Inbox meanwhile.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from core.broker.delivery import managed_line
from core.broker.inbox_view import inbox_for_view
from core.context.requests import new_request_id
from core.engine.engine import Engine
from core.model.enums import Provider
from storage.uri import sqlite_uri
from tests.integration.journey_env import one, tmux
from tests.realcli.harness import witness_only
from tests.realcli.harness_codex import (
    PROJECT,
    act_as_person,
    make_codex_engine,
    make_person,
    screen,
    switchboard_home,
    type_prompt,
)
from tests.realcli.install import RealClis
from tests.realcli.openai_standin import OpenAIStandin
from tests.waiting import fail_unless

pytestmark = [pytest.mark.tmux, pytest.mark.timeout(300)]

COMPOSER = "Ask Codex to do anything"
TURN_S = 60.0


def _broker(root: Path, sql: str, *args: object) -> list[tuple]:
    path = switchboard_home(root).broker_path
    if not path.exists():
        return []
    conn = sqlite3.connect(sqlite_uri(path, mode="ro"), uri=True)
    try:
        return [tuple(r) for r in conn.execute(sql, args).fetchall()]
    finally:
        conn.close()


def _activity(engine: Engine, frame_id: str) -> str | None:
    row = one(engine, "SELECT s.activity FROM frames f JOIN provider_sessions s"
                      " ON s.session_key = f.current_session_key WHERE f.frame_id = ?", frame_id)
    return None if row is None else row[0]


def _main(engine: Engine) -> str:
    return str(one(engine, "SELECT main_pane_id FROM user_views")[0])


def _words(text: str) -> str:
    return " ".join(text.split())


def test_real_codex_task_agent_messages_its_parked_workspace(
        codex_clis: RealClis, tmp_path: Path, tmux_socket: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    with OpenAIStandin() as standin:
        person = make_person(tmp_path, codex_clis, standin.base_url)
        act_as_person(monkeypatch, tmp_path, person)
        engine = make_codex_engine(tmp_path, tmux_socket, codex_clis)

        def look(pane: str) -> str:
            return screen(tmux_socket, pane)

        def dump() -> str:
            out = [repr(_broker(tmp_path, "SELECT message_id, from_member_id, to_member_id,"
                                          " text, status_state, notified_at FROM messages")),
                   repr([tuple(r) for r in engine.conn.execute(
                       "SELECT kind, state, target_frame_id FROM view_transitions")]),
                   repr([tuple(r) for r in engine.conn.execute(
                       "SELECT session_key, activity FROM provider_sessions")])]
            for pane in tmux(tmux_socket, "list-panes", "-a", "-F", "#{pane_id}").split():
                out.append(f"--- pane {pane} ---\n{look(pane).rstrip()}")
            return "\n".join(out)

        route = engine.project_enter(new_request_id(), PROJECT)
        view_id, parent = route.view_id, route.frame_id
        engine.frame_start(new_request_id(), parent, Provider.CODEX)
        main = _main(engine)
        fail_unless(lambda: COMPOSER in look(main), TURN_S, dump)
        workspace = str(one(engine, "SELECT title FROM frames WHERE frame_id = ?", parent)[0])

        type_prompt(tmux_socket, main, "PUSH Fix the bug :: Make test_foo pass")
        fail_unless(lambda: one(engine, "SELECT state FROM view_transitions WHERE kind ="
                                         " 'push'") == ("completed",), TURN_S, dump)
        child_pane = _main(engine)
        child = str(one(engine, "SELECT frame_id FROM frames WHERE title = 'Fix the bug'")[0])
        fail_unless(lambda: one(engine, "SELECT state FROM control_turns WHERE kind ="
                                         " 'claim_brief'") == ("settled",), TURN_S, dump)
        fail_unless(lambda: _activity(engine, child) == "ready", TURN_S, dump)

        # The task agent sends; its parent is parked, so the message waits unstamped.
        type_prompt(tmux_socket, child_pane, "MSG workspace :: please review the diff")
        fail_unless(lambda: _broker(tmp_path, "SELECT COUNT(*) FROM messages") == [(1,)],
                    TURN_S, dump)
        fail_unless(lambda: "Sent 1" in look(child_pane), TURN_S, dump)
        fail_unless(lambda: _activity(engine, child) == "ready", TURN_S, dump)
        assert "switchboard.message_send" in look(child_pane), dump()
        ((message_id, notified, state),) = _broker(
            tmp_path, "SELECT message_id, notified_at, status_state FROM messages")
        assert (notified, state) == (None, "input_required"), dump()
        assert "[switchboard] message" not in look(main), dump()  # parked: never typed
        inbox = [(e.message_id, e.from_name, e.to_name, e.text, e.pending)
                 for e in inbox_for_view(engine, switchboard_home(tmp_path), view_id)]
        assert (message_id, "Fix the bug", workspace, "please review the diff", True) in inbox, \
            inbox

        # Showing the workspace types the line once; Codex submits it, polls and ACKs.
        # The typist's own stamp is lost here (as when it is killed right after typing):
        # Codex's prompt hook is the witness that stamps the message.
        typist_stamps = witness_only(monkeypatch)
        engine.view_focus(new_request_id(), view_id, parent)
        assert _main(engine) == main
        fail_unless(lambda: _broker(tmp_path, "SELECT status_state FROM messages")
                    == [("completed",)], TURN_S, dump)
        fail_unless(lambda: f"Acked {message_id}" in look(main), TURN_S, dump)
        fail_unless(lambda: _activity(engine, parent) == "ready", TURN_S, dump)
        text = _words(look(main))
        assert text.count(_words(managed_line(message_id, "Fix the bug"))) == 1, dump()
        assert "switchboard.message_poll" in text and "switchboard.message_ack" in text, dump()
        assert _broker(tmp_path, "SELECT COUNT(*), COUNT(notified_at) FROM messages") == \
            [(1, 1)]
        assert typist_stamps == [message_id], dump()  # the typist typed it, and only once
