"""Gemini CLI 0.61.0 started by Switchboard itself: the engine's launch path, in a view's
main pane on a private tmux server, against the loopback Gemini API stand-in (issue 41).

``frame_start`` with provider gemini runs the adapter's plan through the launcher (the
per-launch home, the agent tools' HTTP endpoint and token, the hook command), so what is
checked here is the whole chain a person uses: the prompt comes up although the tmux
server was started from an environment that says CI (Gemini CLI's is-in-ci check would
turn its interactive mode off); a turn is recorded working then ready from the CLI's own
hooks under the exact session id chosen before exec; a stop and a start again resume
that session by its id (the model is sent the earlier prompt); the person's own
``~/.gemini/settings.json`` stays byte for byte what it was. And the task journey: a
Gemini workspace pushes a task (Gemini too), which claims its brief and completes back,
the parent claiming the handoff; each fixed line typed once; a second task is left with
back (parked, its CLI still running), shown again with focus (the same process) and
closed (its CLI ends, the tree drops it); then the tmux server dies and
``switchboard restore`` resumes the workspace in main by its exact session id.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.apps.client import EngineClient
from core.context.requests import new_request_id
from core.engine.engine import Engine
from core.engine.open import open_engine
from core.model.control_line import CONTROL_TEMPLATE
from core.model.enums import Provider
from storage import session_db
from storage.session_usage import UsageRow, turn_usage
from tests.integration.journey_env import one, tmux
from tests.realcli.gemini_standin import (
    API_KEY,
    TOOLTEST_COMMAND,
    USAGE,
    GeminiStandin,
    script,
)
from tests.realcli.harness import (
    CommandRun,
    activity,
    command_runs,
    main_pane,
    make_real_engine,
    screen,
    type_prompt,
    xdg_home,
)
from tests.realcli.install import RealCliUnavailable, ensure_gemini
from tests.realcli.journey_steps import back_focus_close, kill_server, restore
from tests.waiting import end_process_groups, retry_until

SLOW = 120.0  # the CLI (node) starts in seconds; the machine is shared
PROMPT_READY = "Type your message"
STARTED_UNTRUSTED = "Skipping project agents due to untrusted folder"
"""Gemini CLI 0.61.0's notice while it starts in a folder not yet trusted."""
READING_S = 3.0


def _gemini() -> Path:
    try:
        return ensure_gemini()
    except RealCliUnavailable as exc:  # the tier fails, never skips
        raise AssertionError(f"real-CLI tier cannot run: {exc}") from None


def _groups(socket: Path) -> set[int]:
    """The process groups of every pane of the server (Gemini CLI's node does not always
    end with its tmux server: each is ended by its group at teardown)."""
    found = set()
    for pid in tmux(socket, "list-panes", "-a", "-F", "#{pane_pid}").split():
        try:
            found.add(os.getpgid(int(pid)))
        except (ProcessLookupError, ValueError):
            continue
    return found


def _engine(person: Path, tmux_socket: Path, binary: Path, api: GeminiStandin) -> Engine:
    """The person's engine in the default XDG layout, its gemini command the real CLI
    pointed at the stand-in."""
    command = ("env", f"GEMINI_API_KEY={API_KEY}", f"GOOGLE_GEMINI_BASE_URL={api.url}",
               "TERM=xterm-256color", str(binary))
    return make_real_engine(person, tmux_socket, {Provider.GEMINI: command},
                            home=xdg_home(person))


@pytest.fixture
def person(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A person's home (the engine's HOME too, as when they run Switchboard): their own
    ~/.gemini picks the API key and trusts the project; state and config in XDG folders.
    The environment says CI, as a CI runner's does."""
    root = tmp_path / "person"
    for name in ("SWITCHBOARD_HOME", "SWITCHBOARD_CONFIG", "GEMINI_CLI_HOME", "TMUX",
                 "TMUX_PANE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(root))
    monkeypatch.setenv("XDG_STATE_HOME", str(root / ".local" / "state"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(root / ".config"))
    monkeypatch.setenv("CI", "true")
    monkeypatch.setenv("CI_PIPELINE_ID", "41")
    theirs = root / ".gemini"
    theirs.mkdir(parents=True)
    (theirs / "settings.json").write_text(
        json.dumps({"security": {"auth": {"selectedType": "gemini-api-key"}}}), encoding="utf-8")
    trusted = {str(root / "src" / name): "TRUST_FOLDER" for name in ("alpha", "beta")}
    (theirs / "trustedFolders.json").write_text(json.dumps(trusted), encoding="utf-8")
    yield root


def _usage(root: Path, session_key: str) -> list[UsageRow]:
    path = session_db.session_db_path(root, session_key)
    if not path.exists():
        return []
    conn = session_db.open_session_db_readonly(path)
    try:
        return turn_usage(conn, session_key)
    finally:
        conn.close()


def _expected_tokens(requests: int) -> tuple[int, int, int, int]:
    """(input, cache read, output, reasoning) of ``requests`` stand-in answers as Gemini
    CLI records them: input without its cached part, thoughts counted as output."""
    usage = USAGE
    cached = usage["cachedContentTokenCount"]
    return ((usage["promptTokenCount"] - cached) * requests, cached * requests,
            (usage["candidatesTokenCount"] + usage["thoughtsTokenCount"]) * requests,
            usage["thoughtsTokenCount"] * requests)


def _session(engine: Engine, frame_id: str) -> tuple[str, str, str]:
    """(provider, provider session id, session key) of the frame's current session."""
    key = str(one(engine, "SELECT current_session_key FROM frames WHERE frame_id = ?",
                  frame_id)[0])
    row = one(engine, "SELECT provider FROM provider_sessions WHERE session_key = ?", key)
    return str(row[0]), key.rsplit(":", 1)[1], key


def test_switchboard_launches_gemini_in_the_view_and_resumes_it_by_id(
        person: Path, tmux_socket: Path) -> None:
    binary = _gemini()
    theirs = person / ".gemini" / "settings.json"
    before = theirs.read_bytes()
    groups: set[int] = set()
    with GeminiStandin() as api:
        engine = _engine(person, tmux_socket, binary, api)
        try:
            route = engine.project_enter(new_request_id(), "alpha")
            frame = route.frame_id
            started = engine.frame_start(new_request_id(), frame, Provider.GEMINI)
            assert retry_until(lambda: one(engine, "SELECT state FROM launch_intents WHERE"
                                                   " launch_id = ?", started.launch_id)
                               == ("bound",), SLOW)
            provider, session_id, key = _session(engine, frame)
            assert provider == "gemini" and str(uuid.UUID(session_id)) == session_id
            main = main_pane(engine)
            groups |= _groups(tmux_socket)
            # interactive although the server's environment says CI
            assert retry_until(lambda: PROMPT_READY in screen(tmux_socket, main), SLOW), \
                screen(tmux_socket, main)

            type_prompt(tmux_socket, main, "hello there")
            assert retry_until(lambda: "STANDIN-OK" in screen(tmux_socket, main), SLOW), \
                screen(tmux_socket, main)
            assert retry_until(lambda: activity(engine, frame) == "ready", SLOW), \
                (activity(engine, frame), screen(tmux_socket, main))
            assert [t.headers.get("x-goog-api-key") for t in api.turns()] == [API_KEY]
            chats = list((person / ".gemini" / "tmp").rglob(f"session-*-{session_id[:8]}.jsonl"))
            assert chats, "the session is written into the person's own ~/.gemini/tmp"
            assert session_id in chats[0].read_text(encoding="utf-8").splitlines()[0]
            # the turn's usage, from the CLI's own chat record (read at AfterAgent)
            root = xdg_home(person).root
            assert retry_until(lambda: len(_usage(root, key)) == 1, SLOW), _usage(root, key)
            (row,) = _usage(root, key)
            assert (row.provider, row.input_tokens, row.cache_read_tokens, row.output_tokens,
                    row.reasoning_tokens) == ("gemini", *_expected_tokens(row.requests)), row

            # stop, then start again: the same session, resumed by its id
            engine.frame_stop(new_request_id(), frame)
            assert retry_until(lambda: main not in tmux(tmux_socket, "list-panes", "-a",
                                                        "-F", "#{pane_id}").split(), SLOW)
            again = engine.frame_start(new_request_id(), frame)
            assert again.session_key == key
            assert one(engine, "SELECT action FROM launch_intents WHERE launch_id = ?",
                       again.launch_id) == ("resume",)
            resumed = main_pane(engine)
            groups |= _groups(tmux_socket)
            assert retry_until(lambda: PROMPT_READY in screen(tmux_socket, resumed), SLOW), \
                screen(tmux_socket, resumed)
            type_prompt(tmux_socket, resumed, "and again")
            assert retry_until(lambda: len(api.turns()) == 2, SLOW), \
                screen(tmux_socket, resumed)
            sent = json.dumps(api.turns()[-1].body)
            assert "hello there" in sent and "and again" in sent
            assert retry_until(lambda: activity(engine, frame) == "ready", SLOW), \
                (activity(engine, frame), screen(tmux_socket, resumed))
            # the resumed turn is counted; the history the CLI copies into a resumed
            # session's record is not counted again
            assert retry_until(lambda: len(_usage(root, key)) == 2, SLOW), _usage(root, key)
            last = _usage(root, key)[-1]
            assert (last.input_tokens, last.cache_read_tokens, last.output_tokens,
                    last.reasoning_tokens) == _expected_tokens(last.requests), last
        finally:
            groups |= _groups(tmux_socket)
            engine.conn.close()
            tmux(tmux_socket, "kill-server")
            end_process_groups(groups)
    assert theirs.read_bytes() == before


def _transition(engine: Engine, kind: str) -> tuple | None:
    return one(engine, "SELECT state FROM view_transitions WHERE kind = ?"
                       " ORDER BY created_at, rowid", kind)


def test_a_gemini_workspace_pushes_a_gemini_task_that_returns_its_handoff_once(
        person: Path, tmux_socket: Path) -> None:
    """push -> the child (Gemini too: a task runs on its parent's provider) claims its
    brief from its initial prompt, the fixed line once; complete-return -> the parent,
    live and ready, gets the fixed line typed once and claims the handoff; the child
    closes completed."""
    binary = _gemini()
    groups: set[int] = set()
    with GeminiStandin() as api:
        engine = _engine(person, tmux_socket, binary, api)
        try:
            route = engine.project_enter(new_request_id(), "alpha")
            parent = route.frame_id
            started = engine.frame_start(new_request_id(), parent, Provider.GEMINI)
            assert retry_until(lambda: one(engine, "SELECT state FROM launch_intents WHERE"
                                                   " launch_id = ?", started.launch_id)
                               == ("bound",), SLOW)
            main = main_pane(engine)
            groups |= _groups(tmux_socket)
            assert retry_until(lambda: PROMPT_READY in screen(tmux_socket, main), SLOW), \
                screen(tmux_socket, main)

            type_prompt(tmux_socket, main, "PUSH Fix the bug :: Make test_foo pass")
            assert retry_until(lambda: _transition(engine, "push") == ("completed",), SLOW), \
                screen(tmux_socket, main)
            child = str(one(engine, "SELECT frame_id FROM frames WHERE title = ?",
                            "Fix the bug")[0])
            assert _session(engine, child)[0] == "gemini"
            child_pane = main_pane(engine)
            groups |= _groups(tmux_socket)
            assert child_pane != main
            assert retry_until(lambda: one(engine, "SELECT first_claimed_at FROM"
                                                   " transition_briefs")[0] is not None, SLOW), \
                screen(tmux_socket, child_pane)
            assert retry_until(lambda: activity(engine, child) == "ready", SLOW), \
                screen(tmux_socket, child_pane)
            assert one(engine, "SELECT state, submission_count FROM control_turns"
                               " WHERE kind = 'claim_brief'") == ("settled", 1)
            assert screen(tmux_socket, child_pane).count(CONTROL_TEMPLATE) == 1

            type_prompt(tmux_socket, child_pane, "COMPLETE Fixed foo :: review and merge")
            assert retry_until(lambda: _transition(engine, "complete_return")
                               == ("completed",), SLOW), screen(tmux_socket, child_pane)
            assert one(engine, "SELECT lifecycle_state, close_reason FROM frames WHERE"
                               " frame_id = ?", child) == ("closed", "completed")
            assert retry_until(lambda: one(engine, "SELECT first_claimed_at FROM"
                                                   " completion_handoffs")[0] is not None,
                               SLOW), screen(tmux_socket, main)
            assert retry_until(lambda: activity(engine, parent) == "ready", SLOW), \
                screen(tmux_socket, main)
            assert one(engine, "SELECT transport, state, submission_count FROM control_turns"
                               " WHERE kind = 'claim_handoff'") == ("live_input", "settled", 1)
            assert screen(tmux_socket, main).count(CONTROL_TEMPLATE) == 1
            called = [script(turn.body or {}, turn.tool_names).call for turn in api.turns()]
            claims = [c for c in called if c is not None and c[0].endswith("transition_claim")]
            assert len(claims) == 2, called  # the brief once, the handoff once

            # --- back, focus, close on a second task ---------------------------------
            second = engine.frame_push(new_request_id(), parent, "Look around",
                                       "read the README")
            assert retry_until(lambda: one(engine, "SELECT state FROM view_transitions"
                                                   " WHERE transition_id = ?",
                                           second.transition_id) == ("completed",), SLOW)
            looker = str(one(engine, "SELECT frame_id FROM frames WHERE title = ?",
                             "Look around")[0])
            groups |= _groups(tmux_socket)
            assert retry_until(lambda: activity(engine, looker) == "ready", SLOW), \
                screen(tmux_socket, main_pane(engine))
            back_focus_close(engine, tmux_socket, route.view_id, main, looker, SLOW)

            # --- the tmux server dies: `switchboard restore` resumes the parent by id -
            _, session_id, key = _session(engine, parent)
            engine.conn.close()
            kill_server(tmux_socket)
            lines = restore()
            assert "alpha: view reopened (navigator mode)" in lines, lines
            assert f"  \u201calpha\u201d (main): resumed session {key}" in lines, lines
            engine = open_engine(xdg_home(person), with_stage=True)
            assert _session(engine, parent)[2] == key
            assert one(engine, "SELECT action, target_session_key FROM launch_intents"
                               " WHERE frame_id = ? ORDER BY created_at DESC LIMIT 1",
                       parent) == ("resume", key)
            revived = main_pane(engine)
            groups |= _groups(tmux_socket)
            assert retry_until(lambda: PROMPT_READY in screen(tmux_socket, revived), SLOW), \
                screen(tmux_socket, revived)
            asked = len(api.turns())
            type_prompt(tmux_socket, revived, "after restore")
            assert retry_until(lambda: len(api.turns()) > asked, SLOW), \
                screen(tmux_socket, revived)
            sent = json.dumps(api.turns()[-1].body)  # the conversation came back
            assert "PUSH Fix the bug" in sent and "after restore" in sent
            assert retry_until(lambda: activity(engine, parent) == "ready", SLOW), \
                (activity(engine, parent), screen(tmux_socket, revived))
            assert _session(engine, parent)[1:] == (session_id, key)
        finally:
            groups |= _groups(tmux_socket)
            engine.conn.close()
            tmux(tmux_socket, "kill-server")
            end_process_groups(groups)


def _events(engine: Engine, frame: str) -> list[str]:
    """The hook kinds recorded for the frame's current session, in order (read only)."""
    key = str(one(engine, "SELECT current_session_key FROM frames WHERE frame_id = ?",
                  frame)[0])
    path = session_db.session_db_path(xdg_home(Path(os.environ["HOME"])).root, key)
    if not path.exists():
        return []
    conn = session_db.open_session_db_readonly(path)
    try:
        return [str(row[0]) for row in conn.execute(
            "SELECT type FROM events ORDER BY timestamp, rowid")]
    finally:
        conn.close()


def _submit(engine: Engine, frame: str, socket: Path, pane: str, text: str) -> None:
    """Type a line and see it taken: its BeforeAgent hook is recorded (a prompt the CLI
    answers at once may be working and ready again before a look at the activity).
    Just after the trust question, Gemini CLI restarts and redraws; an Enter that lands
    during the redraw is dropped and the line stays in its input: Enter again while the
    input still holds text (the placeholder is not shown) and no question is on screen."""
    before = _events(engine, frame).count("prompt_submitted")
    type_prompt(socket, pane, text)

    def taken() -> bool:
        if _events(engine, frame).count("prompt_submitted") > before:
            return True
        shown = screen(socket, pane)
        if PROMPT_READY not in shown and "Allow once" not in shown:
            tmux(socket, "send-keys", "-t", pane, "Enter")
        time.sleep(2.0)
        return _events(engine, frame).count("prompt_submitted") > before
    assert retry_until(taken, SLOW), (_events(engine, frame), activity(engine, frame),
                                      screen(socket, pane))


def _processes_of(group: int) -> list[int]:
    """The live processes of one process group (from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == group and fields[0] != "Z":
            found.append(int(entry.name))
    return found


def test_the_trust_question_needs_input_with_its_words_until_answered(
        person: Path, tmux_socket: Path) -> None:
    """An untrusted folder: Gemini CLI asks whether to trust it before any hook fires;
    the dialog watch shows needs input with its words and types nothing; the person
    answers and the recovery resolves. The answer is saved in the person's own trust
    file (not the launch's home), and the CLI, restarted by its answer, fires its hooks:
    the launch is bound and a turn is recorded working then ready."""
    binary = _gemini()
    (person / ".gemini" / "trustedFolders.json").unlink()  # no folder trusted yet
    groups: set[int] = set()
    with GeminiStandin() as api:
        engine = _engine(person, tmux_socket, binary, api)
        client = EngineClient(engine=engine, home=xdg_home(person))
        try:
            frame = engine.project_enter(new_request_id(), "alpha").frame_id
            started = engine.frame_start(new_request_id(), frame, Provider.GEMINI)
            main = main_pane(engine)
            groups |= _groups(tmux_socket)
            assert retry_until(lambda: "Do you trust the files in this folder?"
                               in screen(tmux_socket, main), SLOW), screen(tmux_socket, main)

            def recorded() -> tuple | None:
                client.reconcile()
                return one(engine, "SELECT bounded_explanation FROM recoveries WHERE"
                                   " kind = 'provider_dialog' AND state = 'open'")
            assert retry_until(lambda: recorded() is not None, SLOW), screen(tmux_socket, main)
            assert activity(engine, frame) == "needs_input"
            assert "Do you trust the files in this folder?" in (recorded() or ("",))[0]
            # the person reads the question while the CLI finishes starting (its untrusted
            # start-up notice, then a moment): an answer in the middle of its start-up can
            # cancel its own restart (docs/cli-versions.md), a race inside the CLI
            assert retry_until(lambda: STARTED_UNTRUSTED in screen(tmux_socket, main), SLOW), \
                screen(tmux_socket, main)
            time.sleep(READING_S)
            tmux(tmux_socket, "send-keys", "-t", main, "Enter")  # the person: 1. Trust folder
            assert retry_until(lambda: PROMPT_READY in screen(tmux_socket, main), SLOW), \
                screen(tmux_socket, main)
            assert retry_until(lambda: recorded() is None, SLOW), screen(tmux_socket, main)
            # the answer is theirs: saved in their own trust file, none in the launch's home
            trust = json.loads((person / ".gemini" / "trustedFolders.json").read_text())
            assert trust == {str(person / "src" / "alpha"): "TRUST_FOLDER"}, trust
            assert not list(xdg_home(person).run_dir.rglob("gemini-home/.gemini/trusted*"))
            # the restarted CLI's hooks: bound by its SessionStart, a turn working then ready
            assert retry_until(lambda: one(engine, "SELECT state FROM launch_intents WHERE"
                                                   " launch_id = ?", started.launch_id)
                               == ("bound",), SLOW), screen(tmux_socket, main)
            _submit(engine, frame, tmux_socket, main, "hello there")
            assert retry_until(lambda: "STANDIN-OK" in screen(tmux_socket, main), SLOW), \
                screen(tmux_socket, main)
            assert retry_until(lambda: activity(engine, frame) == "ready", SLOW), \
                (activity(engine, frame), screen(tmux_socket, main))
        finally:
            groups |= _groups(tmux_socket)
            engine.conn.close()
            tmux(tmux_socket, "kill-server")
            end_process_groups(groups)


def test_a_permission_question_needs_input_the_run_is_evidence_and_a_stop_ends_the_cli(
        person: Path, tmux_socket: Path) -> None:
    """A shell command asks (Notification ToolPermission): needs input until approved,
    then ready; the run is session evidence; a stop ends every process of the CLI, not
    only its pane."""
    binary = _gemini()
    groups: set[int] = set()
    with GeminiStandin() as api:
        engine = _engine(person, tmux_socket, binary, api)
        try:
            frame = engine.project_enter(new_request_id(), "alpha").frame_id
            engine.frame_start(new_request_id(), frame, Provider.GEMINI)
            main = main_pane(engine)
            groups |= _groups(tmux_socket)
            assert retry_until(lambda: PROMPT_READY in screen(tmux_socket, main), SLOW), \
                screen(tmux_socket, main)
            _submit(engine, frame, tmux_socket, main, "TOOLTEST please")
            assert retry_until(lambda: activity(engine, frame) == "needs_input", SLOW), \
                screen(tmux_socket, main)
            assert retry_until(lambda: "Allow once" in screen(tmux_socket, main), SLOW)

            def approved() -> bool:
                if "Allow once" not in screen(tmux_socket, main):
                    return True
                tmux(tmux_socket, "send-keys", "-t", main, "Enter")
                time.sleep(1.0)
                return "Allow once" not in screen(tmux_socket, main)
            assert retry_until(approved, SLOW), screen(tmux_socket, main)
            assert retry_until(lambda: activity(engine, frame) == "ready", SLOW), \
                (activity(engine, frame), screen(tmux_socket, main))
            assert (person / "src" / "alpha" / TOOLTEST_COMMAND.split()[-1]).exists()
            # ... and the run is session evidence: the exact command, where, passed (Gemini
            # writes an exit code only when it is not 0)
            key = _session(engine, frame)[2]

            def runs() -> list[CommandRun]:
                return command_runs(xdg_home(person), key, TOOLTEST_COMMAND)
            assert retry_until(lambda: [r.completed for r in runs()] == [True], SLOW), runs()
            (run,) = runs()
            assert (Path(run.cwd).resolve(), run.tool_name, run.exit_code, run.outcome) == (
                (person / "src" / "alpha").resolve(), "run_shell_command", 0, "passed"), run

            pane_group = os.getpgid(int(tmux(tmux_socket, "display-message", "-p", "-t", main,
                                             "#{pane_pid}").strip()))
            assert _processes_of(pane_group)
            engine.frame_stop(new_request_id(), frame)
            assert retry_until(lambda: not _processes_of(pane_group), 30.0), \
                f"left running after the stop: {_processes_of(pane_group)}"
        finally:
            groups |= _groups(tmux_socket)
            engine.conn.close()
            tmux(tmux_socket, "kill-server")
            end_process_groups(groups)
