"""Moving a task to the other provider (issue 26) with fake agents in real tmux panes.

A pushed task runs on fake Claude Code and claims its brief; ``frame switch-provider
--to codex`` stops it, writes the handover (the brief, the evidence so far) and starts
fake Codex in the same checkout with the claim line: the new agent claims the
handover, the earlier session stays in the frame's history with its evidence file.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.context.requests import new_request_id
from core.evidence.store import session_detail
from core.model.enums import Provider
from core.providers.opencode_events import is_session_id
from core.runtime.handover import handover_path, read_handover
from navigator.cli import main
from tests.integration.journey_env import make_live_engine, one
from tests.waiting import retry_until


@pytest.fixture
def engine(tmp_path: Path, tmux_socket: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("SWITCHBOARD_HOME", str(tmp_path))
    for name in ("TMUX", "TMUX_PANE", "SWITCHBOARD_CAPABILITY", "SWITCHBOARD_GENERATION"):
        monkeypatch.delenv(name, raising=False)
    engine = make_live_engine(tmp_path, tmux_socket)
    yield engine
    engine.conn.close()


def test_switch_provider_carries_the_task_on(engine, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    route = engine.project_enter(new_request_id(), "alpha")
    engine.frame_start(new_request_id(), route.frame_id, Provider.CLAUDE)
    pushed = engine.frame_push(new_request_id(), route.frame_id, "Fix the bug",
                               "Make test_foo pass", provider=Provider.CLAUDE)
    child = pushed.target_frame_id
    assert retry_until(lambda: one(engine, "SELECT first_claimed_at FROM transition_briefs"
                                   )[0] is not None, 30)
    old_key = one(engine, "SELECT current_session_key FROM frames WHERE frame_id = ?",
                  child)[0]

    # without a terminal the stop must be confirmed: refused, nothing changed
    assert main(["frame", "switch-provider", child, "--to", "codex"]) == 2
    assert "pass --yes to confirm" in capsys.readouterr().err
    assert not handover_path(engine.require_home(), child).exists()
    assert main(["frame", "switch-provider", child, "--to", "claude", "--yes"]) == 2
    assert "already runs on claude" in capsys.readouterr().err

    assert main(["frame", "switch-provider", child, "--to", "codex", "--yes", "--json"]) == 0
    moved = json.loads(capsys.readouterr().out)
    assert (moved["from_provider"], moved["to_provider"], moved["stopped"]) == \
        ("claude", "codex", True)
    handover = read_handover(engine.require_home(), child)
    assert handover is not None and "Make test_foo pass" in handover.brief
    assert "taking over the task “Fix the bug” from a claude agent" in handover.brief
    # the new agent (fake Codex) starts with the claim line and claims the handover
    marker = handover_path(engine.require_home(), child).with_suffix(".claimed")
    assert retry_until(marker.exists, 30)

    def sessions() -> list[tuple]:
        return [tuple(r) for r in engine.conn.execute(
            "SELECT s.provider, s.runtime_presence FROM frame_sessions fs"
            " JOIN provider_sessions s ON s.session_key = fs.session_key"
            " WHERE fs.frame_id = ? ORDER BY fs.rowid", (child,))]
    assert retry_until(lambda: sessions() == [("claude", "stopped"), ("codex", "live")], 30), \
        sessions()
    new_key = one(engine, "SELECT current_session_key FROM frames WHERE frame_id = ?",
                  child)[0]
    assert new_key != old_key and ":codex:" in new_key
    # the earlier session stays readable (its timeline and evidence)
    old = session_detail(engine.require_home(), old_key)
    assert old.recorded and old.provider == "claude"


def test_a_task_moves_claude_gemini_opencode_codex_and_each_agent_claims_its_handover(
        engine, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 41: switch-provider reaches Gemini CLI and OpenCode and leaves them (fake
    agents of each, launched as the adapters build them). At each hop the person reads one
    line naming both providers; the new agent claims the handover, which names the agent
    it takes over from; OpenCode's session is bound to its own ``ses_`` id once it claims;
    every earlier session stays in the frame's history, stopped."""
    route = engine.project_enter(new_request_id(), "alpha")
    engine.frame_start(new_request_id(), route.frame_id, Provider.CLAUDE)
    child = engine.frame_push(new_request_id(), route.frame_id, "Fix the bug",
                              "Make test_foo pass", provider=Provider.CLAUDE).target_frame_id
    assert retry_until(lambda: one(engine, "SELECT first_claimed_at FROM transition_briefs"
                                   )[0] is not None, 30)
    home = engine.require_home()
    marker = handover_path(home, child).with_suffix(".claimed")

    def sessions() -> list[tuple]:
        return [tuple(r) for r in engine.conn.execute(
            "SELECT s.provider, s.runtime_presence FROM frame_sessions fs"
            " JOIN provider_sessions s ON s.session_key = fs.session_key"
            " WHERE fs.frame_id = ? ORDER BY fs.rowid", (child,))]

    def current() -> str:
        return str(one(engine, "SELECT current_session_key FROM frames WHERE frame_id = ?",
                       child)[0])

    hops = [("claude", "gemini"), ("gemini", "opencode"), ("opencode", "codex")]
    for done, (old, new) in enumerate(hops, start=1):
        before = current()
        assert main(["frame", "switch-provider", child, "--to", new, "--yes"]) == 0
        said = capsys.readouterr().out
        assert f"“Fix the bug” moved from {old} to {new}: new session" in said, said
        assert f"the earlier one ({before}) stays in its history" in said
        handover = read_handover(home, child)
        assert handover is not None and (handover.from_provider, handover.to_provider) == \
            (old, new)
        assert f"taking over the task “Fix the bug” from a {old} agent" in handover.brief
        assert "Make test_foo pass" in handover.brief
        # the new agent starts with the claim line and claims the handover
        assert retry_until(marker.exists, 60), (new, sessions())
        expected = [*((p, "stopped") for p in ("claude", "gemini", "opencode")[:done]),
                    (new, "live")]
        assert retry_until(lambda want=expected: sessions() == want, 60), sessions()
        assert f":{new}:" in current() and current() != before
    # OpenCode chose its own id at its first prompt; the pending key was bound to it
    keys = [str(r[0]) for r in engine.conn.execute(
        "SELECT fs.session_key FROM frame_sessions fs WHERE fs.frame_id = ?"
        " ORDER BY fs.rowid", (child,))]
    opencode_id = keys[2].rsplit(":opencode:", 1)[1]
    assert is_session_id(opencode_id), keys
    # moving to where it already runs is refused by name, nothing changed
    assert main(["frame", "switch-provider", child, "--to", "codex", "--yes"]) == 2
    assert "already runs on codex" in capsys.readouterr().err
    assert len(sessions()) == 4
