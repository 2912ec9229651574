"""Entering another project from a view's navigator takes the person's tmux client there.

The navigator pane serves one view; the person's client shows that view's
window. Entering project beta (or focusing a frame shown in beta's view) must
make beta's window the current one of the view session, through the engine's
stage (one identity-guarded tmux command), not leave the client where it was.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from core.apps.client import EngineClient
from core.config.home import Home
from core.context.requests import new_request_id
from core.model.errors import SwitchboardError
from navigator.app import SwitchboardApp
from tests.integration.journey_env import make_live_engine, tmux
from tests.navigator.helpers import select_project, settle
from tests.waiting import retry_until

pytestmark = pytest.mark.tmux


def _current_window(socket: Path, session: str) -> str:
    return tmux(socket, "display-message", "-p", "-t", f"={session}:", "#{window_id}").strip()


def _views(engine) -> dict[str, dict]:  # noqa: ANN001 - core.engine.engine.Engine
    return {row["name"]: dict(row) for row in engine.conn.execute(
        "SELECT p.name, v.* FROM user_views v JOIN projects p USING (project_id)")}


def test_client_show_view_switches_the_view_session(tmp_path: Path, tmux_socket: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SWITCHBOARD_HOME", str(tmp_path))
    engine = make_live_engine(tmp_path, tmux_socket)
    engine.project_enter(new_request_id(), "alpha")
    engine.project_enter(new_request_id(), "beta")
    views = _views(engine)
    session = engine.config.tmux.view_session
    client = EngineClient(engine=engine, home=Home(root=tmp_path,
                                                   config_path=tmp_path / "config.toml"))
    client.show_view(views["alpha"]["view_id"])
    assert _current_window(tmux_socket, session) == views["alpha"]["tmux_window_id"]
    client.show_view(views["beta"]["view_id"])
    assert _current_window(tmux_socket, session) == views["beta"]["tmux_window_id"]
    engine.conn.execute("UPDATE user_views SET main_pane_id = ? WHERE view_id = ?",
                        (views["beta"]["navigator_pane_id"], views["alpha"]["view_id"]))
    with pytest.raises(SwitchboardError, match="not in view"):
        client.show_view(views["alpha"]["view_id"])  # a locator of another view: refused
    assert _current_window(tmux_socket, session) == views["beta"]["tmux_window_id"]


async def test_enter_on_another_project_in_a_bound_navigator_moves_the_client(
        tmp_path: Path, tmux_socket: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SWITCHBOARD_HOME", str(tmp_path))
    engine = make_live_engine(tmp_path, tmux_socket)
    alpha = engine.project_enter(new_request_id(), "alpha")
    session = engine.config.tmux.view_session
    client = EngineClient(engine=engine, home=Home(root=tmp_path,
                                                   config_path=tmp_path / "config.toml"))
    app = SwitchboardApp(client, view_id=alpha.view_id, poll_interval=3600)
    async with app.run_test(size=(40, 40)) as pilot:
        await settle(pilot)
        beta_id = next(p.project_id for p in engine.config.projects if p.name == "beta")
        await select_project(pilot, beta_id)
        await pilot.press("enter")
        await settle(pilot)
        views = _views(engine)
        assert "beta" in views, [n.message for n in app._notifications]
        assert retry_until(lambda: _current_window(tmux_socket, session)
                           == views["beta"]["tmux_window_id"], 5)
