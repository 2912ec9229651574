"""OpenCode's whole journey in seconds (issue 41): the fake agent as OpenCode 1.18.33,
launched by the engine as the adapter builds it (its plugin, inline config, HTTP agent
tools), in real tmux panes.

The person's own OpenCode config asks before bash. A new session has no id until its
first prompt; the plugin's ``session.created`` binds the frame to OpenCode's ``ses_`` id;
the turn reads working then ready; a shell command's question needs input until
answered, and the run is session evidence with OpenCode's stated exit code; a stop and a
start resume that exact session; a push starts an OpenCode child that claims its brief
from ``--prompt=`` once, and its complete-return is claimed by the live parent once.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.config.home import Home
from core.context.requests import new_request_id
from core.engine.engine import Engine
from core.model.control_line import CONTROL_TEMPLATE
from core.model.enums import Provider
from core.providers.opencode_events import is_session_id
from core.server.main import stop_server
from storage.session_db import session_db_path
from storage.uri import sqlite_uri
from tests.integration.journey_env import make_live_engine, one, type_line
from tests.integration.transitions_env import screen
from tests.realcli.harness import CommandRun, activity, command_runs, main_pane
from tests.waiting import retry_until

WAIT = 30.0


@pytest.fixture
def engine(tmp_path: Path, tmux_socket: Path,
           monkeypatch: pytest.MonkeyPatch) -> Iterator[Engine]:
    """A live home whose providers are fake agents; the person's OpenCode config (read by
    the fake from the tmux server's environment) asks before bash."""
    monkeypatch.setenv("SWITCHBOARD_HOME", str(tmp_path))
    monkeypatch.delenv("SWITCHBOARD_CONFIG", raising=False)
    for name in ("TMUX", "TMUX_PANE", "SWITCHBOARD_CAPABILITY", "SWITCHBOARD_GENERATION",
                 "OPENCODE_CONFIG_CONTENT"):
        monkeypatch.delenv(name, raising=False)
    theirs = tmp_path / "xdg" / "opencode" / "opencode.json"
    theirs.parent.mkdir(parents=True)
    theirs.write_text(json.dumps({"$schema": "https://opencode.ai/config.json",
                                  "permission": {"bash": "ask"}}), encoding="utf-8")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    made = make_live_engine(tmp_path, tmux_socket)
    yield made
    made.conn.close()
    stop_server(tmp_path / "run")


def _session(engine: Engine, frame_id: str) -> tuple[str, str]:
    """(session key, provider session id) of the frame's current session."""
    key = str(one(engine, "SELECT current_session_key FROM frames WHERE frame_id = ?",
                  frame_id)[0])
    return key, key.rsplit(":", 1)[1]


def _wait(what: object, engine: Engine, socket: Path, frame_id: str) -> None:
    assert callable(what)
    assert retry_until(what, WAIT), (activity(engine, frame_id), _session(engine, frame_id),
                                     screen(socket, main_pane(engine)))


def test_opencode_starts_binds_asks_resumes_pushes_and_returns(engine: Engine,
                                                              tmux_socket: Path) -> None:
    socket = tmux_socket
    parent = engine.project_enter(new_request_id(), "alpha").frame_id
    started = engine.frame_start(new_request_id(), parent, Provider.OPENCODE)
    pane = main_pane(engine)
    _wait(lambda: "ctrl+p commands" in screen(socket, pane), engine, socket, parent)
    assert not is_session_id(_session(engine, parent)[1])  # no id before the first prompt

    # --- the first prompt makes the session; the frame binds to OpenCode's id ---------
    type_line(socket, pane, "hello")
    _wait(lambda: is_session_id(_session(engine, parent)[1]), engine, socket, parent)
    _wait(lambda: activity(engine, parent) == "ready", engine, socket, parent)
    key, ident = _session(engine, parent)
    assert one(engine, "SELECT state FROM launch_intents WHERE launch_id = ?",
               started.launch_id) == ("bound",)

    # --- bash asks under the person's rule: needs input until answered ----------------
    type_line(socket, pane, "TOOLTEST please")
    _wait(lambda: activity(engine, parent) == "needs_input", engine, socket, parent)
    assert one(engine, "SELECT activity_reason FROM provider_sessions WHERE session_key = ?",
               key) == ("permission",)
    assert "Permission required" in screen(socket, pane)
    type_line(socket, pane, "y")
    _wait(lambda: activity(engine, parent) == "ready", engine, socket, parent)
    # ... and the run is session evidence, its exit code as OpenCode states it
    home = engine.require_home()
    assert retry_until(lambda: [r.completed for r in _all_runs(home, key)] == [True], WAIT), \
        _all_runs(home, key)
    (run,) = _all_runs(home, key)
    assert run.command.startswith("touch ") and run.command.endswith("/codex_tooltest_ran")
    assert (run.tool_name, run.exit_code, run.outcome) == ("bash", 0, "passed"), run

    # --- stop and start: the same OpenCode session, resumed by its id -----------------
    engine.frame_stop(new_request_id(), parent)
    again = engine.frame_start(new_request_id(), parent)
    assert again.session_key == key
    assert one(engine, "SELECT action FROM launch_intents WHERE launch_id = ?",
               again.launch_id) == ("resume",)
    pane = main_pane(engine)
    _wait(lambda: f"session: {ident} (resumed)" in screen(socket, pane), engine, socket,
          parent)

    # --- push: an OpenCode child claims its brief from --prompt= once ------------------
    type_line(socket, pane, "/push Fix the bug :: Make test_foo pass")

    def pushed() -> bool:
        row = one(engine, "SELECT state, target_frame_id FROM view_transitions"
                          " WHERE kind = 'push'")
        return row is not None and row[0] == "completed"
    _wait(pushed, engine, socket, parent)
    child = str(one(engine, "SELECT target_frame_id FROM view_transitions"
                            " WHERE kind = 'push'")[0])
    child_pane = main_pane(engine)
    assert child_pane != pane
    _wait(lambda: one(engine, "SELECT first_claimed_at FROM transition_briefs")[0]
          is not None, engine, socket, child)
    _wait(lambda: is_session_id(_session(engine, child)[1]), engine, socket, child)
    assert one(engine, "SELECT state, submission_count FROM control_turns"
                       " WHERE kind = 'claim_brief'") == ("settled", 1)
    assert screen(socket, child_pane).count(CONTROL_TEMPLATE) == 1

    # --- complete-return: the live parent claims the handoff once ---------------------
    type_line(socket, child_pane, "/complete Fixed foo :: review and merge")
    _wait(lambda: one(engine, "SELECT first_claimed_at FROM completion_handoffs")
          is not None and one(engine, "SELECT first_claimed_at FROM completion_handoffs"
                              )[0] is not None, engine, socket, parent)
    assert one(engine, "SELECT lifecycle_state, close_reason FROM frames WHERE frame_id = ?",
               child) == ("closed", "completed")
    _wait(lambda: one(engine, "SELECT transport, state, submission_count FROM control_turns"
                              " WHERE kind = 'claim_handoff'") == ("live_input", "settled", 1),
          engine, socket, parent)  # settled at the turn's end (session.idle)
    assert activity(engine, parent) == "ready"
    assert main_pane(engine) == pane
    assert screen(socket, pane).count(CONTROL_TEMPLATE) == 1


def _all_runs(home: Home, key: str) -> list[CommandRun]:
    """Every command run of the session's evidence file (read only; [] before it exists)."""
    path = session_db_path(home.root, key)
    if not path.exists():
        return []
    conn = sqlite3.connect(sqlite_uri(path, mode="ro"), uri=True)
    try:
        commands = [str(r[0]) for r in conn.execute("SELECT command FROM command_runs")]
    finally:
        conn.close()
    return [run for command in dict.fromkeys(commands)
            for run in command_runs(home, key, command)]
