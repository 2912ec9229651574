"""A mixed tree of real CLIs (issue 41): a Claude Code workspace pushes a Gemini CLI task,
which pushes an OpenCode task; each completes back up, its parent claiming the handoff once.

Each CLI runs against its own loopback stand-in (the Anthropic Messages API for Claude
Code and for OpenCode's Anthropic provider, the Gemini API for Gemini CLI), in the
person's own setup, one HOME for all three: Claude Code's state trusting the project,
their ``~/.gemini`` (API key auth, the project trusted), their ``opencode.json`` (the
stand-in as its provider). Gemini and OpenCode are off in a new config; this person's
config turns all three on and lets a task push its own task (two levels). A task names
its provider in ``task_push`` (the stand-ins' ``PUSHTO <provider> ...``), so the child
runs on another CLI than its parent, and the fixed claim line reaches each CLI the way
that CLI takes it: a child's brief from its launch, a parent's handoff typed into its
live pane.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from core.config.config import AutomationConfig, ProviderConfig, TmuxConfig
from core.config.registry import init_registry
from core.context.requests import new_request_id
from core.engine.engine import Engine
from core.engine.open import open_engine
from core.model.control_line import CONTROL_TEMPLATE
from core.model.enums import Provider
from tests.factories import project_config
from tests.integration.journey_env import one, tmux
from tests.realcli import gemini_standin
from tests.realcli.anthropic_standin import AnthropicStandin
from tests.realcli.gemini_standin import GeminiStandin
from tests.realcli.harness import (
    activity,
    main_pane,
    screen,
    type_prompt,
    xdg_home,
)
from tests.realcli.harness_claude import claude_command, seed_home
from tests.realcli.harness_codex import SCRUBBED_PREFIXES
from tests.realcli.install import (
    RealCliUnavailable,
    ensure_cli,
    ensure_gemini,
    ensure_opencode,
    newest,
)
from tests.realcli.opencode_harness import START_S, TURN_S
from tests.realcli.opencode_standin import OpencodeStandin
from tests.waiting import end_process_groups, fail_unless

pytestmark = [pytest.mark.tmux, pytest.mark.timeout(1200)]

PROJECT = "alpha"
CLAUDE_PROMPT = "? for shortcuts"
GEMINI_PROMPT = "Type your message"
OPENCODE_PROMPT = "ctrl+p"
SLOW = 120.0
"""A Claude or Gemini start or turn on a shared 2-core machine; OpenCode's own bounds
(START_S, TURN_S) are longer: its first start unpacks and indexes."""


@dataclass(frozen=True)
class Tree:
    """The person's engine on its tmux server, and the three stand-ins."""

    engine: Engine
    socket: Path
    root: Path
    claude: AnthropicStandin
    gemini: GeminiStandin
    opencode: OpencodeStandin

    def transitions(self, kind: str) -> list[tuple[str, str]]:
        return [(str(r[0]), str(r[1])) for r in self.engine.conn.execute(
            "SELECT state, target_frame_id FROM view_transitions WHERE kind = ?"
            " ORDER BY created_at, rowid", (kind,))]

    def frame(self, title: str) -> str:
        return str(one(self.engine, "SELECT frame_id FROM frames WHERE title = ?", title)[0])

    def provider(self, frame_id: str) -> str:
        return str(one(self.engine, "SELECT s.provider FROM frames f JOIN provider_sessions s"
                                    " ON s.session_key = f.current_session_key"
                                    " WHERE f.frame_id = ?", frame_id)[0])

    def panes(self) -> list[str]:
        return tmux(self.socket, "list-panes", "-a", "-F", "#{pane_id}").split()

    def dump(self) -> str:
        """What the registry says and every pane shows, for a failing wait's message."""
        out = []
        for sql in ("SELECT kind, state, transport_phase, target_frame_id FROM view_transitions",
                    "SELECT kind, transport, state, submission_count FROM control_turns",
                    "SELECT session_key, activity, runtime_presence FROM provider_sessions",
                    "SELECT kind, subject_type, state FROM recoveries"):
            out.append(repr([tuple(r) for r in self.engine.conn.execute(sql)]))
        for turn in self.gemini.turns():  # what each Gemini tool call answered
            for content in (turn.body or {}).get("contents") or []:
                for part in content.get("parts") or []:
                    if isinstance(part, dict) and "functionResponse" in part:
                        out.append(f"gemini tool result: {json.dumps(part)[:600]}")
        for log in sorted((self.root / ".local" / "share" / "opencode" / "log").glob("*.log")):
            lines = log.read_text(encoding="utf-8", errors="replace").splitlines()
            out += [f"opencode log: {line[:300]}" for line in lines if "mcp" in line][-8:]
        for pane in self.panes():
            out.append(f"--- pane {pane} ---\n" + screen(self.socket, pane).rstrip())
        return "\n".join(out)

    def wait(self, what: str, check: object, timeout: float) -> None:
        assert callable(check)
        fail_unless(check, timeout, lambda: f"{what}\n{self.dump()}")


def _person(root: Path, monkeypatch: pytest.MonkeyPatch, gemini: GeminiStandin,
            opencode: OpencodeStandin) -> None:
    """The person's home, and this process's environment theirs (the tmux server, so
    every pane, starts from it): their ~/.gemini (API key auth, the projects trusted),
    their OpenCode config (the stand-in as its provider), Switchboard in the XDG layout."""
    for name in list(os.environ):
        if name.startswith(SCRUBBED_PREFIXES) or name.startswith(("GEMINI_", "GOOGLE_",
                                                                   "OPENCODE_")):
            monkeypatch.delenv(name)
    for name in ("SWITCHBOARD_HOME", "SWITCHBOARD_CONFIG", "CI"):
        monkeypatch.delenv(name, raising=False)
    for name, value in {"HOME": root, "XDG_CONFIG_HOME": root / ".config",
                        "XDG_STATE_HOME": root / ".local" / "state",
                        "XDG_DATA_HOME": root / ".local" / "share",
                        "XDG_CACHE_HOME": root / ".cache"}.items():
        monkeypatch.setenv(name, str(value))
    monkeypatch.setenv("OPENCODE_DISABLE_MODELS_FETCH", "1")  # nothing leaves loopback
    theirs = root / ".gemini"
    theirs.mkdir(parents=True)
    (theirs / "settings.json").write_text(
        json.dumps({"security": {"auth": {"selectedType": "gemini-api-key"}}}), encoding="utf-8")
    trusted = {str(root / "src" / name): "TRUST_FOLDER" for name in ("alpha", "beta")}
    (theirs / "trustedFolders.json").write_text(json.dumps(trusted), encoding="utf-8")
    config = root / ".config" / "opencode" / "opencode.json"
    config.parent.mkdir(parents=True)
    config.write_text(json.dumps({"$schema": "https://opencode.ai/config.json",
                                  **opencode.provider_config()}), encoding="utf-8")


def _binaries() -> tuple[Path, str, Path, Path]:
    """Claude Code (the newest tested, and its version), Gemini CLI and OpenCode."""
    try:
        claude = ensure_cli(Provider.CLAUDE, newest(Provider.CLAUDE))
        return claude.binary, claude.version, ensure_gemini(), ensure_opencode()
    except RealCliUnavailable as exc:  # the tier fails, never skips
        pytest.fail(f"real-CLI tier cannot run: {exc}", pytrace=False)


def _groups(socket: Path) -> set[int]:
    """The process groups of the server's panes (a Node CLI can outlive its tmux server)."""
    found = set()
    for pid in tmux(socket, "list-panes", "-a", "-F", "#{pane_pid}").split():
        try:
            found.add(os.getpgid(int(pid)))
        except (ProcessLookupError, ValueError):
            continue
    return found


@pytest.fixture
def tree(tmp_path: Path, tmux_socket: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Tree]:
    claude_bin, claude_version, gemini_bin, opencode_bin = _binaries()
    root = tmp_path / "person"
    monkeypatch.delenv("TMUX", raising=False)
    monkeypatch.delenv("TMUX_PANE", raising=False)
    # Claude Code's HOME is the person's too: a child's launch runs in its parent's Stop
    # hook, inside the parent CLI's environment, and Gemini's launch finds the person's
    # ~/.gemini (their login, trust) from that HOME.
    claude_home = seed_home(root, [root / "src" / PROJECT], claude_version)
    groups: set[int] = set()
    with AnthropicStandin() as claude_api, GeminiStandin() as gemini_api, \
            OpencodeStandin() as opencode_api:
        _person(root, monkeypatch, gemini_api, opencode_api)
        commands = {
            Provider.CLAUDE: claude_command(claude_bin, claude_home, claude_api.url),
            Provider.GEMINI: ("env", f"GEMINI_API_KEY={gemini_standin.API_KEY}",
                              f"GOOGLE_GEMINI_BASE_URL={gemini_api.url}",
                              "TERM=xterm-256color", str(gemini_bin)),
            Provider.OPENCODE: (str(opencode_bin),),
        }
        engine = _engine(root, tmux_socket, commands)
        made = Tree(engine, tmux_socket, root, claude_api, gemini_api, opencode_api)
        try:
            yield made
        finally:
            groups |= _groups(tmux_socket)
            engine.conn.close()
            tmux(tmux_socket, "kill-server")
            end_process_groups(groups)


def _engine(root: Path, socket: Path, commands: dict[Provider, tuple[str, ...]]) -> Engine:
    """``make_real_engine``'s home and projects, and a config that turns the three CLIs on
    (Gemini and OpenCode are off in a new config) and lets a task push its own task
    (``[automation] initial_max_depth = 2``; the default 1 refuses the Gemini task's push
    with depth_exceeded)."""
    home = xdg_home(root)
    template = replace(project_config(root / "src"),
                       providers={p: ProviderConfig(command=c, enabled=True,
                                                    version_timeout_seconds=60)
                                  for p, c in commands.items()},
                       tmux=TmuxConfig(socket_path=str(socket)),
                       automation=AutomationConfig(initial_max_depth=2))
    init_registry(home, template=template)
    return open_engine(home, with_stage=True)


def _claims(tree: Tree) -> tuple[int, int, int]:
    """How many times each CLI's model called ``transition_claim``: Claude, Gemini, OpenCode."""
    claude = [n for n in tree.claude.journal.tool_calls() if n.endswith("transition_claim")]
    called = [gemini_standin.script(t.body or {}, t.tool_names).call for t in tree.gemini.turns()]
    gemini = [c for c in called if c is not None and c[0].endswith("transition_claim")]
    opencode = [n for n in tree.opencode.journal.tool_calls()
                if n.endswith("transition_claim")]
    return len(claude), len(gemini), len(opencode)


def test_claude_pushes_gemini_which_pushes_opencode_and_each_returns_its_handoff_once(
        tree: Tree) -> None:
    engine, socket = tree.engine, tree.socket
    config = engine.config
    assert all(config.providers[p].enabled
               for p in (Provider.CLAUDE, Provider.GEMINI, Provider.OPENCODE))

    # --- the Claude Code workspace ----------------------------------------------
    workspace = engine.project_enter(new_request_id(), PROJECT).frame_id
    engine.frame_start(new_request_id(), workspace, Provider.CLAUDE)
    claude_pane = main_pane(engine)
    tree.wait("Claude's prompt", lambda: CLAUDE_PROMPT in screen(socket, claude_pane), SLOW)

    # --- Claude pushes a Gemini task; Gemini claims its brief from its launch ----
    type_prompt(socket, claude_pane, "PUSHTO gemini Gemini part :: Review the parser")
    tree.wait("the Gemini push completed",
              lambda: [s for s, _ in tree.transitions("push")] == ["completed"], SLOW)
    gemini_task = tree.frame("Gemini part")
    assert tree.provider(gemini_task) == "gemini"
    gemini_pane = main_pane(engine)
    assert gemini_pane != claude_pane
    tree.wait("Gemini claimed its brief",
              lambda: one(engine, "SELECT first_claimed_at FROM transition_briefs WHERE"
                                  " target_frame_id = ?", gemini_task)[0] is not None, SLOW)
    tree.wait("Gemini ready", lambda: activity(engine, gemini_task) == "ready", SLOW)
    assert screen(socket, gemini_pane).count(CONTROL_TEMPLATE) == 1

    # --- Gemini pushes an OpenCode task; OpenCode claims its brief ----------------
    type_prompt(socket, gemini_pane, "PUSHTO opencode OpenCode part :: Write the test")
    tree.wait("the OpenCode push completed",
              lambda: [s for s, _ in tree.transitions("push")] == ["completed", "completed"],
              START_S + TURN_S)
    opencode_task = tree.frame("OpenCode part")
    assert tree.provider(opencode_task) == "opencode"
    assert one(engine, "SELECT parent_frame_id FROM frames WHERE frame_id = ?",
               opencode_task) == (gemini_task,)
    opencode_pane = main_pane(engine)
    assert opencode_pane not in (claude_pane, gemini_pane)
    tree.wait("OpenCode claimed its brief",
              lambda: one(engine, "SELECT first_claimed_at FROM transition_briefs WHERE"
                                  " target_frame_id = ?", opencode_task)[0] is not None,
              START_S + TURN_S)
    tree.wait("OpenCode ready", lambda: activity(engine, opencode_task) == "ready", TURN_S)
    assert screen(socket, opencode_pane).count(CONTROL_TEMPLATE) == 1

    # --- OpenCode completes back to Gemini, which claims the handoff once ---------
    type_prompt(socket, opencode_pane, "COMPLETE Test written :: run it in CI")
    tree.wait("OpenCode's return completed",
              lambda: [s for s, _ in tree.transitions("complete_return")] == ["completed"],
              TURN_S)
    assert one(engine, "SELECT lifecycle_state, close_reason FROM frames WHERE frame_id = ?",
               opencode_task) == ("closed", "completed")
    assert main_pane(engine) == gemini_pane
    tree.wait("Gemini claimed OpenCode's handoff",
              lambda: one(engine, "SELECT first_claimed_at FROM completion_handoffs WHERE"
                                  " source_frame_id = ?", opencode_task)[0] is not None, SLOW)
    tree.wait("Gemini ready again", lambda: activity(engine, gemini_task) == "ready", SLOW)
    assert screen(socket, gemini_pane).count(CONTROL_TEMPLATE) == 2  # brief, handoff

    # --- Gemini completes back to Claude, which claims the handoff once -----------
    type_prompt(socket, gemini_pane, "COMPLETE Parser reviewed :: merge the branch")
    tree.wait("Gemini's return completed",
              lambda: [s for s, _ in tree.transitions("complete_return")]
              == ["completed", "completed"], SLOW)
    assert one(engine, "SELECT lifecycle_state, close_reason FROM frames WHERE frame_id = ?",
               gemini_task) == ("closed", "completed")
    assert main_pane(engine) == claude_pane
    tree.wait("Claude claimed Gemini's handoff",
              lambda: one(engine, "SELECT first_claimed_at FROM completion_handoffs WHERE"
                                  " source_frame_id = ?", gemini_task)[0] is not None, SLOW)
    tree.wait("Claude ready", lambda: activity(engine, workspace) == "ready", SLOW)
    assert screen(socket, claude_pane).count(CONTROL_TEMPLATE) == 1
    assert "STANDIN-CLAIMED handoff: Gemini part" in screen(socket, claude_pane)

    # --- each fixed line typed once, each brief and handoff claimed once ----------
    turns = {(str(r[0]), str(r[1])): tuple(r[2:]) for r in engine.conn.execute(
        "SELECT target_frame_id, kind, transport, state, submission_count FROM control_turns")}
    assert {key: value[1:] for key, value in turns.items()} == {
        (gemini_task, "claim_brief"): ("settled", 1),
        (opencode_task, "claim_brief"): ("settled", 1),
        (gemini_task, "claim_handoff"): ("settled", 1),
        (workspace, "claim_handoff"): ("settled", 1)}, tree.dump()
    assert turns[(gemini_task, "claim_handoff")][0] == "live_input"
    assert turns[(workspace, "claim_handoff")][0] == "live_input"
    assert _claims(tree) == (1, 2, 1), tree.dump()
