"""The fleet/member/message/inbox CLI groups: thin, JSON-capable, exact errors."""

from __future__ import annotations

import json
from pathlib import Path

import libtmux
import pytest

from navigator.cli import main
from tests.broker.conftest import wait_for_lines


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_round_trip(sb_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "fleet", "list", "--json")
    assert (code, out) == (0, "[]\n")
    assert not (sb_home / "broker.sqlite3").exists()  # listing creates nothing

    code, out, _ = run(capsys, "fleet", "create", "crew", "--director-name", "boss",
                       "--session", "s", "--window", "@1", "--pane", "%1",
                       "--coding-agent", "claude", "--json")
    assert code == 0
    created = json.loads(out)
    director = created["director"]["member"]["member_id"]
    fleet = created["fleet"]["fleet_id"]
    assert created["director"]["member"]["kind"] == "director"
    assert (sb_home / "broker.sqlite3").exists()  # default: $SWITCHBOARD_HOME/broker.sqlite3

    code, out, _ = run(capsys, "member", "register", "--fleet", str(fleet), "--name", "w",
                       "--session", "s", "--window", "@1", "--coding-agent", "codex",
                       "--json")
    worker = json.loads(out)["member"]["member_id"]
    assert json.loads(out)["placement"]["mux_pane_id"] is None

    code, out, err = run(capsys, "message", "send", "--fleet", str(fleet), "--from",
                         str(director), "--to", str(worker), "hello", "--json")
    assert code == 0 and err == ""  # pane pending: nothing to notify, no diagnostic
    message = json.loads(out)["message"]
    assert message["status"] == "input_required" and "notified_at" not in message

    code, out, _ = run(capsys, "message", "poll", "--member", str(worker), "--json")
    assert [m["text"] for m in json.loads(out)] == ["hello"]

    code, out, _ = run(capsys, "member", "list", "--json")
    assert {m["member_id"] for m in json.loads(out)} == {director, worker}

    code, _, err = run(capsys, "message", "ack", "--member", str(director),
                       str(message["message_id"]))
    assert code == 2
    assert err.startswith("switchboard: not_recipient: message")

    code, out, _ = run(capsys, "message", "ack", "--member", str(worker),
                       str(message["message_id"]))
    assert (code, out) == (0, f"message {message['message_id']} ACKed\n")
    code, _, err = run(capsys, "message", "ack", "--member", str(worker),
                       str(message["message_id"]))
    assert code == 2 and "already_acked" in err

    code, out, _ = run(capsys, "message", "wait", "--member", str(worker), "--timeout", "0.1")
    assert (code, out) == (1, "(timed out)\n")

    code, out, _ = run(capsys, "inbox", "--member", str(worker), "--include-completed",
                       "--json")
    assert [e["status"] for e in json.loads(out)] == ["completed"]

    code, out, _ = run(capsys, "member", "show", str(worker))
    assert "placement: tmux s @1 (pane pending) running codex" in out

    code, _, err = run(capsys, "member", "delete", str(director))
    assert code == 2 and err.startswith("switchboard: director_protected:")
    code, _, err = run(capsys, "message", "send", "--fleet", str(fleet), "--from",
                       str(director), "--to", "77", "x")
    assert code == 2 and err == ("switchboard: unknown_member: no member 77; "
                                 "`switchboard member list` shows active members\n")

    code, out, _ = run(capsys, "fleet", "delete", str(fleet))
    assert out == f"fleet {fleet} deleted; 2 members deregistered; messages kept\n"
    code, _, err = run(capsys, "message", "send", "--fleet", str(fleet), "--from",
                       str(director), "--to", str(worker), "x")
    assert code == 2 and "fleet_deleted" in err


def test_cli_send_notifies_through_socket_option_and_env(
        sb_home: Path, tmux_socket: Path, tmux_server: libtmux.Server,
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    pane = tmux_server.cmd("new-window", "-d", "-t", "scratch:", "-P", "-F", "#{pane_id}",
                           "stty -echo; exec cat").stdout[0]
    window = tmux_server.cmd("display-message", "-p", "-t", pane, "#{window_id}").stdout[0]
    run(capsys, "fleet", "create", "--director-name", "boss", "--session", "scratch",
        "--window", "@0", "--pane", "%0", "--coding-agent", "claude")
    code, out, _ = run(capsys, "member", "register", "--fleet", "1", "--name", "w",
                       "--session", "scratch", "--window", window, "--pane", pane,
                       "--coding-agent", "claude", "--json")
    worker = json.loads(out)["member"]["member_id"]

    code, out, err = run(capsys, "message", "send", "--fleet", "1", "--from", "1", "--to",
                         str(worker), "first")
    assert code == 0
    assert err.startswith("switchboard: not_notified: message 1 to member 2 is stored but "
                          f"was not typed into pane {pane}: no tmux socket configured")

    monkeypatch.setenv("SWITCHBOARD_TMUX_SOCKET", str(tmux_socket))
    code, out, err = run(capsys, "message", "send", "--fleet", "1", "--from", "1", "--to",
                         str(worker), "second")
    assert (code, err) == (0, "")
    assert out == f"message 2 sent to member {worker} (notified)\n"
    lines = wait_for_lines(tmux_server, pane, 2)
    assert [line.split()[2] for line in lines] == ["1", "2"]  # the retry, then the new one
