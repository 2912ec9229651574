"""Each real Codex of the tested window through the whole journey, in the person's own home.

A person logged in with ``codex login --with-api-key`` and a model provider of
their own (the loopback stand-in) opens a project in Switchboard: Codex starts
in a real pane without a sign-in menu or a hooks review, its hooks report the
thread id and the activity, the agent tools run over MCP without approval
questions, a shell command still asks, a push and a complete-return hand work
down and back, and stop / server loss resume the exact session (the same
rollout file in the person's ``~/.codex/sessions``). Afterwards the person's
login and config carry nothing of Switchboard's.
"""

from __future__ import annotations

import os
import re
import time
import tomllib
from pathlib import Path

import pytest

from core.config.home import Home
from core.context.requests import new_request_id
from core.engine.engine import Engine
from core.model.enums import Provider
from tests.integration.journey_env import one, pane_ids, tmux
from tests.realcli.harness import command_runs, evidence_dump
from tests.realcli.harness_codex import (
    API_KEY,
    PROJECT,
    SCRUBBED_PREFIXES,
    make_codex_engine,
    make_person,
    person_env,
    press,
    reopen_engine,
    screen,
    switchboard_home,
    type_prompt,
)
from tests.realcli.install import RealCli, RealClis
from tests.realcli.openai_standin import (
    CONTROL_PREFIX,
    TOOLTEST_COMMAND,
    TOOLTEST_FILE,
    OpenAIStandin,
)
from tests.waiting import fail_unless

pytestmark = [pytest.mark.tmux, pytest.mark.timeout(480)]

LINE = "› Call transition_claim() and follow"
"""The control line as Codex echoes a submitted prompt (its status bar also names the
thread after its first prompt, without the ``›``)."""
COMPOSER = "Ask Codex to do anything"
DIALOGS = ("Hooks need review", "Sign in with ChatGPT", "Do you trust", "Welcome to Codex")
"""First-run screens a person who has used Codex here before never sees."""
UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
TURN_S = 60.0
"""Deadline for one real Codex turn (start-up included) on a loaded machine."""




def _session(engine: Engine, frame_id: str) -> tuple[str, str, str, str, str]:
    """(session_key, provider_session_id, activity, activity_reason, runtime) of a frame."""
    row = one(engine, "SELECT s.session_key, s.provider_session_id, s.activity,"
                       " s.activity_reason, s.runtime_presence FROM frames f JOIN"
                       " provider_sessions s ON s.session_key = f.current_session_key"
                       " WHERE f.frame_id = ?", frame_id)
    assert row is not None
    return row  # type: ignore[return-value]


def _turn(engine: Engine, session_key: str) -> str | None:
    """The Codex turn id the session's latest hook named."""
    return one(engine, "SELECT last_turn_id FROM provider_sessions WHERE session_key = ?",
                session_key)[0]


def _main(engine: Engine) -> str:
    return one(engine, "SELECT main_pane_id FROM user_views")[0]




def _frame(engine: Engine, title: str) -> str:
    return one(engine, "SELECT frame_id FROM frames WHERE title = ?", title)[0]


def _kill_server(socket: Path) -> None:
    pid = int(tmux(socket, "display-message", "-p", "#{pid}").strip())
    tmux(socket, "kill-server")

    def gone() -> bool:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        return False

    fail_unless(gone, 15, lambda: f"tmux server {pid} still running")


def _rollouts(codex_home: Path) -> list[Path]:
    return sorted((codex_home / "sessions").glob("*/*/*/rollout-*.jsonl"))


def test_real_codex_journey_in_the_persons_own_home(
        codex_cli: RealCli, codex_clis: RealClis, tmp_path: Path, tmux_socket: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    started_at = time.monotonic()
    with OpenAIStandin() as standin:
        person = make_person(tmp_path, codex_clis, standin.base_url)
        auth_before = person.auth.read_bytes()
        # The tmux server (and so every pane) starts from this process's environment:
        # make it the person's, with nothing of this machine's credentials.
        for name in list(os.environ):
            if name.startswith(SCRUBBED_PREFIXES):
                monkeypatch.delenv(name)
        for name, value in person_env(person).items():
            monkeypatch.setenv(name, value)
        for name in ("SWITCHBOARD_HOME", "SWITCHBOARD_CONFIG"):
            monkeypatch.delenv(name, raising=False)  # the default XDG layout
        monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "sb" / ".local" / "state"))
        monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "sb" / ".config"))
        assert Home.from_env() == switchboard_home(tmp_path)
        engine = make_codex_engine(tmp_path, tmux_socket, codex_clis)

        def look(pane: str) -> str:
            return screen(tmux_socket, pane)

        # --- start -> working -> ready; the thread id comes from the first hook ----
        route = engine.project_enter(new_request_id(), PROJECT)
        view_id = route.view_id
        start = engine.frame_start(new_request_id(), route.frame_id, Provider.CODEX)
        parent = _main(engine)
        # Ready for input, or stopped on a first-run dialog: whichever shows first.
        fail_unless(lambda: any(text in look(parent) for text in (COMPOSER, *DIALOGS)),
                    TURN_S, lambda: look(parent))
        time.sleep(1.0)  # a dialog drawn right after the composer would show by now
        opening = look(parent)
        for dialog in DIALOGS:
            assert dialog not in opening, opening
        assert f"OpenAI Codex (v{codex_cli.version})" in opening, opening
        type_prompt(tmux_socket, parent, "hello SLOW")
        fail_unless(lambda: _session(engine, route.frame_id)[2] == "working", TURN_S,
                    lambda: f"{_session(engine, route.frame_id)}\n{look(parent)}")
        key, thread_id, *_ = _session(engine, route.frame_id)
        assert UUID.match(thread_id), key
        assert key.endswith(f":codex:{thread_id}") and key != start.session_key
        assert one(engine, "SELECT state FROM launch_intents WHERE launch_id = ?",
                    start.launch_id) == ("bound",)
        fail_unless(lambda: _session(engine, route.frame_id)[2] == "ready", TURN_S,
                    lambda: f"{_session(engine, route.frame_id)}\n{look(parent)}")
        assert "Stand-in reply to: hello SLOW" in look(parent)
        assert len(person.session_files(thread_id)) == 1  # in the person's own home

        # --- a permission prompt: needs input -> approved -> ready -------------------
        type_prompt(tmux_socket, parent, "TOOLTEST")
        fail_unless(lambda: _session(engine, route.frame_id)[2:4] == ("needs_input",
                                                                        "permission"),
                    TURN_S, lambda: f"{_session(engine, route.frame_id)}\n{look(parent)}")
        fail_unless(lambda: "Would you like to run the following command?" in look(parent),
                    TURN_S, lambda: look(parent))
        press(tmux_socket, parent, "y")
        fail_unless(lambda: _session(engine, route.frame_id)[2] == "ready", TURN_S,
                    lambda: f"{_session(engine, route.frame_id)}\n{look(parent)}")
        assert (person.project / TOOLTEST_FILE).exists()
        # ... and lands in the session's evidence as one command run of its tool run;
        # Codex's hook states no exit code (its response text is empty), so the outcome
        # stays unknown rather than guessed.
        sb_home = switchboard_home(tmp_path)
        fail_unless(lambda: [r.completed for r in command_runs(sb_home, key, TOOLTEST_COMMAND)]
                    == [True], TURN_S, lambda: evidence_dump(sb_home, key))
        (run,) = command_runs(sb_home, key, TOOLTEST_COMMAND)
        assert (Path(run.cwd).resolve(), run.tool_name, run.tool_status) == \
            (person.project.resolve(), "Bash", "ok"), (run, evidence_dump(sb_home, key))
        assert run.duration_ms is not None and run.duration_ms >= 0, run
        assert (run.exit_code, run.outcome) == (None, "unknown"), run

        # --- push: the child in main claims its brief (one submission) -------------
        type_prompt(tmux_socket, parent, "PUSH Fix the bug :: Make test_foo pass")
        fail_unless(lambda: one(engine, "SELECT state FROM view_transitions WHERE kind ="
                                         " 'push'") == ("completed",), TURN_S,
                    lambda: f"{one(engine, 'SELECT state, failure FROM view_transitions')}"
                            f"\n{look(parent)}")
        child = _main(engine)
        assert child != parent
        assert f"{parent} 1" in tmux(tmux_socket, "list-panes", "-a", "-F",
                                     "#{pane_id} #{pane_input_off}").splitlines()
        child_frame = _frame(engine, "Fix the bug")
        fail_unless(lambda: one(engine, "SELECT state FROM control_turns WHERE kind ="
                                         " 'claim_brief'") == ("settled",), TURN_S,
                    lambda: look(child))
        assert one(engine, "SELECT transport, submission_count FROM control_turns"
                            " WHERE kind = 'claim_brief'") == ("resume_initial", 1)
        assert one(engine, "SELECT first_claimed_at IS NOT NULL FROM transition_briefs"
                    ) == (1,)
        fail_unless(lambda: _session(engine, child_frame)[2] == "ready", TURN_S,
                    lambda: look(child))
        child_screen = look(child)
        assert child_screen.count(LINE) == 1, child_screen
        assert "switchboard.transition_claim" in child_screen, child_screen
        assert "Claimed brief: Fix the bug" in child_screen, child_screen
        assert "Allow the switchboard MCP server" not in child_screen
        child_thread = _session(engine, child_frame)[1]
        assert UUID.match(child_thread) and child_thread != thread_id

        # --- complete-return: the parent claims the handoff, the child is closed ----
        type_prompt(tmux_socket, child, "COMPLETE Fixed foo :: review and merge")
        fail_unless(lambda: one(engine, "SELECT state FROM view_transitions WHERE kind ="
                                         " 'complete_return'") == ("completed",), TURN_S,
                    lambda: f"{one(engine, 'SELECT state, failure FROM view_transitions')}"
                            f"\n{look(child)}")
        assert _main(engine) == parent
        assert one(engine, "SELECT lifecycle_state, close_reason FROM frames WHERE"
                            " frame_id = ?", child_frame) == ("closed", "completed")
        fail_unless(lambda: one(engine, "SELECT state FROM control_turns WHERE kind ="
                                         " 'claim_handoff'") == ("settled",), TURN_S,
                    lambda: look(parent))
        assert one(engine, "SELECT transport, submission_count FROM control_turns"
                            " WHERE kind = 'claim_handoff'") == ("live_input", 1)
        assert one(engine, "SELECT first_claimed_at IS NOT NULL FROM completion_handoffs"
                    ) == (1,)
        fail_unless(lambda: child not in pane_ids(tmux_socket), TURN_S,
                    lambda: "the completed child's pane is still there")
        fail_unless(lambda: "Claimed handoff" in look(parent), TURN_S, lambda: look(parent))
        assert look(parent).count(LINE) == 1, look(parent)
        fail_unless(lambda: _session(engine, route.frame_id)[2] == "ready", TURN_S,
                    lambda: f"{_session(engine, route.frame_id)}\n{look(parent)}")

        # --- back, focus, human close ------------------------------------------------
        second = engine.frame_push(new_request_id(), route.frame_id, "Look around",
                                   "read the README")
        fail_unless(lambda: one(engine, "SELECT state FROM view_transitions WHERE"
                                         " transition_id = ?", second.transition_id)
                    == ("completed",), TURN_S,
                    lambda: f"{one(engine, 'SELECT state, failure FROM view_transitions')}")
        second_frame = _frame(engine, "Look around")
        second_pane = _main(engine)
        assert second_pane not in (parent, child)
        fail_unless(lambda: "Claimed brief: Look around" in look(second_pane), TURN_S,
                    lambda: look(second_pane))
        engine.frame_back(new_request_id(), view_id)
        assert _main(engine) == parent
        engine.view_focus(new_request_id(), view_id, second_frame)
        assert _main(engine) == second_pane
        engine.frame_close(new_request_id(), second_frame)
        assert one(engine, "SELECT lifecycle_state FROM frames WHERE frame_id = ?",
                    second_frame) == ("closed",)
        fail_unless(lambda: _main(engine) == parent, TURN_S, lambda: _main(engine))
        fail_unless(lambda: second_pane not in pane_ids(tmux_socket), TURN_S,
                    lambda: "the closed frame's pane is still there")

        # --- stop, then resume the exact session -------------------------------------
        rollouts = _rollouts(person.codex_home)
        engine.frame_stop(new_request_id(), route.frame_id)
        fail_unless(lambda: parent not in pane_ids(tmux_socket), TURN_S,
                    lambda: "the stopped pane is still there")
        assert _session(engine, route.frame_id)[4] == "stopped"
        again = engine.frame_start(new_request_id(), route.frame_id)
        assert again.session_key == key
        assert one(engine, "SELECT action, target_session_key FROM launch_intents WHERE"
                            " launch_id = ?", again.launch_id) == ("resume", key)
        resumed = _main(engine)
        fail_unless(lambda: "Stand-in reply to: hello SLOW" in look(resumed), TURN_S,
                    lambda: look(resumed))  # the conversation came back
        turn_before = _turn(engine, key)
        type_prompt(tmux_socket, resumed, "after resume")
        fail_unless(lambda: "Stand-in reply to: after resume" in look(resumed), TURN_S,
                    lambda: look(resumed))
        # the resumed process's own hooks report the new turn (trusted again via -c)
        fail_unless(lambda: _turn(engine, key) != turn_before
                    and _session(engine, route.frame_id)[2] == "ready", TURN_S,
                    lambda: f"{_session(engine, route.frame_id)}\n{look(resumed)}")
        assert _session(engine, route.frame_id)[:2] == (key, thread_id)
        [rollout] = person.session_files(thread_id)
        # Codex writes its rollout on its own schedule: the Stop hook can come first
        fail_unless(lambda: "after resume" in rollout.read_text(encoding="utf-8"), TURN_S,
                    lambda: rollout.read_text(encoding="utf-8")[-2000:])
        assert _rollouts(person.codex_home) == rollouts  # no new session file

        # --- the tmux server dies: reopen, resume the same session ------------------
        engine.conn.close()
        _kill_server(tmux_socket)
        engine = reopen_engine(tmp_path)
        engine.project_enter(new_request_id(), PROJECT)
        assert _session(engine, route.frame_id)[4] == "stopped"
        after = engine.frame_start(new_request_id(), route.frame_id)
        assert after.session_key == key
        assert one(engine, "SELECT action FROM launch_intents WHERE launch_id = ?",
                    after.launch_id) == ("resume",)
        revived = _main(engine)
        fail_unless(lambda: "Stand-in reply to: after resume" in look(revived), TURN_S,
                    lambda: look(revived))
        turn_before = _turn(engine, key)
        type_prompt(tmux_socket, revived, "after restart")
        fail_unless(lambda: _turn(engine, key) != turn_before
                    and _session(engine, route.frame_id)[2] == "ready"
                    and "after restart" in rollout.read_text(encoding="utf-8"), TURN_S,
                    lambda: f"{_session(engine, route.frame_id)}\n{look(revived)}")
        assert _session(engine, route.frame_id)[:2] == (key, thread_id)
        assert _rollouts(person.codex_home) == rollouts

        # --- what the stand-in saw, and what the person's home holds now ------------
        calls = standin.responses_requests()
        assert calls and {call.bearer for call in calls} == {API_KEY}  # their login
        offered = set(calls[-1].tool_names())
        assert {"task_push", "task_complete_return", "transition_claim"} <= offered
        namespaces = {tool.get("name") for call in calls for tool in call.body["tools"]
                      if tool.get("type") == "namespace"}
        assert "mcp__switchboard" in namespaces
        prompts = [call for call in calls if CONTROL_PREFIX in str(call.body.get("input"))]
        assert prompts  # the control line reached the model as the person's prompt
    assert person.auth.read_bytes() == auth_before
    config = tomllib.loads(person.config.read_text(encoding="utf-8"))
    assert "hooks" not in config and "mcp_servers" not in config, config
    assert config["model_provider"] == "standin"
    assert not list((tmp_path / "sb").rglob("codex-home"))
    assert time.monotonic() - started_at < 300  # the tier's budget, with room for load
