"""y: the person answers an agent's prompt yes or no without reaching its pane (the
navigator in a browser, a remote host). A real fake agent on a private tmux server
shows a choice list after a turn (``/notice``); the engine reads the screen, refuses
while the agent is not waiting, and presses the keys of the person's choice."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.context.requests import new_request_id
from core.model.errors import Conflict
from core.model.session_enums import Activity, ActivityReason
from core.runtime.answer import answer_prompt, choice_list
from storage.connection import write_transaction
from storage.operations import sessions as sessions_ops
from tests.integration.journey_env import make_live_engine, tmux, type_line
from tests.waiting import retry_until


def test_a_choice_list_is_read_from_the_screen() -> None:
    claude = ["─" * 40, " Bash command", "   rm -rf build", " Do you want to proceed?",
              " ❯ 1. Yes", "   2. Yes, and don't ask again for rm commands",
              "   3. No, and tell Claude what to do differently (esc)", ""]
    assert choice_list(claude) == (["Yes", "Yes, and don't ask again for rm commands",
                                    "No, and tell Claude what to do differently (esc)"], 0)
    codex = ["  Allow command?", "  › 1. Yes, proceed", "    2. No, and tell Codex (esc)"]
    assert choice_list(codex) == (["Yes, proceed", "No, and tell Codex (esc)"], 0)
    prompt = ["─" * 40, "❯ type here", "─" * 40]  # the prompt box is not indented
    assert choice_list(prompt) is None


async def test_y_answers_the_selected_agents_prompt(tmp_path: Path, tmux_socket: Path,
                                                    monkeypatch) -> None:
    from core.apps.client import EngineClient
    from core.config.home import Home
    from navigator.app import SwitchboardApp
    from navigator.widgets.frames import frame_key
    from tests.navigator.helpers import notices, settle, tree, wait_until

    monkeypatch.setenv("SWITCHBOARD_HOME", str(tmp_path))
    monkeypatch.setenv("SWITCHBOARD_CONFIG", str(tmp_path / "config.toml"))
    engine = make_live_engine(tmp_path, tmux_socket)
    route = engine.project_enter(new_request_id(), "alpha")
    started = engine.frame_start(new_request_id(), route.frame_id)
    assert retry_until(lambda: engine.conn.execute(
        "SELECT state FROM launch_intents WHERE launch_id = ?",
        (started.launch_id,)).fetchone()[0] == "bound", 30)
    main = engine.conn.execute("SELECT main_pane_id FROM user_views").fetchone()[0]
    type_line(tmux_socket, main, "/notice Allow the build?")
    type_line(tmux_socket, main, "hello")

    def screen() -> str:
        return tmux(tmux_socket, "capture-pane", "-p", "-t", main)
    assert retry_until(lambda: "Allow the build?" in screen() and "Enter to select"
                       in screen(), 30), screen()
    assert retry_until(lambda: engine.conn.execute(
        "SELECT activity FROM provider_sessions").fetchone()[0] == "ready", 30)
    # not waiting (its hooks said ready): refused, nothing typed
    with pytest.raises(Conflict, match="not waiting for an answer"):
        answer_prompt(engine, route.frame_id, True)
    assert "Enter to select" in screen()
    # the CLI's permission hook says it asks (as Claude Code's Notification does)
    key = engine.conn.execute("SELECT session_key FROM provider_sessions").fetchone()[0]
    with write_transaction(engine.conn) as conn:
        sessions_ops.record_activity(conn, key, activity=Activity.NEEDS_INPUT,
                                     reason=ActivityReason.PERMISSION, runtime_presence="live",
                                     turn_id=None, provider_version=None, now=engine.now())
    engine.conn.close()  # one registry connection in this process (see test_remote_actions)

    client = EngineClient.open(Home(root=tmp_path, config_path=tmp_path / "config.toml"))
    app = SwitchboardApp(client, poll_interval=0.1)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: frame_key(route.frame_id) in tree(app).frame_nodes()
                         and tree(app).frame_nodes()[frame_key(route.frame_id)].data.badge
                         == "needs_input", 15)
        tree(app).focus()
        tree(app).select_key(frame_key(route.frame_id))
        await pilot.press("y")  # the pane is read first: Yes and No only on a choice list
        await wait_until(pilot, lambda: type(app.screen).__name__ == "AnswerScreen", 15)
        await pilot.press("n")
        await settle(pilot)
        await wait_until(pilot, lambda: any("Answered no" in m for _, m in notices(app)), 15)
        assert not [m for s, m in notices(app) if s == "error"], notices(app)
    client.shutdown()
    # its second option, reached with the arrow and Enter as the person would
    assert retry_until(lambda: "✓ No, keep manual mode" in screen(), 15), screen()
