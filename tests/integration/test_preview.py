"""The preview of a parked agent: the last lines of its real pane, read in one tmux
process that also checks the server is the recorded one."""

from __future__ import annotations

from pathlib import Path

from core.context.requests import new_request_id
from core.runtime.preview import preview_lines
from tests.integration.journey_env import make_live_engine, tmux, type_line
from tests.waiting import retry_until


def test_a_parked_agents_pane_is_previewed_and_a_restarted_server_is_not(
        tmp_path: Path, tmux_socket: Path, monkeypatch) -> None:
    monkeypatch.setenv("SWITCHBOARD_HOME", str(tmp_path))
    engine = make_live_engine(tmp_path, tmux_socket)
    route = engine.project_enter(new_request_id(), "alpha")
    started = engine.frame_start(new_request_id(), route.frame_id)
    assert retry_until(lambda: engine.conn.execute(
        "SELECT state FROM launch_intents WHERE launch_id = ?",
        (started.launch_id,)).fetchone()[0] == "bound", 30)
    main = engine.conn.execute("SELECT main_pane_id FROM user_views").fetchone()[0]
    type_line(tmux_socket, main, "remember the preview marker")
    assert retry_until(lambda: engine.conn.execute(
        "SELECT activity FROM provider_sessions").fetchone()[0] == "ready", 30)
    engine.frame_push(new_request_id(), route.frame_id, "Child", "Do the child work.")
    assert retry_until(lambda: engine.conn.execute(
        "SELECT state FROM view_transitions WHERE kind = 'push'").fetchone()[0]
        == "completed", 30)

    before = engine.stage.invocations
    lines = preview_lines(engine, route.frame_id)
    assert engine.stage.invocations - before == 1  # identity and capture in one process
    assert lines is not None and any("remember the preview marker" in line for line in lines)
    assert len(lines) <= 12

    # a server that restarted may reuse pane ids: its panes are never shown as ours
    tmux(tmux_socket, "kill-server")
    tmux(tmux_socket, "-f", "/dev/null", "new-session", "-d", "-s", "other")
    assert preview_lines(engine, route.frame_id) is None
