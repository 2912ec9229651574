"""The OpenCode journey the probe test and the fixture recorder share.

A prompt answered (working -> ready), a bash command that asks the person
(needs input: ``permission.asked``), allowed once with Enter, its tool run and the
turn's end; then the TUI is stopped and started again with ``--session <id>``, and
a prompt there lands in the same session (resume by the exact id).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.realcli.opencode_harness import TURN_S, OpencodeTui, start_tui, wait_for
from tests.realcli.opencode_standin import OpencodeStandin


def _count(tui: OpencodeTui, name: str) -> int:
    return tui.names().count(name)


def session_id(tui: OpencodeTui) -> str:
    created = [item for item in tui.recorded() if item["name"] == "session.created"]
    assert created, f"no session.created among {sorted(set(tui.names()))}"
    return str(created[0]["payload"]["properties"]["sessionID"])


def run_journey(binary: Path, api: OpencodeStandin, root: Path, socket: Path,
                resume_socket: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]], str]:
    """Both launches' recorded lines and the session id."""
    tui = start_tui(binary, api, root, socket, "first")
    tui.type_line("hello OpenCode")
    wait_for("the stand-in's answer on screen", lambda: "STANDIN-OK: hello OpenCode"
             in tui.screen(), TURN_S, tui.screen)
    wait_for("session.idle after the first turn", lambda: _count(tui, "session.idle") >= 1,
             TURN_S, tui.screen)
    tui.type_line("OCTOOL please")
    wait_for("the permission prompt on screen", lambda: "Permission required" in tui.screen(),
             TURN_S, tui.screen)
    wait_for("permission.asked", lambda: _count(tui, "permission.asked") >= 1, TURN_S,
             tui.screen)
    tui.press("Enter")  # "Allow once" is the selected choice
    wait_for("the tool's marker file", lambda: (tui.project / "opencode-tooltest.txt").exists(),
             TURN_S, tui.screen)
    wait_for("session.idle after the tool turn", lambda: _count(tui, "session.idle") >= 2,
             TURN_S, tui.screen)
    ident = session_id(tui)
    first = tui.recorded()
    tui.tmux("kill-server")
    again = start_tui(binary, api, root, resume_socket, "resumed", ("--session", ident))
    wait_for("the resumed conversation on screen", lambda: "STANDIN-OK: hello OpenCode"
             in again.screen(), TURN_S, again.screen)
    again.type_line("hello again")
    wait_for("the answer in the resumed session", lambda: "STANDIN-OK: hello again"
             in again.screen(), TURN_S, again.screen)
    wait_for("session.idle in the resumed session",
             lambda: _count(again, "session.idle") >= 1, TURN_S, again.screen)
    second = again.recorded()
    again.tmux("kill-server")
    return first, second, ident
