"""End to end on a real private tmux server with fake providers.

workspace start -> push (after the parent's Stop) -> child claims its brief ->
complete-return -> parent gets one live control line and claims the handoff ->
child closed completed and its pane gone. Once with fake Claude agents (agent
tools as Bash commands), once with fake Codex agents, which reach the agent
tools only through the MCP server their launch's ``-c`` overrides configure,
started in Codex's cleared environment.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from core.context.requests import new_request_id
from core.model.enums import Provider
from tests.integration.journey_env import make_live_engine, one, tmux, type_line
from tests.waiting import retry_until


@pytest.mark.parametrize("provider", [Provider.CLAUDE, Provider.CODEX])
def test_push_claim_complete_return(tmp_path: Path, tmux_socket: Path, monkeypatch,
                                    provider: Provider) -> None:
    monkeypatch.setenv("SWITCHBOARD_HOME", str(tmp_path))
    engine = make_live_engine(tmp_path, tmux_socket)
    route = engine.project_enter(new_request_id(), "alpha")
    started = engine.frame_start(new_request_id(), route.frame_id, provider)
    main = one(engine, "SELECT main_pane_id FROM user_views")[0]
    assert retry_until(lambda: ">" in tmux(tmux_socket, "capture-pane", "-p", "-t", main)
                       .split(), 15.0), \
        tmux(tmux_socket, "list-panes", "-a", "-F", "#{pane_id} #{@sb_role} #{pane_dead}") + \
        tmux(tmux_socket, "capture-pane", "-p", "-t", main)
    assert retry_until(lambda: one(engine, "SELECT state FROM launch_intents WHERE launch_id = ?",
                                    started.launch_id)[0] == "bound", 15.0)

    type_line(tmux_socket, main, "/push Fix the bug :: Make test_foo pass")
    assert retry_until(lambda: one(engine, "SELECT state FROM view_transitions"
                                            " WHERE kind = 'push'") == ("completed",), 20)
    child_pane = one(engine, "SELECT main_pane_id FROM user_views")[0]
    assert child_pane != main
    # parked parent is input-disabled; child is main
    panes = tmux(tmux_socket, "list-panes", "-a", "-F", "#{pane_id} #{pane_input_off}")
    assert f"{main} 1" in panes.splitlines()
    brief = one(engine, "SELECT first_claimed_at FROM transition_briefs")[0]
    assert brief is not None
    turn = one(engine, "SELECT transport, state, submission_count FROM control_turns"
                        " WHERE kind = 'claim_brief'")
    assert tuple(turn) == ("resume_initial", "settled", 1)
    screen = tmux(tmux_socket, "capture-pane", "-p", "-t", child_pane)
    assert screen.count("Call transition_claim() and follow") == 1
    assert one(engine, "SELECT provider FROM provider_sessions WHERE session_key ="
                        " (SELECT current_session_key FROM frames WHERE title = 'Fix the bug')"
                ) == (provider.value,)
    tool_line = "● switchboard.transition_claim({})" if provider is Provider.CODEX \
        else "● Bash("
    assert tool_line in screen, screen

    type_line(tmux_socket, child_pane, "/complete Fixed foo :: review and merge")
    assert retry_until(lambda: one(engine, "SELECT state FROM view_transitions"
                                            " WHERE kind = 'complete_return'") == ("completed",),
                       20)
    assert one(engine, "SELECT main_pane_id FROM user_views")[0] == main
    frames = dict(engine.conn.execute("SELECT title, lifecycle_state || ':' ||"
                                      " COALESCE(close_reason, '') FROM frames").fetchall())
    assert frames["Fix the bug"] == "closed:completed"
    turn = one(engine, "SELECT transport, state, submission_count FROM control_turns"
                        " WHERE kind = 'claim_handoff'")
    assert tuple(turn) == ("live_input", "settled", 1)
    parent_screen = tmux(tmux_socket, "capture-pane", "-p", "-t", main)
    assert parent_screen.count("> Call transition_claim() and follow") == 1
    assert retry_until(lambda: child_pane not in tmux(tmux_socket, "list-panes", "-a", "-F",
                                                      "#{pane_id}").split(), 15.0)
    assert one(engine, "SELECT first_claimed_at FROM completion_handoffs")[0] is not None

    # retrying the agent's complete call with the same words changes nothing
    count = one(engine, "SELECT COUNT(*) FROM view_transitions")[0]
    type_line(tmux_socket, main, "hello")
    # (a Codex session's key takes the thread id its first hook reported)
    assert retry_until(lambda: one(engine, "SELECT activity FROM provider_sessions WHERE"
                                            " session_key = (SELECT current_session_key FROM frames"
                                            " WHERE frame_id = ?)", route.frame_id)
                       == ("ready",), 15.0), (
        [tuple(r) for r in engine.conn.execute(
            "SELECT session_key, provider, activity, runtime_presence FROM provider_sessions")],
        tmux(tmux_socket, "capture-pane", "-p", "-t", main))
    assert one(engine, "SELECT COUNT(*) FROM view_transitions")[0] == count
    if provider is Provider.CLAUDE:
        # like the real CLI, each fake Claude started the launch's agent-tool server,
        # which said it had listed its tools: no prompt went out without them
        # (a session's run folder is its key with ":" as "_"; others hold shared state)
        runs = [d for d in (tmp_path / "run").iterdir() if d.is_dir() and "_claude_" in d.name]
        assert runs and all(list(d.glob("claude-mcp-ready-*")) for d in runs)
        assert not list((tmp_path / "run").glob("*/*.none"))
