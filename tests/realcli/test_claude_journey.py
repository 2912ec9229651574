"""The whole journey with the real Claude Code CLI in real panes.

The pinned CLI runs in an isolated HOME against a loopback Anthropic Messages
stand-in scripted by the prompt text (``tests/realcli/anthropic_standin.py``);
Switchboard is a real home on a private tmux server, exactly as a person runs
it: the launch argv, the per-launch settings (hooks, permissions) and the
per-launch MCP config are the ones the engine builds.

start -> working -> ready; a permission prompt -> needs input -> approved ->
ready; push -> the child claims its brief (one submission, the fixed line once)
-> complete-return -> the parent claims the handoff, the child closes
completed; back, focus and a human close; stop and resume by the exact session
id; tmux server killed -> the project opened again -> resume.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from core.apps.client import EngineClient
from core.broker.delivery import managed_line
from core.broker.inbox_view import inbox_for_view
from core.config.home import Home
from core.context.requests import new_request_id
from core.engine.engine import Engine
from core.model.control_line import CONTROL_TEMPLATE
from core.model.enums import Provider
from core.providers import agent_http
from core.providers.claude_settings import claude_tool_names
from core.providers.dialogs import find_dialog
from storage.uri import sqlite_uri
from tests.integration.journey_env import one, tmux
from tests.realcli.anthropic_standin import (
    PLAIN_COMMAND,
    RISKY_COMMAND,
    TOOLTEST_COMMAND,
    AnthropicStandin,
    script,
)
from tests.realcli.harness import (
    activity,
    command_runs,
    evidence_dump,
    main_pane,
    make_real_engine,
    screen,
    type_prompt,
    witness_only,
    xdg_home,
)
from tests.realcli.harness_claude import (
    LOCAL_CHECK_ENV,
    claude_command,
    seed_home,
    transcript,
    transcripts,
)
from tests.realcli.install import RealCli, RealClis, newest, window_ends
from tests.waiting import retry_until

PUSH_TOOL, COMPLETE_TOOL, CLAIM_TOOL = (f"mcp__switchboard__{name}" for name in (
    "task_push", "task_complete_return", "transition_claim"))
SEND_TOOL, POLL_TOOL, ACK_TOOL = (f"mcp__switchboard__{name}" for name in (
    "message_send", "message_poll", "message_ack"))
SLOW = 60.0  # generous: the CLI starts in a second or two, but the machine is shared


@dataclass
class World:
    engine: Engine
    socket: Path
    root: Path
    home: Path
    api: AnthropicStandin
    version: str

    @property
    def project(self) -> Path:
        return self.root / "src" / "alpha"

    @property
    def view_id(self) -> str:
        return str(one(self.engine, "SELECT view_id FROM user_views")[0])

    def pane_of(self, frame_id: str) -> str | None:
        row = one(self.engine, "SELECT s.pane_id FROM surfaces s JOIN frames f ON"
                               " f.current_session_key = s.session_key WHERE f.frame_id = ?"
                               " AND s.lifecycle_state = 'live'", frame_id)
        return None if row is None else row[0]

    def frame(self, title: str) -> str:
        return str(one(self.engine, "SELECT frame_id FROM frames WHERE title = ?", title)[0])

    def session_id(self, frame_id: str) -> str:
        key = one(self.engine, "SELECT current_session_key FROM frames WHERE frame_id = ?",
                  frame_id)[0]
        return str(key).rsplit(":", 1)[1]

    def wait_prompt(self, pane: str) -> None:
        """The CLI is at its input box (so typed keys go to the prompt)."""
        assert retry_until(lambda: "? for shortcuts" in screen(self.socket, pane), SLOW), \
            screen(self.socket, pane)

    def set_settings_mode(self, mode: str) -> None:
        """The person's own default permission mode, written into their settings file."""
        path = self.home / ".claude" / "settings.json"
        settings = json.loads(path.read_text())
        settings["permissions"]["defaultMode"] = mode
        path.write_text(json.dumps(settings))

    def approve(self, pane: str) -> None:
        """The person says yes to the permission question on screen. Since 2.1.250 it
        ignores an Enter that arrives right after it appears (a guard against a key meant
        for the prompt): Enter until it is gone."""
        def approved() -> bool:
            if "Do you want to proceed?" not in screen(self.socket, pane):
                return True
            tmux(self.socket, "send-keys", "-t", pane, "Enter")
            time.sleep(1.0)
            return "Do you want to proceed?" not in screen(self.socket, pane)
        assert retry_until(approved, SLOW), screen(self.socket, pane)

    def settings_mode(self) -> str:
        """The person's own default permission mode, from their settings file."""
        settings = json.loads((self.home / ".claude" / "settings.json").read_text())
        return str(settings["permissions"]["defaultMode"])

    def pass_startup_dialog(self, pane: str, frame_id: str) -> bool:
        """If the CLI opens on a dialog: Switchboard shows needs-input with its words and
        types nothing; the person answers it (keeps manual mode); the wait resolves.
        True when there was one."""
        # The dialog can come up a moment after the prompt is drawn (once the launch's
        # SessionStart hooks are done): "no dialog" only after 3 s of prompt alone.
        prompt_since: list[float] = []

        def settled() -> str | None:
            text = screen(self.socket, pane)
            if find_dialog(text.splitlines()) is not None:
                return "dialog"
            if "? for shortcuts" not in text:
                prompt_since.clear()
                return None
            prompt_since[:] = prompt_since or [time.monotonic()]
            return "prompt" if time.monotonic() - prompt_since[0] >= 3.0 else None
        assert retry_until(lambda: settled() is not None, SLOW), screen(self.socket, pane)
        if settled() != "dialog":
            return False
        client = EngineClient(engine=self.engine, home=xdg_home(self.root))

        def recorded() -> tuple | None:
            client.reconcile()
            return one(self.engine, "SELECT bounded_explanation FROM recoveries WHERE"
                                    " kind = 'provider_dialog' AND state = 'open'")
        assert retry_until(lambda: recorded() is not None, SLOW), self.dump()
        assert activity(self.engine, frame_id) == "needs_input", self.dump()
        (words,) = recorded() or ("",)
        assert "Make auto mode your default permission mode?" in words, words
        assert self.settings_mode() == "default"  # nothing typed into it
        tmux(self.socket, "send-keys", "-t", pane, "Down")  # the person: keep manual mode
        time.sleep(0.5)
        tmux(self.socket, "send-keys", "-t", pane, "Enter")
        self.wait_prompt(pane)
        assert retry_until(lambda: recorded() is None, SLOW), self.dump()
        assert activity(self.engine, frame_id) != "needs_input", self.dump()
        assert self.settings_mode() == "default"
        return True

    def wait_activity(self, frame_id: str, wanted: str) -> None:
        assert retry_until(lambda: activity(self.engine, frame_id) == wanted, SLOW), (
            activity(self.engine, frame_id), screen(self.socket, main_pane(self.engine)))

    def transition(self, kind: str, nth: int = 1) -> tuple | None:
        rows = self.engine.conn.execute(
            "SELECT state, target_frame_id FROM view_transitions WHERE kind = ?"
            " ORDER BY created_at, rowid", (kind,)).fetchall()
        return tuple(rows[nth - 1]) if len(rows) >= nth else None

    def dump(self) -> str:
        """What the registry says, for a failing wait's message."""
        out = []
        for sql in ("SELECT kind, state, transport_phase, target_frame_id FROM view_transitions",
                    "SELECT kind, transport, state, submission_count FROM control_turns",
                    "SELECT session_key, activity, runtime_presence FROM provider_sessions",
                    "SELECT kind, subject_type, state FROM recoveries"):
            try:
                out.append(repr([tuple(r) for r in self.engine.conn.execute(sql)]))
            except Exception as exc:  # noqa: BLE001 - a diagnostic only
                out.append(f"{sql}: {exc}")
        markers = sorted(p.name for p in xdg_home(self.root).run_dir.glob("*/claude-mcp-*"))
        out.append(f"agent-tool markers: {markers}")  # ready = listed; .none = wait gave up
        worker_log = xdg_home(self.root).run_dir / "usage-worker.log"
        if worker_log.exists():  # why a turn's usage row is missing, if a reader failed
            out.append("usage-worker.log: " + worker_log.read_text()[-1500:])
        for item in self.api.journal.snapshot():  # what each model call offered and said
            if item.path.startswith("/v1/messages") and "count_tokens" not in item.path:
                switchboard = [n for n in item.tool_names if "switchboard" in n]
                out.append(f"model call: {len(item.tool_names)} tools "
                           f"({len(switchboard)} switchboard) -> "
                           f"{script(item.body or {}, self.api.searched).text!r}")
        for pane in self.panes():  # every agent's screen: the one that failed may be parked
            out.append(f"--- pane {pane} ---\n" + screen(self.socket, pane).rstrip())
        return "\n".join(out)

    def broker(self, sql: str, *args: object) -> list[tuple]:
        """Rows of the home's broker file, read only ([] before it exists)."""
        path = xdg_home(self.root).broker_path
        if not path.exists():
            return []
        conn = sqlite3.connect(sqlite_uri(path, mode="ro"), uri=True)
        try:
            return [tuple(r) for r in conn.execute(sql, args).fetchall()]
        finally:
            conn.close()

    def panes(self) -> list[str]:
        return tmux(self.socket, "list-panes", "-a", "-F", "#{pane_id}").split()

    def assert_command_run(self, frame_id: str, command: str) -> None:
        """The frame's session evidence holds one finished run of exactly ``command``,
        in the project folder, linked to its Bash tool run."""
        home = xdg_home(self.root)
        key = str(one(self.engine, "SELECT current_session_key FROM frames WHERE frame_id = ?",
                      frame_id)[0])
        assert retry_until(lambda: [r.completed for r in command_runs(home, key, command)]
                           == [True], SLOW), evidence_dump(home, key) + "\n" + self.dump()
        (run,) = command_runs(home, key, command)
        assert (Path(run.cwd).resolve(), run.tool_name, run.tool_status) == \
            (self.project.resolve(), "Bash", "ok"), (run, evidence_dump(home, key))
        assert run.duration_ms is not None and run.duration_ms >= 0, run
        assert (run.exit_code, run.outcome) == (None, "passed"), run  # as Claude states it


@pytest.fixture
def world(request: pytest.FixtureRequest, tmp_path: Path, tmux_socket: Path,
          claude_cli: RealCli, real_clis: RealClis,
          monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    with _world(request, tmp_path, tmux_socket, claude_cli, real_clis, monkeypatch) as made:
        yield made


@pytest.fixture
def local_check_world(request: pytest.FixtureRequest, tmp_path: Path, tmux_socket: Path,
                      claude_cli: RealCli, real_clis: RealClis,
                      monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    """Auto mode without the service's own check: Claude Code asks about each command in
    a side request, which the stand-in answers as the service does."""
    with _world(request, tmp_path, tmux_socket, claude_cli, real_clis, monkeypatch,
                extra_env=LOCAL_CHECK_ENV) as made:
        yield made


@pytest.fixture
def gateway_world(request: pytest.FixtureRequest, tmp_path: Path, tmux_socket: Path,
                  claude_cli: RealCli, real_clis: RealClis,
                  monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    """The stand-in as a gateway that does not pass the service's check through."""
    with _world(request, tmp_path, tmux_socket, claude_cli, real_clis, monkeypatch,
                refuses_check=True) as made:
        yield made


@contextmanager
def _world(request: pytest.FixtureRequest, tmp_path: Path, tmux_socket: Path,
           claude_cli: RealCli, real_clis: RealClis, monkeypatch: pytest.MonkeyPatch, *,
           extra_env: dict[str, str] | None = None,
           refuses_check: bool = False) -> Iterator[World]:
    # The default install layout, as a person has it: no SWITCHBOARD_HOME or
    # SWITCHBOARD_CONFIG anywhere, config in the XDG config dir, state in the XDG
    # state dir; the agents' hooks and MCP server must find both from their launch.
    root = tmp_path / "person"
    for name in ("SWITCHBOARD_HOME", "SWITCHBOARD_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(root / ".local" / "state"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(root / ".config"))
    sb_home = xdg_home(root)
    assert Home.from_env() == sb_home
    monkeypatch.delenv("TMUX", raising=False)
    monkeypatch.delenv("TMUX_PANE", raising=False)
    # The whole journey meets the start-up dialog newer releases show once; the
    # focused tests start from a person who has answered it.
    first_run = request.node.get_closest_marker("first_run") is not None
    home = seed_home(tmp_path / "claude-home", [root / "src" / "alpha", root / "src" / "beta"],
                     claude_cli.version, nudge_seen=not first_run)
    with AnthropicStandin(refuses_check=refuses_check) as api:
        command = claude_command(claude_cli.binary, home, api.url, extra_env)
        engine = make_real_engine(root, tmux_socket, {Provider.CLAUDE: command,
                                                      Provider.CODEX: (str(real_clis.codex),)},
                                  home=sb_home)
        try:
            yield World(engine, tmux_socket, root, home, api, claude_cli.version)
        finally:
            engine.conn.close()


def _offered_ours(api: AnthropicStandin) -> bool:
    """Every Switchboard tool, under the exact name Claude gives it, reached the model:
    in one request's tools (up to 2.1.300), or named in the deferred-tool list a
    request carries for ToolSearch (2.1.332 defers MCP tools)."""
    ours = set(claude_tool_names())
    if not {PUSH_TOOL, COMPLETE_TOOL, CLAIM_TOOL} <= ours:
        return False
    turns = api.turns()
    return any(ours <= set(turn.tool_names) for turn in turns) or any(
        "ToolSearch" in turn.tool_names and all(name in json.dumps(turn.body) for name in ours)
        for turn in turns)


@pytest.mark.first_run
def test_real_claude_completes_the_whole_journey(world: World) -> None:
    engine, socket = world.engine, world.socket
    route = engine.project_enter(new_request_id(), "alpha")
    parent = route.frame_id
    started = engine.frame_start(new_request_id(), parent, Provider.CLAUDE)
    assert retry_until(lambda: one(engine, "SELECT state FROM launch_intents WHERE launch_id = ?",
                                   started.launch_id) == ("bound",), SLOW)
    main = main_pane(engine)
    # 2.1.300+ open on "Make auto mode your default permission mode?" once
    newer = tuple(int(part) for part in world.version.split(".")) >= (2, 1, 300)
    assert world.pass_startup_dialog(main, parent) == newer
    world.wait_prompt(main)
    parent_id = world.session_id(parent)

    # start -> working -> ready, from the CLI's own hooks
    type_prompt(socket, main, "SLOWTEST say something")
    world.wait_activity(parent, "working")
    world.wait_activity(parent, "ready")
    assert "STANDIN-SLOW done" in screen(socket, main)

    # a tool the person's rules do not allow asks; the pane needs input until approved
    type_prompt(socket, main, "TOOLTEST please")
    world.wait_activity(parent, "needs_input")
    assert retry_until(lambda: "Do you want to proceed?" in screen(socket, main), SLOW), \
        screen(socket, main)
    marker = world.project / TOOLTEST_COMMAND.split()[-1]
    assert not marker.exists()
    world.approve(main)  # 1. Yes
    world.wait_activity(parent, "ready")
    assert marker.exists()
    # ... and the Bash run lands in the session's evidence as one command run of its
    # tool run: the exact command, where it ran, how long; Claude states no exit code,
    # its PostToolUse (not PostToolUseFailure) says the run passed.
    world.assert_command_run(parent, TOOLTEST_COMMAND)

    # push: Switchboard's own tools run without asking, by the names the CLI gave them
    type_prompt(socket, main, "PUSH Fix the bug :: Make test_foo pass")
    assert retry_until(lambda: world.transition("push") is not None
                       and world.transition("push")[0] == "completed", SLOW), \
        screen(socket, main)
    child = world.frame("Fix the bug")
    child_pane = main_pane(engine)
    assert child_pane != main
    assert f"{main} 1" in tmux(socket, "list-panes", "-a", "-F",
                               "#{pane_id} #{pane_input_off}").splitlines()
    assert retry_until(lambda: one(engine, "SELECT first_claimed_at FROM transition_briefs")[0]
                       is not None, SLOW), screen(socket, child_pane)
    world.wait_activity(child, "ready")
    turn = one(engine, "SELECT transport, state, submission_count FROM control_turns"
                       " WHERE kind = 'claim_brief'")
    assert turn == ("resume_initial", "settled", 1)
    child_screen = screen(socket, child_pane)
    assert child_screen.count(CONTROL_TEMPLATE) == 1, child_screen
    assert "STANDIN-CLAIMED brief: Fix the bug" in child_screen
    assert _offered_ours(world.api)
    assert world.api.journal.tool_calls()[:3] == ["Bash", PUSH_TOOL, CLAIM_TOOL]

    # complete-return: the parent, live and ready, gets the fixed line typed once
    type_prompt(socket, child_pane, "COMPLETE Fixed foo :: review and merge")
    assert retry_until(lambda: world.transition("complete_return") is not None
                       and world.transition("complete_return")[0] == "completed", SLOW), \
        world.dump() + screen(socket, main)
    assert main_pane(engine) == main
    assert one(engine, "SELECT lifecycle_state, close_reason FROM frames WHERE frame_id = ?",
               child) == ("closed", "completed")
    assert retry_until(lambda: one(engine, "SELECT first_claimed_at FROM completion_handoffs")[0]
                       is not None, SLOW), screen(socket, main)
    world.wait_activity(parent, "ready")
    turn = one(engine, "SELECT transport, state, submission_count FROM control_turns"
                       " WHERE kind = 'claim_handoff'")
    assert turn == ("live_input", "settled", 1)
    parent_screen = screen(socket, main)
    assert parent_screen.count(CONTROL_TEMPLATE) == 1, parent_screen
    assert "STANDIN-CLAIMED handoff: Fix the bug" in parent_screen
    assert retry_until(lambda: child_pane not in world.panes(), SLOW)
    assert world.api.journal.tool_calls()[3:] == [COMPLETE_TOOL, CLAIM_TOOL]

    # back, focus and a human close
    type_prompt(socket, main, "PUSH Second look :: look around")
    assert retry_until(lambda: world.transition("push", 2) is not None
                       and world.transition("push", 2)[0] == "completed", SLOW), \
        screen(socket, main)
    second = world.frame("Second look")
    second_pane = main_pane(engine)
    world.wait_activity(second, "ready")
    engine.frame_back(new_request_id(), world.view_id)
    assert main_pane(engine) == main
    assert world.pane_of(second) == second_pane  # parked, still running
    engine.view_focus(new_request_id(), world.view_id, second)
    assert main_pane(engine) == second_pane
    engine.frame_close(new_request_id(), second)
    assert main_pane(engine) == main
    assert one(engine, "SELECT lifecycle_state FROM frames WHERE frame_id = ?",
               second) == ("closed",)
    assert retry_until(lambda: second_pane not in world.panes(), SLOW)

    # stop, then start again: the exact same Claude session, in the CLI's own files
    sessions_before = transcripts(world.home)
    own = transcript(world.home, parent_id)
    assert own is not None and own in sessions_before
    engine.frame_stop(new_request_id(), parent)
    assert retry_until(lambda: main not in world.panes(), SLOW)
    again = engine.frame_start(new_request_id(), parent)
    assert again.session_key == started.session_key
    assert one(engine, "SELECT action FROM launch_intents WHERE launch_id = ?",
               again.launch_id) == ("resume",)
    resumed = main_pane(engine)
    world.wait_prompt(resumed)
    type_prompt(socket, resumed, "after the stop")
    assert retry_until(lambda: "STANDIN-OK: after the stop" in screen(socket, resumed), SLOW), \
        screen(socket, resumed)
    world.wait_activity(parent, "ready")
    assert retry_until(lambda: "after the stop" in own.read_text(), SLOW)
    assert transcripts(world.home) == sessions_before  # no new session file

    # the tmux server dies; opening the project again rebuilds it; n resumes
    pid = int(tmux(socket, "display-message", "-p", "#{pid}").strip())
    tmux(socket, "kill-server")
    assert retry_until(lambda: not _alive(pid), SLOW)
    EngineClient(engine=engine, home=xdg_home(world.root)).enter_project("alpha")
    restarted = engine.frame_start(new_request_id(), parent)
    assert restarted.session_key == started.session_key
    pane = main_pane(engine)
    world.wait_prompt(pane)
    type_prompt(socket, pane, "after the restart")
    assert retry_until(lambda: "STANDIN-OK: after the restart" in screen(socket, pane), SLOW), \
        screen(socket, pane)
    world.wait_activity(parent, "ready")
    assert retry_until(lambda: "after the restart" in own.read_text(), SLOW)
    assert transcripts(world.home) == sessions_before


def test_a_prompt_waits_for_a_slow_agent_tool_server(world: World) -> None:
    """Claude submits a prompt without waiting for MCP servers; the launch's hook
    holds it until the home's server has listed its tools for this launch's token, so
    the very first request already offers them. The server is made slow the way a
    loaded machine makes it: stopped (SIGSTOP) as the launch starts, so Claude's
    connection waits in its listen queue, and let go 4 s after the prompt was typed."""
    engine, socket = world.engine, world.socket
    route = engine.project_enter(new_request_id(), "alpha")
    engine.frame_start(new_request_id(), route.frame_id, Provider.CLAUDE)
    server = agent_http.running(xdg_home(world.root).run_dir)
    assert server is not None
    os.kill(server.pid, signal.SIGSTOP)
    try:
        main = main_pane(engine)
        world.wait_prompt(main)
        type_prompt(socket, main, "PUSH Early :: typed before the tools were listed")
        submitted = time.time()
        time.sleep(4)
    finally:
        os.kill(server.pid, signal.SIGCONT)
    assert retry_until(lambda: world.transition("push") is not None, SLOW), (
        screen(socket, main), [(r.path, len(r.tool_names)) for r in world.api.turns()],
        [reply.text for _, reply in world.api.journal.replies])
    ready = [p for p in xdg_home(world.root).run_dir.glob("*/claude-mcp-ready-*")
             if not p.suffix]  # the marker itself, not its .passed / .none
    assert len(ready) == 1 and ready[0].stat().st_mtime > submitted  # listed after Enter
    first = world.api.turns()[0]
    # offered inline (up to 2.1.300), or (2.1.332) already registered, so the first
    # request's ToolSearch fetched it for the second
    assert PUSH_TOOL in first.tool_names or (
        "ToolSearch" in first.tool_names and PUSH_TOOL in world.api.turns()[1].tool_names), \
        first.tool_names
    assert world.api.journal.tool_calls()[0] == PUSH_TOOL


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


# The window's two ends only: the resume argv with a prompt is an argv shape checked on
# every release (test_argv_shapes), and stop, resume and the handoff claim are the whole
# journey's, on every release.
@pytest.mark.parametrize("claude_cli", window_ends(Provider.CLAUDE), indirect=True,
                         ids=lambda v: f"claude-{v}")
def test_return_to_a_stopped_parent_resumes_it_with_the_fixed_line(world: World) -> None:
    """``claude --resume ID ... -- "<fixed line>"``: the prompt is a prompt, and the
    resumed parent claims its handoff with one submission."""
    engine, socket = world.engine, world.socket
    route = engine.project_enter(new_request_id(), "alpha")
    parent = route.frame_id
    started = engine.frame_start(new_request_id(), parent, Provider.CLAUDE)
    main = main_pane(engine)
    world.wait_prompt(main)
    type_prompt(socket, main, "PUSH Child :: the child's brief")
    assert retry_until(lambda: world.transition("push") is not None
                       and world.transition("push")[0] == "completed", SLOW), world.dump()
    child = world.frame("Child")
    child_pane = main_pane(engine)
    assert retry_until(lambda: one(engine, "SELECT first_claimed_at FROM transition_briefs")[0]
                       is not None, SLOW), screen(socket, child_pane)
    world.wait_activity(child, "ready")
    engine.frame_stop(new_request_id(), parent)  # the parked parent stops
    assert retry_until(lambda: main not in world.panes(), SLOW)
    type_prompt(socket, child_pane, "COMPLETE done it :: merge")
    assert retry_until(lambda: world.transition("complete_return") is not None
                       and world.transition("complete_return")[0] == "completed", SLOW), \
        world.dump() + screen(socket, child_pane)
    assert retry_until(lambda: one(engine, "SELECT first_claimed_at FROM completion_handoffs")[0]
                       is not None, SLOW), world.dump() + screen(socket, main_pane(engine))
    world.wait_activity(parent, "ready")
    assert one(engine, "SELECT transport, state, submission_count FROM control_turns"
                       " WHERE kind = 'claim_handoff'") == ("resume_initial", "settled", 1)
    assert one(engine, "SELECT current_session_key FROM frames WHERE frame_id = ?",
               parent) == (started.session_key,)
    parent_screen = screen(socket, main_pane(engine))
    assert parent_screen.count(CONTROL_TEMPLATE) == 1, parent_screen
    assert "STANDIN-CLAIMED handoff: Child" in parent_screen
    assert one(engine, "SELECT lifecycle_state, close_reason FROM frames WHERE frame_id = ?",
               child) == ("closed", "completed")


# The window's two ends only: the subject is the broker (a parked workspace, one typed
# line, poll and ACK); the agent tools over HTTP (test_http_tools_realcli) and the prompt
# hook that witnesses the line (the whole journey) run on every release.
@pytest.mark.parametrize("claude_cli", window_ends(Provider.CLAUDE), indirect=True,
                         ids=lambda v: f"claude-{v}")
def test_real_claude_task_agent_messages_its_parked_workspace(
        world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 13 with the real CLI: the task agent sends its workspace agent a message
    through MCP (``message_send``); nothing is typed while the workspace is parked;
    showing it types the one notification line, and the workspace agent polls and
    ACKs it (``message_poll``, ``message_ack``); the person sees it in the Inbox
    meanwhile; one send, one line, one ACK."""
    engine, socket = world.engine, world.socket
    route = engine.project_enter(new_request_id(), "alpha")
    parent = route.frame_id
    engine.frame_start(new_request_id(), parent, Provider.CLAUDE)
    main = main_pane(engine)
    world.wait_prompt(main)
    assert {SEND_TOOL, POLL_TOOL, ACK_TOOL} <= set(claude_tool_names())  # pre-approved

    type_prompt(socket, main, "PUSH Fix the bug :: Make test_foo pass")
    assert retry_until(lambda: world.transition("push") is not None
                       and world.transition("push")[0] == "completed", SLOW), world.dump()
    child = world.frame("Fix the bug")
    child_pane = main_pane(engine)
    assert retry_until(lambda: one(engine, "SELECT first_claimed_at FROM transition_briefs")[0]
                       is not None, SLOW), world.dump()
    world.wait_activity(child, "ready")
    workspace = str(one(engine, "SELECT title FROM frames WHERE frame_id = ?", parent)[0])

    # The task agent sends; its parent is parked, so the message waits unstamped.
    type_prompt(socket, child_pane, "MSG workspace :: please review the diff")
    assert retry_until(lambda: world.broker("SELECT COUNT(*) FROM messages") == [(1,)],
                       SLOW), world.dump()
    assert retry_until(lambda: "STANDIN-SENT" in screen(socket, child_pane), SLOW), world.dump()
    world.wait_activity(child, "ready")
    ((message_id, notified, state),) = world.broker(
        "SELECT message_id, notified_at, status_state FROM messages"
        " WHERE text = 'please review the diff'")
    assert (notified, state) == (None, "input_required"), world.dump()
    assert world.api.journal.tool_calls() == [PUSH_TOOL, CLAIM_TOOL, SEND_TOOL], world.dump()
    line = managed_line(message_id, "Fix the bug")
    assert "[switchboard] message" not in screen(socket, main), world.dump()  # parked

    # The person sees it in the view's Inbox, pending, from the task to the workspace.
    inbox = [(e.message_id, e.from_name, e.to_name, e.text, e.pending)
             for e in inbox_for_view(engine, xdg_home(world.root), world.view_id)]
    assert (message_id, "Fix the bug", workspace, "please review the diff", True) in inbox, inbox

    # Showing the workspace types the line once; its agent polls and ACKs that message.
    # The typist's own stamp is lost here (as when it is killed right after typing):
    # Claude Code's prompt hook is the witness that stamps the message.
    typist_stamps = witness_only(monkeypatch)
    engine.view_focus(new_request_id(), world.view_id, parent)
    assert main_pane(engine) == main
    assert retry_until(lambda: world.broker(
        "SELECT status_state FROM messages WHERE message_id = ?", message_id)
        == [("completed",)], SLOW), world.dump()
    assert retry_until(lambda: f"STANDIN-ACKED {message_id}" in screen(socket, main), SLOW), \
        world.dump()
    world.wait_activity(parent, "ready")
    # Claude wraps the echoed prompt at the pane's width: compare the words.
    assert _words(screen(socket, main)).count(_words(line)) == 1, world.dump()
    assert world.api.journal.tool_calls()[3:] == [POLL_TOOL, ACK_TOOL], world.dump()
    assert world.broker("SELECT COUNT(*), COUNT(notified_at) FROM messages") == [(1, 1)]
    assert typist_stamps == [message_id], world.dump()  # typed by the typist, once
    inbox = [(e.message_id, e.pending)
             for e in inbox_for_view(engine, xdg_home(world.root), world.view_id)]
    assert (message_id, True) not in inbox, inbox  # handled: no longer waiting for anyone


def _words(text: str) -> str:
    return " ".join(text.split())


MODES = ("default", "acceptEdits", "plan", "auto", "dontAsk")
"""The person's own defaultMode; bypassPermissions is refused by the CLI for root (where
this suite runs), so it cannot be started here."""
ASKS_FOR_OWN_TOOLS = ("plan",)
"""Plan mode asks before any tool that changes state, allow rules and hook decisions
notwithstanding (measured with 2.1.332): Switchboard's tools wait for the person there."""


def _approve_until_gone(world: World, pane: str, frame_id: str) -> None:
    """The person says yes to a permission question Switchboard shows as needs input."""
    world.wait_activity(frame_id, "needs_input")
    assert retry_until(lambda: "Do you want to proceed?" in screen(world.socket, pane), SLOW), \
        (pane, screen(world.socket, pane), world.dump())
    world.approve(pane)


@pytest.mark.parametrize("claude_cli", [newest(Provider.CLAUDE)], indirect=True,
                         ids=lambda v: f"claude-{v}")
@pytest.mark.parametrize("mode", MODES)
def test_switchboards_tools_and_claim_line_work_in_every_permission_mode(
        world: World, mode: str) -> None:
    """Whatever mode the person runs Claude Code in, the agent's push and the child's
    claim of its brief go through: without a question (Switchboard allows its own tools
    per launch), or in plan mode after a question Switchboard shows as needs input."""
    world.set_settings_mode(mode)
    engine, socket = world.engine, world.socket
    route = engine.project_enter(new_request_id(), "alpha")
    parent = route.frame_id
    engine.frame_start(new_request_id(), parent, Provider.CLAUDE)
    main = main_pane(engine)

    def at_prompt() -> bool:
        text = screen(socket, main)
        return find_dialog(text.splitlines()) is None and \
            any(hint in text for hint in ("for shortcuts", "(shift+tab to cycle)"))
    assert retry_until(at_prompt, SLOW), screen(socket, main)
    type_prompt(socket, main, f"PUSH In {mode} :: work in {mode} mode")
    if mode in ASKS_FOR_OWN_TOOLS:
        _approve_until_gone(world, main, parent)  # the push
        assert retry_until(lambda: world.transition("push") is not None, SLOW), world.dump()
        # the push shows the task in main once its agent runs; the claim asks there
        task = world.frame(f"In {mode}")
        assert retry_until(lambda: world.pane_of(task) is not None
                           and main_pane(engine) == world.pane_of(task), SLOW), world.dump()
        _approve_until_gone(world, main_pane(engine), task)  # the claim
    assert retry_until(lambda: world.transition("push") is not None
                       and world.transition("push")[0] == "completed", SLOW), world.dump()
    child = world.frame(f"In {mode}")
    assert retry_until(lambda: one(engine, "SELECT first_claimed_at FROM transition_briefs")[0]
                       is not None, SLOW), world.dump()
    world.wait_activity(child, "ready")
    assert f"STANDIN-CLAIMED brief: In {mode}" in screen(socket, main_pane(engine))
    assert world.api.journal.tool_calls() == [PUSH_TOOL, CLAIM_TOOL], world.dump()


@pytest.mark.parametrize("claude_cli", [newest(Provider.CLAUDE)], indirect=True,
                         ids=lambda v: f"claude-{v}")
def test_a_call_auto_mode_blocks_is_a_failure_not_work(world: World) -> None:
    """In auto mode the service's check blocks a risky command: Claude says so in the
    pane, its PermissionDenied hook ends the tool run failed in the frame's evidence,
    and the turn's Stop makes the frame ready: never left working."""
    world.set_settings_mode("auto")
    engine, socket = world.engine, world.socket
    route = engine.project_enter(new_request_id(), "alpha")
    parent = route.frame_id
    engine.frame_start(new_request_id(), parent, Provider.CLAUDE)
    main = main_pane(engine)
    assert retry_until(lambda: "auto mode on" in screen(socket, main), SLOW), \
        screen(socket, main)
    type_prompt(socket, main, "RISKYTEST please")
    world.wait_activity(parent, "ready")
    assert "Blocked by auto mode" in screen(socket, main), screen(socket, main)
    # blocked by the service's verdict, with its words: not for want of one
    text = _words(screen(socket, main))
    assert "Downloads and runs a remote script" in text and "could not evaluate" not in text, \
        text
    assert world.api.journal.checks() == []  # the service judged it, no side request
    home = xdg_home(world.root)
    key = str(one(engine, "SELECT current_session_key FROM frames WHERE frame_id = ?",
                  parent)[0])
    assert retry_until(lambda: [(r.completed, r.outcome, r.exit_code) for r in
                                command_runs(home, key, RISKY_COMMAND)] == [(True, "failed", None)]
                       and _tool_statuses(home, key) == [("Bash", "error")], SLOW), \
        evidence_dump(home, key)


def _tool_statuses(home: Home, session_key: str) -> list[tuple[str, str]]:
    from storage.session_db import session_db_path

    path = session_db_path(home.root, session_key)
    if not path.exists():
        return []
    conn = sqlite3.connect(sqlite_uri(path, mode="ro"), uri=True)
    try:
        return [tuple(r) for r in conn.execute("SELECT tool_name, status FROM tool_runs")]
    finally:
        conn.close()


def _reason(engine: Engine, frame_id: str) -> tuple | None:
    return one(engine, "SELECT s.activity, s.activity_reason, s.updated_at FROM"
                       " provider_sessions s JOIN frames f ON f.current_session_key ="
                       " s.session_key WHERE f.frame_id = ?", frame_id)


def _start_in_auto_mode(world: World) -> tuple[str, str]:
    """A Claude frame whose person runs auto mode; (frame, pane) once it is at its prompt."""
    world.set_settings_mode("auto")
    route = world.engine.project_enter(new_request_id(), "alpha")
    world.engine.frame_start(new_request_id(), route.frame_id, Provider.CLAUDE)
    main = main_pane(world.engine)
    assert retry_until(lambda: "auto mode on" in screen(world.socket, main), SLOW), \
        screen(world.socket, main)
    return route.frame_id, main


def _watch_turn(world: World, frame_id: str, pane: str, command: str) -> tuple[set, set]:
    """Every activity and every question on screen, sampled every 0.1 s, until the frame
    is ready after ``command`` finished (its run is in the evidence)."""
    home = xdg_home(world.root)
    key = str(one(world.engine, "SELECT current_session_key FROM frames WHERE frame_id = ?",
                  frame_id)[0])
    activities: set[str | None] = set()
    questions: set[str] = set()

    def finished() -> bool:
        activities.add(activity(world.engine, frame_id))
        text = screen(world.socket, pane)
        questions.update(q for q in ("Do you want to proceed?", "Enter to stay in auto mode")
                         if q in text)
        return activity(world.engine, frame_id) == "ready" and \
            [r.completed for r in command_runs(home, key, command)] == [True]
    assert retry_until(finished, SLOW, interval=0.1), world.dump()
    return activities, questions


@pytest.mark.parametrize("claude_cli", [newest(Provider.CLAUDE)], indirect=True,
                         ids=lambda v: f"claude-{v}")
def test_a_plain_command_runs_in_auto_mode_without_a_question(
        local_check_world: World) -> None:
    """Auto mode's check, asked in a side request and answered as the service does,
    lets a plain command through: no question on screen, never a needs-input badge."""
    world = local_check_world
    parent, main = _start_in_auto_mode(world)
    type_prompt(world.socket, main, "PLAINTEST please")
    activities, questions = _watch_turn(world, parent, main, PLAIN_COMMAND)
    assert "needs_input" not in activities and not questions, (activities, questions)
    world.assert_command_run(parent, PLAIN_COMMAND)
    assert (world.project / "standin-plain.txt").read_text() == "plain"
    # it was the side request that allowed it, once, with a grade the CLI read
    assert world.api.journal.checks() == [(PLAIN_COMMAND, "<severity>4</severity>")]


@pytest.mark.parametrize("claude_cli", [newest(Provider.CLAUDE)], indirect=True,
                         ids=lambda v: f"claude-{v}")
def test_the_check_blocks_a_risky_command_by_its_rule(local_check_world: World) -> None:
    """The side request's answer, not its absence, blocks the risky command: Claude
    names the rule in the pane (not "could not evaluate"), the run ends failed, and the
    frame is never needs-input: the check decided, nobody is asked."""
    world = local_check_world
    parent, main = _start_in_auto_mode(world)
    type_prompt(world.socket, main, "RISKYTEST please")
    home = xdg_home(world.root)
    key = str(one(world.engine, "SELECT current_session_key FROM frames WHERE frame_id = ?",
                  parent)[0])
    activities: set[str | None] = set()

    def blocked() -> bool:
        activities.add(activity(world.engine, parent))
        return activity(world.engine, parent) == "ready" and \
            [(r.completed, r.outcome) for r in command_runs(home, key, RISKY_COMMAND)] == \
            [(True, "failed")]
    assert retry_until(blocked, SLOW, interval=0.1), evidence_dump(home, key) + world.dump()
    text = _words(screen(world.socket, main))
    assert "Blocked by auto mode" in text and "Auto mode: [Code from External]" in text, text
    assert "could not evaluate" not in text
    assert "needs_input" not in activities, activities
    checks = world.api.journal.checks()
    assert [command for command, _ in checks] == [RISKY_COMMAND, RISKY_COMMAND], checks
    assert all("<category>Code From External</category>" in answer for _, answer in checks)
    assert not (world.project / "install.sh").exists()


@pytest.mark.parametrize("claude_cli", [newest(Provider.CLAUDE)], indirect=True,
                         ids=lambda v: f"claude-{v}")
def test_a_mid_turn_notice_is_needs_input_then_ready_after_the_persons_enter(
        gateway_world: World) -> None:
    """Behind a gateway that does not pass the service's check through, Claude Code
    2.1.332 puts up a notice before the first checked command and, some seconds later,
    announces it with Notification(agent_needs_input); the turn waits on it. That hook
    alone makes the frame needs-input (within a second of it, no pane polled), the dialog
    watch quotes the notice in a recovery, and the person's Enter lets the turn go on
    (the CLI then asks about the command: Yes) to its Stop: ready, the recovery resolved."""
    world = gateway_world
    engine, socket = world.engine, world.socket
    parent, main = _start_in_auto_mode(world)
    client = EngineClient(engine=engine, home=xdg_home(world.root))
    type_prompt(socket, main, "PLAINTEST please")
    assert retry_until(lambda: "Enter to stay in auto mode" in screen(socket, main), SLOW), \
        screen(socket, main)

    seen: list[float] = []

    def needs_input() -> bool:
        row = _reason(engine, parent)
        if row is not None and row[0] == "needs_input":
            seen.append(time.time())
            return True
        return False
    assert retry_until(needs_input, SLOW, interval=0.1), world.dump()
    activity_now, reason, written_at = _reason(engine, parent) or ("", "", 0)
    assert (activity_now, reason) == ("needs_input", "question")
    assert seen[0] - written_at / 1000 <= 1.0, (seen[0], written_at)  # within 1 s of the hook
    assert "Enter to stay in auto mode" in screen(socket, main)  # still up: no Stop came

    def notice() -> tuple | None:
        client.reconcile()
        return one(engine, "SELECT bounded_explanation FROM recoveries"
                           " WHERE kind = 'provider_dialog' AND state = 'open'")
    assert retry_until(lambda: notice() is not None, SLOW), world.dump()
    (words,) = notice() or ("",)
    assert "Auto mode can't check actions in this session" in words, words

    # the person: Enter (stay in auto mode); the CLI then asks about the command
    def answered(question: str) -> bool:
        if question not in screen(socket, main):
            return True
        tmux(socket, "send-keys", "-t", main, "Enter")
        time.sleep(1.0)
        return question not in screen(socket, main)
    assert retry_until(lambda: answered("Enter to stay in auto mode"), SLOW), world.dump()
    assert retry_until(lambda: "Do you want to proceed?" in screen(socket, main), SLOW)
    tmux(socket, "send-keys", "-t", main, "Down")  # No is focused, and No interrupts
    time.sleep(0.5)
    assert retry_until(lambda: answered("Do you want to proceed?"), SLOW), world.dump()
    world.wait_activity(parent, "ready")
    assert (_reason(engine, parent) or ())[:2] == ("ready", "turn_complete")
    world.assert_command_run(parent, PLAIN_COMMAND)
    assert retry_until(lambda: notice() is None, SLOW), world.dump()
    assert one(engine, "SELECT state FROM recoveries WHERE kind = 'provider_dialog'") == \
        ("resolved",)
    assert (_reason(engine, parent) or ())[:2] == ("ready", "turn_complete")
