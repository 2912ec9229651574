"""Real OpenCode 1.18.33 launched by Switchboard's own launch path, in the person's home.

A person whose OpenCode is set up with a model provider of their own (the loopback
stand-in) and bash set to ask opens a project and starts OpenCode in it. The engine
launches it in the view's main pane (``frame_start``, the launcher, the adapter's
plan); the plugin's events bind the session to OpenCode's own ``ses_`` id and move
the frame working -> ready, a shell command's permission prompt shows as needs input,
the turn's usage is read from the plugin's usage file, and a stop and a new start, and
a lost tmux server brought back by ``switchboard restore``, resume exactly that
session. The person's own config is left byte for byte. The task journey adds back
(the child parked, its CLI running), focus (the same process) and close (its CLI
ends, the tree drops it).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from core.context.requests import new_request_id
from core.engine.engine import Engine
from core.engine.open import open_engine
from core.model.control_line import CONTROL_TEMPLATE
from core.model.enums import Provider
from storage import session_db
from storage.session_usage import UsageRow, turn_usage
from tests.integration.journey_env import one
from tests.realcli.harness import (
    command_runs,
    evidence_dump,
    main_pane,
    make_real_engine,
    screen,
    type_prompt,
    xdg_home,
)
from tests.realcli.harness_codex import PROJECT, SCRUBBED_PREFIXES
from tests.realcli.install import RealCliUnavailable, ensure_opencode
from tests.realcli.journey_steps import back_focus_close, kill_server, restore
from tests.realcli.opencode_harness import START_S, TURN_S
from tests.realcli.opencode_standin import OCSLOW_WORD, OCTOOL_COMMAND, OpencodeStandin
from tests.waiting import fail_unless

pytestmark = [pytest.mark.tmux, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def opencode_binary() -> Path:
    try:
        return ensure_opencode()
    except RealCliUnavailable as exc:  # the tier fails, never skips
        pytest.fail(f"real-CLI tier cannot run: {exc}", pytrace=False)


def _session(engine: Engine, frame_id: str) -> tuple[str, str, str, str | None]:
    """(session_key, provider_session_id, activity, activity_reason) of a frame."""
    row = one(engine, "SELECT s.session_key, s.provider_session_id, s.activity,"
                      " s.activity_reason FROM frames f JOIN provider_sessions s"
                      " ON s.session_key = f.current_session_key WHERE f.frame_id = ?",
              frame_id)
    assert row is not None
    return tuple(row)  # type: ignore[return-value]


def _usage(root: Path, session_key: str) -> list[UsageRow]:
    path = session_db.session_db_path(root, session_key)
    if not path.exists():
        return []
    conn = session_db.open_session_db_readonly(path)
    try:
        return turn_usage(conn, session_key)
    finally:
        conn.close()


def _person(root: Path, api: OpencodeStandin,
            monkeypatch: pytest.MonkeyPatch) -> tuple[Path, bytes]:
    """The person's home with their own OpenCode config (their provider: the stand-in;
    bash asks), and this process's environment theirs (the tmux server, so every pane,
    starts from it). Returns the config file and its bytes."""
    theirs = root / ".config" / "opencode" / "opencode.json"
    theirs.parent.mkdir(parents=True)
    theirs.write_text(json.dumps({"$schema": "https://opencode.ai/config.json",
                                  **api.provider_config(),
                                  "permission": {"bash": "ask"}}), encoding="utf-8")
    for name in list(os.environ):
        if name.startswith(SCRUBBED_PREFIXES):
            monkeypatch.delenv(name)
    for name in ("SWITCHBOARD_HOME", "SWITCHBOARD_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    for name, value in {"HOME": root, "XDG_CONFIG_HOME": root / ".config",
                        "XDG_STATE_HOME": root / ".local" / "state",
                        "XDG_DATA_HOME": root / ".local" / "share",
                        "XDG_CACHE_HOME": root / ".cache"}.items():
        monkeypatch.setenv(name, str(value))
    monkeypatch.setenv("OPENCODE_DISABLE_MODELS_FETCH", "1")  # nothing leaves loopback
    return theirs, theirs.read_bytes()


def test_real_opencode_started_by_switchboard_reports_and_resumes(
        opencode_binary: Path, tmp_path: Path, tmux_socket: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "person"
    with OpencodeStandin() as api:
        theirs, before = _person(root, api, monkeypatch)
        home = xdg_home(root)
        engine = make_real_engine(root, tmux_socket,
                                  {Provider.OPENCODE: (str(opencode_binary),)}, home=home)
        try:
            route = engine.project_enter(new_request_id(), PROJECT)
            start = engine.frame_start(new_request_id(), route.frame_id, Provider.OPENCODE)
            pane = main_pane(engine)

            def look() -> str:
                return f"{_session(engine, route.frame_id)}\n{screen(tmux_socket, pane)}"

            fail_unless(lambda: "ctrl+p" in screen(tmux_socket, pane), START_S, look)
            assert not _session(engine, route.frame_id)[1].startswith("ses_")  # not yet

            # --- working -> ready; the session id is OpenCode's own ---------------
            type_prompt(tmux_socket, pane, f"hello {OCSLOW_WORD}")
            fail_unless(lambda: _session(engine, route.frame_id)[2] == "working", TURN_S,
                        look)
            key, ident, *_ = _session(engine, route.frame_id)
            assert ident.startswith("ses_") and key.endswith(f":opencode:{ident}"), key
            assert one(engine, "SELECT state FROM launch_intents WHERE launch_id = ?",
                       start.launch_id) == ("bound",)
            fail_unless(lambda: _session(engine, route.frame_id)[2] == "ready", TURN_S, look)
            assert "STANDIN-SLOW done" in screen(tmux_socket, pane)
            project_root = root / "src" / PROJECT  # make_real_engine's checkout

            # --- usage: the turn's request, exactly the stand-in's numbers ----------
            fail_unless(lambda: bool(_usage(home.root, key)), TURN_S,
                        lambda: str(_usage(home.root, key)))
            rows = _usage(home.root, key)
            assert {row.model_id for row in rows} == {"claude-sonnet-4-5"}
            assert sum(row.input_tokens for row in rows) == 1234
            assert sum(row.output_tokens for row in rows) == 56

            # --- a shell command asks: needs input -> allowed -> ready ---------------
            type_prompt(tmux_socket, pane, "OCTOOL please")
            fail_unless(lambda: _session(engine, route.frame_id)[2:] ==
                        ("needs_input", "permission"), TURN_S, look)
            assert "Permission required" in screen(tmux_socket, pane)
            press_enter(tmux_socket, pane)
            fail_unless(lambda: _session(engine, route.frame_id)[2] == "ready", TURN_S, look)
            # The command ran in the project's checkout: OpenCode took its folder from
            # the pane's PWD, which the launch sets.
            assert (project_root / OCTOOL_COMMAND.split()[-1]).exists()
            # ... and is one command run in the session's evidence, its exit code stated.
            fail_unless(lambda: [r.completed for r in command_runs(home, key, OCTOOL_COMMAND)]
                        == [True], TURN_S, lambda: evidence_dump(home, key))
            (run,) = command_runs(home, key, OCTOOL_COMMAND)
            assert (run.exit_code, run.outcome, run.tool_name) == (0, "passed", "bash"), run

            # --- stop, start again: the same OpenCode session, resumed by its id -----
            engine.frame_stop(new_request_id(), route.frame_id)
            again = engine.frame_start(new_request_id(), route.frame_id)
            pane = main_pane(engine)
            fail_unless(lambda: "ctrl+p" in screen(tmux_socket, pane), START_S, look)
            type_prompt(tmux_socket, pane, "hello again")
            fail_unless(lambda: _session(engine, route.frame_id)[2] == "ready" and
                        "STANDIN-OK: hello again" in screen(tmux_socket, pane), TURN_S, look)
            assert _session(engine, route.frame_id)[:2] == (key, ident)
            assert again.session_key == key

            # --- the tmux server dies: `switchboard restore` resumes it by its id -----
            engine.conn.close()
            kill_server(tmux_socket)
            lines = restore()
            assert "alpha: view reopened (navigator mode)" in lines, lines
            assert f"  \u201calpha\u201d (main): resumed session {key}" in lines, lines
            engine = open_engine(home, with_stage=True)
            assert one(engine, "SELECT action, target_session_key FROM launch_intents"
                               " WHERE frame_id = ? ORDER BY created_at DESC LIMIT 1",
                       route.frame_id) == ("resume", key)
            pane = main_pane(engine)
            fail_unless(lambda: "hello again" in screen(tmux_socket, pane), START_S, look)
            type_prompt(tmux_socket, pane, "after restart")
            fail_unless(lambda: _session(engine, route.frame_id)[2] == "ready" and
                        "STANDIN-OK: after restart" in screen(tmux_socket, pane), TURN_S, look)
            assert _session(engine, route.frame_id)[:2] == (key, ident)
        finally:
            engine.conn.close()
    assert theirs.read_bytes() == before


def _transitions(engine: Engine) -> list[tuple]:
    return [tuple(row) for row in engine.conn.execute(
        "SELECT kind, state, failure FROM view_transitions ORDER BY created_at, rowid")]


def _transition(engine: Engine, kind: str) -> tuple | None:
    return one(engine, "SELECT state FROM view_transitions WHERE kind = ?"
                       " ORDER BY created_at, rowid", kind)


def test_an_opencode_workspace_pushes_an_opencode_task_that_returns_its_handoff_once(
        opencode_binary: Path, tmp_path: Path, tmux_socket: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """push -> the child (OpenCode too: a task runs on its parent's provider) claims its
    brief from its initial prompt (``--prompt``), the fixed line once; complete-return
    -> the parent, live and ready, gets the fixed line typed once and claims the
    handoff; the child closes completed. Every agent tool call goes over HTTP."""
    root = tmp_path / "person"
    with OpencodeStandin() as api:
        _person(root, api, monkeypatch)
        engine = make_real_engine(root, tmux_socket,
                                  {Provider.OPENCODE: (str(opencode_binary),)},
                                  home=xdg_home(root))
        try:
            route = engine.project_enter(new_request_id(), PROJECT)
            parent = route.frame_id
            engine.frame_start(new_request_id(), parent, Provider.OPENCODE)
            main = main_pane(engine)
            fail_unless(lambda: "ctrl+p" in screen(tmux_socket, main), START_S,
                        lambda: screen(tmux_socket, main))

            type_prompt(tmux_socket, main, "PUSH Fix the bug :: Make test_foo pass")
            # completed once the child, a new OpenCode (its first start is slow on a
            # loaded machine), has claimed its brief
            fail_unless(lambda: _transition(engine, "push") == ("completed",), START_S + TURN_S,
                        lambda: f"{_transitions(engine)}\n{_session(engine, parent)}\n"
                                f"{screen(tmux_socket, main)}")
            child = str(one(engine, "SELECT frame_id FROM frames WHERE title = ?",
                            "Fix the bug")[0])
            child_pane = main_pane(engine)
            assert child_pane != main
            assert one(engine, "SELECT s.provider FROM frames f JOIN provider_sessions s ON"
                               " s.session_key = f.current_session_key WHERE f.frame_id = ?",
                       child) == ("opencode",)
            fail_unless(lambda: one(engine, "SELECT first_claimed_at FROM transition_briefs"
                                    )[0] is not None, START_S + TURN_S,
                        lambda: screen(tmux_socket, child_pane))
            fail_unless(lambda: _session(engine, child)[2] == "ready", TURN_S,
                        lambda: screen(tmux_socket, child_pane))
            assert one(engine, "SELECT state, submission_count FROM control_turns"
                               " WHERE kind = 'claim_brief'") == ("settled", 1)
            assert screen(tmux_socket, child_pane).count(CONTROL_TEMPLATE) == 1

            type_prompt(tmux_socket, child_pane, "COMPLETE Fixed foo :: review and merge")
            fail_unless(lambda: _transition(engine, "complete_return") == ("completed",),
                        TURN_S, lambda: screen(tmux_socket, child_pane))
            assert one(engine, "SELECT lifecycle_state, close_reason FROM frames WHERE"
                               " frame_id = ?", child) == ("closed", "completed")
            fail_unless(lambda: one(engine, "SELECT first_claimed_at FROM"
                                            " completion_handoffs")[0] is not None,
                        TURN_S, lambda: screen(tmux_socket, main))
            fail_unless(lambda: _session(engine, parent)[2] == "ready", TURN_S,
                        lambda: screen(tmux_socket, main))
            assert one(engine, "SELECT transport, state, submission_count FROM control_turns"
                               " WHERE kind = 'claim_handoff'") == ("live_input", "settled", 1)
            assert screen(tmux_socket, main).count(CONTROL_TEMPLATE) == 1
            calls = api.journal.tool_calls()
            assert calls.count("switchboard_transition_claim") == 2, calls  # brief, handoff

            # --- back, focus, close on a second task ---------------------------------
            second = engine.frame_push(new_request_id(), parent, "Look around",
                                       "read the README")
            fail_unless(lambda: one(engine, "SELECT state FROM view_transitions WHERE"
                                            " transition_id = ?", second.transition_id)
                        == ("completed",), START_S + TURN_S, lambda: str(_transitions(engine)))
            looker = str(one(engine, "SELECT frame_id FROM frames WHERE title = ?",
                             "Look around")[0])
            fail_unless(lambda: _session(engine, looker)[2] == "ready", START_S + TURN_S,
                        lambda: screen(tmux_socket, main_pane(engine)))
            back_focus_close(engine, tmux_socket, route.view_id, main, looker, TURN_S)
        finally:
            engine.conn.close()


def press_enter(socket: Path, pane: str) -> None:
    """Enter on OpenCode's permission prompt: its first choice, "Allow once"."""
    subprocess.run(["tmux", "-S", str(socket), "send-keys", "-t", pane, "Enter"], check=True)
