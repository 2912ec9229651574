"""A provider whose version cannot be read fails closed: nothing runs, nothing guesses."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import pytest

from core.config.config import ProviderConfig, TmuxConfig
from core.config.home import Home
from core.config.registry import init_registry
from core.context.requests import new_request_id
from core.engine.commands import tasks
from core.engine.open import open_engine
from core.model.enums import Provider
from core.model.errors import ProviderError
from tests.factories import project_config
from tests.integration.journey_env import tmux


@pytest.fixture
def broken(tmp_path: Path, tmux_socket: Path, monkeypatch: pytest.MonkeyPatch):
    """Providers that answer --version with garbage (an unsupported command shape)."""
    monkeypatch.setenv("SWITCHBOARD_HOME", str(tmp_path))
    script = tmp_path / "not-claude"
    script.write_text(f"#!{sys.executable}\nprint('this is not a version line')\n")
    script.chmod(0o755)
    home = Home(root=tmp_path, config_path=tmp_path / "config.toml")
    template = replace(project_config(tmp_path / "src"),
                       providers={p: ProviderConfig(command=(str(script),)) for p in Provider},
                       tmux=TmuxConfig(socket_path=str(tmux_socket)))
    init_registry(home, template=template)
    return open_engine(home, with_stage=True)


def _provider_panes(socket: Path) -> list[str]:
    return [line for line in tmux(socket, "list-panes", "-a", "-F", "#{@sb_role}").split()
            if line == "provider"]


def test_start_fails_closed_and_records_why(broken, tmux_socket: Path) -> None:
    route = broken.project_enter(new_request_id(), "alpha")
    with pytest.raises(ProviderError) as refused:
        broken.frame_start(new_request_id(), route.frame_id)
    assert refused.value.code.startswith("provider_version")
    state, failure = broken.conn.execute(
        "SELECT state, failure FROM launch_intents").fetchone()
    assert state == "failed" and failure.startswith(refused.value.code)
    assert _provider_panes(tmux_socket) == []
    assert broken.conn.execute("SELECT COUNT(*) FROM agent_capabilities").fetchone()[0] == 0


def test_push_whose_child_cannot_launch_rolls_back_with_a_recovery(
        broken, tmux_socket: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    route = broken.project_enter(new_request_id(), "alpha")
    # The push itself is refused first, before anything is written (issue 31.6)...
    with pytest.raises(ProviderError, match="no task was created"):
        broken.frame_push(new_request_id(), route.frame_id, "Child", "brief")
    assert broken.conn.execute("SELECT COUNT(*) FROM frames").fetchone()[0] == 1
    assert broken.conn.execute("SELECT COUNT(*) FROM recoveries").fetchone()[0] == 0
    # ... and a provider that breaks between that check and the launch still rolls back.
    monkeypatch.setattr(tasks, "_require_child_provider", lambda *args: None)
    push = broken.frame_push(new_request_id(), route.frame_id, "Child", "brief")
    assert push.state == "failed"
    failure = broken.conn.execute("SELECT failure FROM view_transitions").fetchone()[0]
    assert "nothing launched" in failure
    recoveries = broken.conn.execute(
        "SELECT kind, state FROM recoveries").fetchall()
    assert [tuple(r) for r in recoveries] and all(r[1] == "open" for r in recoveries)
    view = broken.conn.execute("SELECT active_frame_id FROM user_views").fetchone()[0]
    assert view == route.frame_id  # the registry keeps the last committed placement
    assert _provider_panes(tmux_socket) == []
    turn = broken.conn.execute("SELECT state, submission_count FROM control_turns").fetchone()
    assert turn["submission_count"] == 0
