"""The whole push -> claim -> complete -> claim journey through the MCP server.

A real private tmux server with fake Claude agents; every agent tool call goes
through `python -m navigator.cli mcp` in a subprocess whose environment is the
pane's (capability, generation, home, TMUX_PANE), exactly what a provider's MCP
client would inherit. Turn boundaries of the parent come from `handle_hook`;
the fake agents fire their own hooks and claim their own control turns, so the
MCP claims here are the idempotent second claims. Retrying any step creates no
duplicate.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from core.config.capabilities import ENV_CAPABILITY, ENV_GENERATION, ENV_HOME, digest
from core.hooks.hook_handler import handle_hook
from tests.core.test_hook_handler import (
    LiveSurface,
    launch_live_surface,
    mint_capability,
    payload_for,
)
from tests.core.test_mcp_server import McpProcess, base_env, error_text, ok_output, pane_env
from tests.integration.journey_env import tmux
from tests.waiting import retry_until


@dataclass(frozen=True)
class Journey:
    """A live parent agent (fake Claude) on a private server, and its registry."""

    live: LiveSurface
    root: Path

    def one(self, sql: str, *args: object) -> tuple | None:
        row = self.live.engine.conn.execute(sql, args).fetchone()
        return None if row is None else tuple(row)

    def child_of(self, push_id: str, child_frame: str) -> tuple[McpProcess, str, str, str]:
        """After the push ran: the child's MCP client with its own capability, its pane,
        session key and raw capability (the launch bound by the child's own hook)."""
        one = self.one
        assert retry_until(lambda: one("SELECT state FROM view_transitions"
                                       " WHERE transition_id = ?", push_id) == ("completed",), 30)
        launch_id = one("SELECT launch_id FROM launch_intents WHERE frame_id = ?"
                        " ORDER BY created_at DESC LIMIT 1", child_frame)[0]
        assert retry_until(lambda: one("SELECT state FROM launch_intents WHERE launch_id = ?",
                                       launch_id) == ("bound",), 30)
        raw = "sbcap1_test-" + uuid.uuid4().hex
        mint_capability(self.live.engine, launch_id, raw)
        pane = one("SELECT pane_id FROM agent_capabilities WHERE capability_digest = ?",
                   digest(raw))[0]
        key = one("SELECT current_session_key FROM frames WHERE frame_id = ?", child_frame)[0]
        client = McpProcess(base_env(**{ENV_HOME: str(self.root), ENV_CAPABILITY: raw,
                                        ENV_GENERATION: self.live.engine.generation_id,
                                        "TMUX_PANE": pane}))
        return client, pane, key, raw


@pytest.fixture
def journey(tmp_path: Path, tmux_socket: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv(ENV_HOME, str(tmp_path))
    for name in ("TMUX", "TMUX_PANE", ENV_CAPABILITY, ENV_GENERATION):
        monkeypatch.delenv(name, raising=False)
    live = launch_live_surface(tmp_path, tmux_socket)
    yield Journey(live, tmp_path)
    live.engine.conn.close()


def test_push_claim_complete_claim_over_mcp(journey: Journey, tmux_socket: Path) -> None:
    live, one, conn = journey.live, journey.one, journey.live.engine.conn
    parent = McpProcess(pane_env(live))
    child: McpProcess | None = None
    try:
        # 1. the parent, mid-turn, pushes a task; it waits for the parent's Stop
        handle_hook("claude", "UserPromptSubmit", payload_for(live, "UserPromptSubmit"),
                    live.env())
        pushed = ok_output(parent.call("task_push", {"title": "Fix the bug",
                                                     "brief": "Make test_foo pass"}))
        assert pushed["state"] == "prepared"
        push_id, child_frame = pushed["transition_id"], pushed["child_frame_id"]

        # 2. the trusted Stop executes it: the child launches and claims its brief itself
        stopped = handle_hook("claude", "Stop", payload_for(live, "Stop"), live.env())
        assert stopped.executed_transitions == (push_id,)
        child, child_pane, child_key, _raw = journey.child_of(push_id, child_frame)
        assert one("SELECT main_pane_id FROM user_views") == (child_pane,)

        # 3. the child's own claim over MCP: the same brief, not a first claim
        brief = ok_output(child.call("transition_claim"))
        assert (brief["kind"], brief["brief"], brief["first_claim"]) == \
            ("brief", "Make test_foo pass", False)
        assert retry_until(lambda: one("SELECT activity FROM provider_sessions"
                                       " WHERE session_key = ?", child_key) == ("ready",), 30)

        # 4. the idle child completes: the return runs at once, the parent's agent
        #    gets one control line, claims the handoff, and the child is closed
        done = ok_output(child.call("task_complete_return",
                                    {"summary": "Fixed foo", "next_action": "review"}))
        return_id = done["transition_id"]
        assert retry_until(lambda: one("SELECT state FROM view_transitions"
                                       " WHERE transition_id = ?", return_id) == ("completed",),
                           30), one("SELECT state, failure FROM view_transitions"
                                 " WHERE transition_id = ?", return_id)
        assert one("SELECT lifecycle_state, close_reason FROM frames WHERE frame_id = ?",
                   child_frame) == ("closed", "completed")

        def child_pane_gone() -> bool:
            return child_pane not in tmux(tmux_socket, "list-panes", "-a", "-F",
                                          "#{pane_id}").split()

        # The parent's claim kills it at once (its settling Stop is the second chance).
        assert retry_until(child_pane_gone, 15), (
            tmux(tmux_socket, "list-panes", "-a", "-F",
                 "#{session_name}:#{window_index} #{pane_id} #{@sb_role} #{@sb_surface} "
                 "#{pane_input_off} #{pane_dead}"),
            [tuple(r) for r in conn.execute(
                "SELECT surface_id, pane_id, lifecycle_state, launch_id FROM surfaces")],
            [tuple(r) for r in conn.execute(
                "SELECT frame_id, state, surface_id, generation FROM frame_placements")],
            [tuple(r) for r in conn.execute(
                "SELECT transition_id, kind, state, transport_phase, failure"
                " FROM view_transitions")])
        handoff = ok_output(parent.call("transition_claim"))
        assert (handoff["kind"], handoff["summary"], handoff["next_action"],
                handoff["first_claim"]) == ("handoff", "Fixed foo", "review", False)

        # 5. retries create nothing: the child's capability died with its runtime,
        #    the parent's repeated push returns the stored result
        counts = one("SELECT (SELECT COUNT(*) FROM view_transitions),"
                     " (SELECT COUNT(*) FROM frames)")
        text = error_text(child.call("task_complete_return",
                                     {"summary": "Fixed foo", "next_action": "review"}))
        assert text.startswith("unauthorized: capability was revoked"), text
        again = ok_output(parent.call("task_push", {"title": "Fix the bug",
                                                    "brief": "Make test_foo pass"}))
        assert (again["transition_id"], again["state"]) == (push_id, "completed")
        assert ok_output(parent.call("transition_claim"))["first_claim"] is False
        assert one("SELECT (SELECT COUNT(*) FROM view_transitions),"
                   " (SELECT COUNT(*) FROM frames)") == counts
    finally:
        parent.close()
        if child is not None:
            child.close()


def test_a_return_to_a_working_parent_waits_for_the_parents_stop(
        journey: Journey, tmux_socket: Path) -> None:
    """The claim line needs a proven idle parent: while the parked parent works (say a
    broker message started a turn), the child's return stays prepared and the child
    stays on screen; the parent's trusted Stop runs it, and the line is typed once."""
    live, one = journey.live, journey.one
    parent = McpProcess(pane_env(live))
    child: McpProcess | None = None
    try:
        pushed = ok_output(parent.call("task_push", {"title": "Fix the bug",
                                                     "brief": "Make test_foo pass"}))
        child_frame = pushed["child_frame_id"]  # the parent was idle: it ran at once
        child, child_pane, child_key, child_raw = journey.child_of(pushed["transition_id"],
                                                                   child_frame)
        assert retry_until(lambda: one("SELECT activity FROM provider_sessions"
                                       " WHERE session_key = ?", child_key) == ("ready",), 30)

        # The parked parent starts a turn of its own; then the idle child returns.
        handle_hook("claude", "UserPromptSubmit", payload_for(live, "UserPromptSubmit"),
                    live.env())
        done = ok_output(child.call("task_complete_return",
                                    {"summary": "Fixed foo", "next_action": "review"}))
        return_id = done["transition_id"]
        assert done["state"] == "prepared"
        assert one("SELECT main_pane_id FROM user_views") == (child_pane,)
        assert one("SELECT state, submission_count FROM control_turns WHERE transition_id"
                   " = ?", return_id) == ("prepared", 0)
        parent_pane = one("SELECT pane_id FROM surfaces WHERE surface_id = (SELECT"
                          " surface_id FROM agent_capabilities WHERE capability_digest = ?)",
                          digest(live.raw))[0]
        assert "Call transition_claim()" not in tmux(tmux_socket, "capture-pane", "-p", "-t",
                                                      parent_pane)
        # The child's own later Stop does not run it either: the parent still works.
        child_hook_env = {**live.env(), ENV_CAPABILITY: child_raw, "TMUX_PANE": child_pane}
        child_sid = one("SELECT provider_session_id FROM provider_sessions"
                        " WHERE session_key = ?", child_key)[0]
        handle_hook("claude", "Stop", payload_for(live, "Stop", session_id=child_sid),
                    child_hook_env)
        assert one("SELECT state FROM view_transitions WHERE transition_id = ?",
                   return_id) == ("prepared",)

        # The parent's trusted Stop runs the return; its agent gets the line once.
        stopped = handle_hook("claude", "Stop", payload_for(live, "Stop"), live.env())
        assert stopped.executed_transitions == (return_id,)
        assert retry_until(lambda: one("SELECT state FROM view_transitions WHERE transition_id"
                                       " = ?", return_id) == ("completed",), 30)
        assert one("SELECT main_pane_id FROM user_views") == (parent_pane,)
        assert one("SELECT transport, submission_count FROM control_turns"
                   " WHERE transition_id = ?", return_id) == ("live_input", 1)
        assert one("SELECT lifecycle_state, close_reason FROM frames WHERE frame_id = ?",
                   child_frame) == ("closed", "completed")
        screen = tmux(tmux_socket, "capture-pane", "-p", "-t", parent_pane)
        assert screen.count("> Call transition_claim() and follow") == 1, screen
    finally:
        parent.close()
        if child is not None:
            child.close()
