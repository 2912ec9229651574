"""The read-only agent tools authenticate without the Engine (``authorized_reader``) and
refuse exactly what ``authorized`` refuses: no capability, a forged one, an older
generation, another pane's, a revoked one. Each answer is read through
``core.agent.mcp_server.call_tool`` as a ``tools/call`` process runs it.
"""

from __future__ import annotations

import json

import pytest

from core.agent import tools_context
from core.agent.mcp_server import call_tool
from core.config.capabilities import ENV_CAPABILITY, ENV_GENERATION, digest
from storage.connection import write_transaction
from tests.core.test_hook_handler import LiveSurface

READ_TOOLS = ("switchboard_current", "switchboard_context", "switchboard_history",
              "transition_status")




def _answer(name: str, env: dict[str, str]) -> tuple[bool, str]:
    def run(tool: str, _arguments: dict) -> dict:
        return tools_context._CALLS[tool](env=env)

    result = call_tool(name, {}, call=run)
    return result["isError"], result["content"][0]["text"]


def test_each_read_tool_answers_its_own_frame(live: LiveSurface) -> None:
    frame_id = live.engine.conn.execute(
        "SELECT frame_id FROM agent_capabilities WHERE capability_digest = ?",
        (digest(live.raw),)).fetchone()[0]
    for name in READ_TOOLS:
        failed, text = _answer(name, live.env())
        assert not failed, (name, text)
    current = json.loads(_answer("switchboard_current", live.env())[1])
    assert current["frame"]["frame_id"] == frame_id and current["project"] == "alpha"


@pytest.mark.parametrize(("change", "reason"), [
    ({ENV_CAPABILITY: None}, "no Switchboard capability"),
    ({ENV_CAPABILITY: "sbcap1_forged"}, "unknown capability"),
    ({ENV_GENERATION: "an-older-generation"}, "older Switchboard generation"),
])
def test_a_refused_caller_reads_nothing(live: LiveSurface, change: dict[str, str | None],
                                        reason: str) -> None:
    for name in READ_TOOLS:
        failed, text = _answer(name, live.env(**change))
        assert failed and text.startswith("unauthorized:") and reason in text, (name, text)


def test_another_panes_capability_and_a_revoked_one_are_refused(live: LiveSurface) -> None:
    conn = live.engine.conn
    pane = conn.execute("SELECT pane_id FROM agent_capabilities WHERE capability_digest = ?",
                        (digest(live.raw),)).fetchone()[0]
    assert pane, "the minted capability is bound to its pane"
    failed, text = _answer("switchboard_current", live.env(TMUX_PANE="%999"))
    assert failed and "bound to another pane" in text, text
    with write_transaction(conn):
        conn.execute("UPDATE agent_capabilities SET revoked_at = 1 WHERE capability_digest = ?",
                     (digest(live.raw),))
    failed, text = _answer("switchboard_current", live.env())
    assert failed and "revoked" in text, text
