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
