"""Real Codex (newest of the window): a subagent its model spawns is counted.

The stand-in answers ``SPAWNTEST`` with Codex's own ``spawn_agent`` tool, in the
namespace Codex offered it (``multi_agent_v1``; a call without it is answered
"unsupported call" and spawns nothing, which is what an earlier stand-in did, and why
the count once looked dead on Codex). Codex 0.171.0 then starts the subagent (its own
model request reaches the stand-in) and sends SubagentStart and SubagentStop to
Switchboard's hooks under the lead's session id: the session's evidence holds the
subagent's lifetime, running then completed, and the tree counts none once it ended.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from core.config.home import Home
from core.context.requests import new_request_id
from core.model.enums import Provider
from core.state.state_builder import build_navigator_state
from storage.session_db import open_session_db_readonly, session_db_path
from tests.integration.journey_env import one
from tests.realcli.harness_codex import (
    PROJECT,
    act_as_person,
    make_codex_engine,
    make_person,
    screen,
    switchboard_home,
    type_prompt,
)
from tests.realcli.install import RealCli, RealClis, newest
from tests.realcli.openai_standin import SPAWN_WORD, SUBAGENT_TASK, OpenAIStandin
from tests.waiting import fail_unless

pytestmark = [pytest.mark.tmux, pytest.mark.timeout(300)]
TURN_S = 60.0


def _evidence(home: Home, key: str, sql: str) -> list[str]:
    path = session_db_path(home.root, key)
    if not path.exists():
        return []
    conn = open_session_db_readonly(path)
    try:
        return [r[0] for r in conn.execute(sql)]
    finally:
        conn.close()


@pytest.mark.parametrize("codex_cli", [newest(Provider.CODEX)], indirect=True,
                         ids=lambda v: f"codex-{v}")
def test_a_codex_subagent_is_counted_from_its_hooks(
        codex_cli: RealCli, codex_clis: RealClis, tmp_path: Path, tmux_socket: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    with OpenAIStandin() as standin:
        person = make_person(tmp_path, codex_clis, standin.base_url)
        act_as_person(monkeypatch, tmp_path, person)
        engine = make_codex_engine(tmp_path, tmux_socket, codex_clis)
        home = switchboard_home(tmp_path)
        route = engine.project_enter(new_request_id(), PROJECT)
        engine.frame_start(new_request_id(), route.frame_id, Provider.CODEX)
        main = str(one(engine, "SELECT main_pane_id FROM user_views")[0])
        fail_unless(lambda: "Ask Codex to do anything" in screen(tmux_socket, main), TURN_S,
                    lambda: screen(tmux_socket, main))
        time.sleep(1.0)
        type_prompt(tmux_socket, main, "SPAWNTEST please")

        def key() -> str:
            return str(one(engine, "SELECT current_session_key FROM frames WHERE frame_id = ?",
                           route.frame_id)[0])

        def events() -> list[str]:
            return _evidence(home, key(), "SELECT source_id FROM events ORDER BY timestamp,"
                                          " rowid")
        def asked() -> int:  # the subagent's own model requests
            return sum(1 for r in standin.responses_requests()
                       if SUBAGENT_TASK in str(r.body) and SPAWN_WORD not in str(r.body))
        fail_unless(lambda: "SubagentStop" in events(), TURN_S,
                    lambda: f"{events()}\n{asked()}\n{screen(tmux_socket, main)}")
        assert asked() >= 1
        assert events().count("SubagentStart") == 1, events()
        rows = _evidence(home, key(), "SELECT status FROM agents WHERE type = 'subagent'")
        assert rows == ["completed"], rows
        frame = next(f for p in build_navigator_state(engine).projects for f in p.frames
                     if f.frame_id == route.frame_id)
        assert frame.current_session is not None and frame.current_session.subagents is None
