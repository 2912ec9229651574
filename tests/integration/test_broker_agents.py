"""Agents talk through the broker, on a real private tmux server with fake agents.

A task agent sends its (parked) workspace agent a message through MCP (fake
Codex) or the CLI (fake Claude). Nothing is typed while the workspace pane is
parked; showing it again (a focus, no second send) types the one notification
line, the workspace agent polls and ACKs it. The person, a member without a
pane, gets a message too and sees it in the view's Inbox and in the read-only
stream running in its own tmux pane.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from core.context.requests import new_request_id
from core.model.enums import Provider
from tests.integration.journey_env import make_live_engine, one, tmux, type_line
from tests.integration.transitions_env import screen
from tests.waiting import retry_until


def _broker(path: Path, sql: str, *args) -> list[tuple]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return [tuple(r) for r in conn.execute(sql, args).fetchall()]
    finally:
        conn.close()




def _activity(engine, frame_id: str) -> str | None:
    row = one(engine, "SELECT activity FROM provider_sessions WHERE session_key ="
                       " (SELECT current_session_key FROM frames WHERE frame_id = ?)", frame_id)
    return row[0] if row else None


def _quiet_and_ready(engine, frame_id: str) -> bool:
    """Ready, and no hook of the frame's session recorded anything for half a second."""
    query = ("SELECT activity, last_observed_at, updated_at FROM provider_sessions"
             " WHERE session_key = (SELECT current_session_key FROM frames WHERE frame_id = ?)")
    before = one(engine, query, frame_id)
    time.sleep(0.5)
    return before is not None and before[0] == "ready" and one(engine, query, frame_id) == before


@pytest.mark.parametrize("provider", [Provider.CODEX, Provider.CLAUDE])
def test_task_agent_messages_parked_workspace(tmp_path: Path, tmux_socket: Path, monkeypatch,
                                              provider: Provider) -> None:
    monkeypatch.setenv("SWITCHBOARD_HOME", str(tmp_path))
    engine = make_live_engine(tmp_path, tmux_socket)
    broker_db = tmp_path / "broker.sqlite3"
    route = engine.project_enter(new_request_id(), "alpha")
    engine.frame_start(new_request_id(), route.frame_id, provider)
    main = one(engine, "SELECT main_pane_id FROM user_views")[0]
    view_id = one(engine, "SELECT view_id FROM user_views")[0]
    assert retry_until(lambda: ">" in screen(tmux_socket, main).split(), 15.0)

    # Launched means registered: one fleet for the project, the workspace its Director,
    # the person a member without a pane.
    fleets = _broker(broker_db, "SELECT fleet_id, name, director_member_id FROM fleets")
    assert len(fleets) == 1 and fleets[0][1].startswith("project:")
    members = _broker(broker_db, "SELECT m.member_id, m.name, m.description, p.mux_pane_id"
                                 " FROM members m JOIN member_placements p USING (member_id)"
                                 " ORDER BY m.member_id")
    assert members[0][0] == fleets[0][2] and members[0][3] == main
    assert members[0][2] == f"switchboard-frame:{route.frame_id}"
    assert [m[1] for m in members[1:]] == ["person"] and members[1][3] is None

    type_line(tmux_socket, main, "hello")
    assert retry_until(lambda: _activity(engine, route.frame_id) == "ready", 15.0)
    type_line(tmux_socket, main, "/push Fix the bug :: Make test_foo pass")
    assert retry_until(lambda: one(engine, "SELECT state FROM view_transitions"
                                            " WHERE kind = 'push'") == ("completed",), 30)
    child_pane = one(engine, "SELECT main_pane_id FROM user_views")[0]
    child_frame = one(engine, "SELECT frame_id FROM frames WHERE title = 'Fix the bug'")[0]
    assert child_pane != main
    assert retry_until(lambda: _broker(
        broker_db, "SELECT p.mux_pane_id FROM members m JOIN member_placements p"
                   " USING (member_id) WHERE m.description = ?",
        f"switchboard-frame:{child_frame}") == [(child_pane,)], 15.0)
    assert retry_until(lambda: _activity(engine, child_frame) == "ready", 30)

    # The child (task agent) messages its parked parent and the person.
    type_line(tmux_socket, child_pane, "/msg workspace :: please review the diff")
    assert retry_until(lambda: _broker(broker_db, "SELECT COUNT(*) FROM messages") == [(1,)], 30)
    type_line(tmux_socket, child_pane, "/msg person :: tests pass now")
    assert retry_until(lambda: _broker(broker_db, "SELECT COUNT(*) FROM messages") == [(2,)], 30)
    tool = "switchboard.message_send(" if provider is Provider.CODEX else "message-send"
    assert tool in screen(tmux_socket, child_pane)
    to_parent = _broker(broker_db, "SELECT message_id, notified_at, status_state FROM messages"
                                   " WHERE text = 'please review the diff'")[0]
    assert to_parent[1] is None and to_parent[2] == "input_required"
    assert "[switchboard] message" not in screen(tmux_socket, main)  # parked: not typed

    # The person sees its message in the view's Inbox...
    from core.broker.inbox_view import inbox_for_view

    inbox = inbox_for_view(engine, engine.home, view_id)
    rows = {(e.from_name, e.to_name, e.text) for e in inbox}
    assert ("Fix the bug", "person", "tests pass now") in rows
    # ... and in the read-only stream, opened as its own pane of the view (key w).
    from core.broker.inbox_pane import OPT_INBOX, StreamPane, toggle_inbox_stream

    def stream_panes() -> list[str]:
        return [line.split()[0] for line in tmux(
            tmux_socket, "list-panes", "-a", "-F", f"#{{pane_id}} #{{{OPT_INBOX}}}"
        ).splitlines() if line.split()[1:] == [view_id]]

    assert toggle_inbox_stream(engine, view_id) is StreamPane.OPENED
    assert len(stream_panes()) == 1
    stream_pane = stream_panes()[0]
    assert retry_until(lambda: "tests pass now" in screen(tmux_socket, stream_pane), 30), \
        screen(tmux_socket, stream_pane)

    # The person answers from the navigator: the shown, ready child gets it typed at once.
    from core.broker.membership import person_send

    assert retry_until(lambda: _activity(engine, child_frame) == "ready", 30)
    sent = person_send(engine, child_frame, "thanks, carry on")
    assert sent.delivery == "typed into its pane" and sent.to_name == "Fix the bug"
    assert retry_until(lambda: _broker(broker_db, "SELECT status_state FROM messages"
                                                  " WHERE message_id = ?", sent.message_id)
                       == [("completed",)], 30), screen(tmux_socket, child_pane)
    assert f"message {sent.message_id}: thanks, carry on" in screen(tmux_socket, child_pane)

    # Showing the workspace again delivers: no second send.
    engine.view_focus(new_request_id(), view_id, route.frame_id)
    assert retry_until(lambda: one(engine, "SELECT main_pane_id FROM user_views")[0] == main, 30)
    line = f"[switchboard] message {to_parent[0]} from Fix the bug"
    assert retry_until(lambda: line in screen(tmux_socket, main), 30), screen(tmux_socket, main)
    assert retry_until(lambda: f"message {to_parent[0]}: please review the diff"
                       in screen(tmux_socket, main), 30), screen(tmux_socket, main)
    assert retry_until(lambda: _broker(broker_db, "SELECT status_state FROM messages"
                                                  " WHERE message_id = ?", to_parent[0])
                       == [("completed",)], 30), screen(tmux_socket, main)
    assert screen(tmux_socket, main).count(line) == 1
    # The stream pane stayed through the swap; the same key closes it.
    assert stream_panes() == [stream_pane]
    assert toggle_inbox_stream(engine, view_id) is StreamPane.CLOSED
    assert retry_until(lambda: stream_panes() == [], 15.0)
    # The person's message is never typed anywhere (no pane) and stays pending for them.
    assert _broker(broker_db, "SELECT status_state FROM messages WHERE text = 'tests pass now'"
                   ) == [("input_required",)]


def _pane_env(socket: Path, pane: str) -> dict[str, str]:
    """The environment the agent in ``pane`` (and so its MCP server) runs with."""
    pid = tmux(socket, "display-message", "-p", "-t", pane, "#{pane_pid}").strip()
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    env = dict(item.decode().split("=", 1) for item in raw if b"=" in item)
    env["TMUX_PANE"] = pane
    return env


def test_context_tools_back_and_ready_gate(tmp_path: Path, tmux_socket: Path,
                                           monkeypatch) -> None:
    from tests.core.test_mcp_server import McpProcess, error_text, ok_output

    monkeypatch.setenv("SWITCHBOARD_HOME", str(tmp_path))
    engine = make_live_engine(tmp_path, tmux_socket)
    broker_db = tmp_path / "broker.sqlite3"
    route = engine.project_enter(new_request_id(), "alpha")
    engine.frame_start(new_request_id(), route.frame_id, Provider.CODEX)
    main = one(engine, "SELECT main_pane_id FROM user_views")[0]
    assert retry_until(lambda: ">" in screen(tmux_socket, main).split(), 15.0)
    type_line(tmux_socket, main, "hello")
    assert retry_until(lambda: _activity(engine, route.frame_id) == "ready", 15.0)
    type_line(tmux_socket, main, "/push Fix the bug :: Make test_foo pass")
    assert retry_until(lambda: one(engine, "SELECT state FROM view_transitions"
                                            " WHERE kind = 'push'") == ("completed",), 30)
    child_pane = one(engine, "SELECT main_pane_id FROM user_views")[0]
    child_frame = one(engine, "SELECT frame_id FROM frames WHERE title = 'Fix the bug'")[0]
    assert retry_until(lambda: _activity(engine, child_frame) == "ready", 30)

    child = McpProcess(_pane_env(tmux_socket, child_pane))
    try:
        current = ok_output(child.call("switchboard_current", {}))
        assert current["frame"]["title"] == "Fix the bug" and current["view"]["i_am_shown"]
        assert current["parent"]["frame_id"] == route.frame_id
        assert current["project"] == "alpha" and current["unread_messages"] == 0
        context = ok_output(child.call("switchboard_context", {}))
        assert {f["title"] for f in context["frames"]} == {"Fix the bug",
                                                           one(engine, "SELECT title FROM"
                                                                " frames WHERE frame_id = ?",
                                                                route.frame_id)[0]}
        text = repr(current) + repr(context)
        assert child_pane not in text and str(tmp_path) not in text  # no panes, no paths
        # Sending is idempotent while unread; a bad recipient is a clear tool error.
        first = ok_output(child.call("message_send", {"to": "parent", "text": "look"}))
        again = ok_output(child.call("message_send", {"to": "parent", "text": "look"}))
        assert again["message_id"] == first["message_id"] and again["duplicate"]
        assert first["delivery"].startswith("pending: its pane is not shown")
        assert "no member 'nobody'" in error_text(
            child.call("message_send", {"to": "nobody", "text": "x"}))
        # task_back shows the parent; the parent is ready, so its line is typed at once.
        back = ok_output(child.call("task_back", {}))
        assert back["already"] is False
        assert retry_until(lambda: one(engine, "SELECT main_pane_id FROM user_views")[0] == main,
                           15.0)
        assert ok_output(child.call("task_back", {}))["already"] is True
        status = ok_output(child.call("transition_status", {}))
        assert [t["kind"] for t in status["transitions"]][:2] == ["back", "push"]
        assert retry_until(lambda: _broker(broker_db, "SELECT status_state FROM messages")
                           == [("completed",)], 30), screen(tmux_socket, main)

        # A shown agent that is working is not typed into: the line waits for its Stop.
        # First the turn the typed line started must be over (its Stop would overwrite
        # the working state set below).
        assert retry_until(lambda: _quiet_and_ready(engine, route.frame_id), 30)
        engine.conn.execute("UPDATE provider_sessions SET activity = 'working'"
                            " WHERE session_key = (SELECT current_session_key FROM frames"
                            " WHERE frame_id = ?)", (route.frame_id,))
        engine.conn.commit()
        busy = ok_output(child.call("message_send", {"to": "workspace", "text": "second"}))
        assert busy["delivery"] == "pending: its agent is working; it is typed at the " \
                                   "agent's next Stop"
        line = f"[switchboard] message {busy['message_id']} from"
        assert line not in screen(tmux_socket, main)
        type_line(tmux_socket, main, "hello again")  # a turn, then its trusted Stop
        assert retry_until(lambda: line in screen(tmux_socket, main), 30), \
            screen(tmux_socket, main)
        assert retry_until(lambda: _broker(broker_db, "SELECT status_state FROM messages"
                                                      " WHERE message_id = ?", busy["message_id"])
                           == [("completed",)], 30), screen(tmux_socket, main)
        history = ok_output(child.call("switchboard_history", {}))
        assert history["closed"] == []
    finally:
        child.close()

    # Closing the task deregisters its member; its messages are kept.
    engine.view_focus(new_request_id(), one(engine, "SELECT view_id FROM user_views")[0],
                      child_frame)
    assert retry_until(lambda: one(engine, "SELECT main_pane_id FROM user_views")[0]
                       == child_pane, 15.0)
    type_line(tmux_socket, child_pane, "/complete Fixed foo :: review")
    assert retry_until(lambda: one(engine, "SELECT lifecycle_state FROM frames WHERE"
                                            " frame_id = ?", child_frame) == ("closed",), 40)
    from core.broker.membership import after_launch

    after_launch(engine, route.frame_id)  # any later reconcile sees the closed frame
    assert _broker(broker_db, "SELECT status FROM members WHERE description = ?",
                   f"switchboard-frame:{child_frame}") == [("deregistered",)]
    assert _broker(broker_db, "SELECT COUNT(*) FROM messages") == [(2,)]


def test_resumed_agent_keeps_its_member_and_gets_what_waited(
        tmp_path: Path, tmux_socket: Path, monkeypatch) -> None:
    """Stop, send while stopped, resume: same member, new pane, the line arrives
    after the resumed agent's first Stop without a second send."""
    monkeypatch.setenv("SWITCHBOARD_HOME", str(tmp_path))
    engine = make_live_engine(tmp_path, tmux_socket)
    broker_db = tmp_path / "broker.sqlite3"
    route = engine.project_enter(new_request_id(), "alpha")
    engine.frame_start(new_request_id(), route.frame_id, Provider.CLAUDE)
    first_pane = one(engine, "SELECT main_pane_id FROM user_views")[0]
    assert retry_until(lambda: _activity(engine, route.frame_id) is not None, 15.0)
    member = _broker(broker_db, "SELECT member_id FROM members WHERE description = ?",
                     f"switchboard-frame:{route.frame_id}")
    engine.frame_stop(new_request_id(), route.frame_id)
    assert retry_until(lambda: first_pane not in tmux(tmux_socket, "list-panes", "-a", "-F",
                                                      "#{pane_id}").split(), 15.0)

    from core.broker.membership import person_send

    sent = person_send(engine, route.frame_id, "welcome back")
    assert sent.delivery.startswith("pending: its agent is not running")
    # The shell CLI, by names, goes through the same gate.
    from navigator.cli import main

    project = one(engine, "SELECT project_id FROM frames WHERE frame_id = ?",
                   route.frame_id)[0]
    title = one(engine, "SELECT title FROM frames WHERE frame_id = ?", route.frame_id)[0]
    monkeypatch.setenv("SWITCHBOARD_TMUX_SOCKET", str(tmux_socket))
    assert main(["message", "send", "--fleet", f"project:{project}", "--from", "person",
                 "--to", title, "from the shell"]) == 0
    engine.frame_start(new_request_id(), route.frame_id)
    pane = one(engine, "SELECT main_pane_id FROM user_views")[0]
    assert pane != first_pane
    assert _broker(broker_db, "SELECT m.member_id, p.mux_pane_id FROM members m"
                              " JOIN member_placements p USING (member_id)"
                              " WHERE m.description = ?",
                   f"switchboard-frame:{route.frame_id}") == [(member[0][0], pane)]
    type_line(tmux_socket, pane, "hello")  # a turn and its Stop
    assert retry_until(lambda: f"message {sent.message_id}: welcome back"
                       in screen(tmux_socket, pane), 30), screen(tmux_socket, pane)
    assert retry_until(lambda: _broker(broker_db, "SELECT status_state FROM messages")
                       == [("completed",), ("completed",)], 30)
    assert "message 2: from the shell" in screen(tmux_socket, pane)
