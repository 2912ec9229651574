"""The broker CLI by name: fleets and members named as they were created, plus
show, cancel, broadcast, member capture and ping, and the Inbox row's recipient."""

from __future__ import annotations

import json
from pathlib import Path

import libtmux
import pytest

from tests.broker.conftest import wait_for_lines
from tests.broker.test_cli import run


def _crew(capsys: pytest.CaptureFixture[str], pane: str = "%0", window: str = "@0") -> None:
    assert run(capsys, "fleet", "create", "team", "--director-name", "boss", "--session",
               "scratch", "--window", window, "--pane", "%9999",
               "--coding-agent", "claude")[0] == 0
    for name, where in (("alice", pane), ("bob", None)):
        argv = ["member", "register", "--fleet", "team", "--name", name, "--session",
                "scratch", "--window", window, "--coding-agent", "codex"]
        if where:
            argv += ["--pane", where]
        code, _, err = run(capsys, *argv)
        assert code == 0, err


def test_names_wherever_a_fleet_or_member_is_named(
        sb_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _crew(capsys)
    code, out, _ = run(capsys, "message", "send", "--fleet", "team", "--from", "boss",
                       "--to", "bob", "hello bob", "--json")
    assert code == 0
    message_id = json.loads(out)["message"]["message_id"]
    code, out, _ = run(capsys, "message", "poll", "--member", "bob", "--json")
    assert [m["text"] for m in json.loads(out)] == ["hello bob"]
    code, out, _ = run(capsys, "inbox", "--member", "bob")
    assert "boss -> bob" in out
    code, out, _ = run(capsys, "message", "show", str(message_id))
    assert out.splitlines()[0].startswith(f"message {message_id} from boss (member 1) to bob")
    assert out.splitlines()[-1] == "hello bob"
    code, out, _ = run(capsys, "member", "list", "--fleet", "team", "--json")
    assert {m["name"] for m in json.loads(out)} == {"boss", "alice", "bob"}

    code, _, err = run(capsys, "message", "send", "--fleet", "team", "--from", "boss",
                       "--to", "carol", "x")
    assert code == 2 and err == ("switchboard: unknown_member: no active member named "
                                 "'carol' in fleet 1; `switchboard member list` shows "
                                 "members\n")
    code, _, err = run(capsys, "member", "list", "--fleet", "crew")
    assert code == 2 and "unknown_fleet: no live fleet named 'crew'" in err

    # Only the sender can cancel, and only while unread.
    code, _, err = run(capsys, "message", "cancel", "--from", "bob", str(message_id))
    assert code == 2 and "only its sender can cancel it" in err
    code, out, _ = run(capsys, "message", "cancel", "--from", "boss", str(message_id))
    assert code == 0 and "cancelled" in out
    code, out, _ = run(capsys, "message", "poll", "--member", "bob", "--json")
    assert json.loads(out) == []
    code, _, err = run(capsys, "message", "cancel", "--from", "boss", str(message_id))
    assert code == 2 and "nothing to cancel" in err

    code, out, _ = run(capsys, "message", "broadcast", "--fleet", "team", "--from", "bob",
                       "all hands", "--json")
    assert sorted(r["message"]["to_member_id"] for r in json.loads(out)) == [1, 2]

    code, _, err = run(capsys, "fleet", "delete", "team")
    assert code == 0, err


def test_member_capture_and_ping(sb_home: Path, tmux_socket: Path,
                                 tmux_server: libtmux.Server,
                                 capsys: pytest.CaptureFixture[str],
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    pane = tmux_server.cmd("new-window", "-d", "-t", "scratch:", "-P", "-F", "#{pane_id}",
                           "printf 'one\\ntwo\\nthree\\n'; exec cat").stdout[0]
    window = tmux_server.cmd("display-message", "-p", "-t", pane, "#{window_id}").stdout[0]
    monkeypatch.setenv("SWITCHBOARD_TMUX_SOCKET", str(tmux_socket))
    _crew(capsys, pane, window)
    wait_for_lines(tmux_server, pane, 3)
    code, out, _ = run(capsys, "member", "capture", "alice", "--lines", "2")
    assert (code, out) == (0, "two\nthree\n")
    code, out, _ = run(capsys, "member", "ping", "alice")
    assert code == 0 and out == f"member 2 (alice) pane {pane}: alive, takes input, running cat\n"
    code, _, err = run(capsys, "member", "ping", "bob")
    assert code == 2 and "has no pane" in err
    tmux_server.cmd("kill-pane", "-t", pane)
    code, out, _ = run(capsys, "member", "ping", "alice")
    assert code == 1 and "no longer exists" in out


def test_inbox_row_names_sender_and_recipient() -> None:
    from core.broker.broker import InboxEntry, MessageState
    from navigator.widgets.inbox import _who

    entry = InboxEntry(1, 1, 2, "Fix the bug", 3, "person", "done", MessageState.INPUT_REQUIRED,
                       "2026-01-01T00:00:00.000Z", 1.0)
    assert _who(entry) == "Fix the bug -> person"


def test_person_means_the_person_and_messages_have_one_limit(
        sb_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A task titled "person" does not make `--to person` ambiguous, and the person's
    CLI is held to the agents' 8,000 characters (issue 31.10)."""
    from core.broker.broker import MAX_MESSAGE_CHARS

    _crew(capsys)
    for name, agent in (("person", "claude"), ("person", "person")):  # a task, the person
        code, _, err = run(capsys, "member", "register", "--fleet", "team", "--name", name,
                           "--session", "scratch", "--window", "@0", "--coding-agent", agent)
        assert code == 0, err
    code, out, err = run(capsys, "message", "send", "--fleet", "team", "--from", "boss",
                         "--to", "person", "for you", "--json")
    assert code == 0, err
    to = json.loads(out)["message"]["to_member_id"]
    code, out, _ = run(capsys, "member", "list", "--fleet", "team", "--json")
    assert [m["coding_agent"] for m in json.loads(out) if m["member_id"] == to] == ["person"]

    code, _, err = run(capsys, "message", "send", "--fleet", "team", "--from", "person",
                       "--to", "bob", "x" * (MAX_MESSAGE_CHARS + 1))
    assert code == 2 and f"the limit is {MAX_MESSAGE_CHARS}" in err, err
    code, out, _ = run(capsys, "message", "poll", "--member", "bob", "--json")
    assert json.loads(out) == []
    code, _, err = run(capsys, "message", "send", "--fleet", "team", "--from", "person",
                       "--to", "bob", "x" * MAX_MESSAGE_CHARS)
    assert code == 0, err
