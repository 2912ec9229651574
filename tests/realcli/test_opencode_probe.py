"""OpenCode 1.18.33, the real CLI, in a private tmux pane against the loopback stand-in.

Issue 41's first facts, checked on the real binary: a per-launch plugin (given only
through ``OPENCODE_CONFIG_CONTENT``, nothing written into the person's config) receives
OpenCode's own events for each state Switchboard shows -- working (``session.status``
busy), needs input (``permission.asked`` while the TUI shows "Permission required"),
ready (``session.idle``) -- and a session resumed by its exact id with ``--session``
carries on in the same session.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.realcli.install import RealCliUnavailable, ensure_opencode
from tests.realcli.opencode_journey import run_journey
from tests.realcli.opencode_standin import OCTOOL_COMMAND, OpencodeStandin


@pytest.fixture(scope="module")
def opencode_binary() -> Path:
    try:
        return ensure_opencode()
    except RealCliUnavailable as exc:  # the tier fails, never skips
        pytest.fail(f"real-CLI tier cannot run: {exc}", pytrace=False)


def _of(lines: list[dict], name: str) -> list[dict]:
    return [line["payload"] for line in lines if line["name"] == name]


def test_plugin_events_working_needs_input_ready_and_resume_by_id(
        opencode_binary: Path, tmp_path: Path, tmux_socket: Path) -> None:
    with OpencodeStandin() as api:
        first, second, ident = run_journey(opencode_binary, api, tmp_path, tmux_socket,
                                           tmux_socket.with_name("tmux-resume.sock"))
        requests = api.journal.snapshot()
    assert ident.startswith("ses_")
    # The plugin was loaded from the launch's own config, in the project folder.
    inits = _of(first, "plugin.init")
    assert len(inits) == 1 and inits[0]["directory"] == str(tmp_path / "project")
    # working: the session goes busy on the typed prompt, the prompt arrives as chat.message.
    assert {p["properties"]["status"]["type"] for p in _of(first, "session.status")} \
        == {"busy", "idle"}
    prompts = [part["text"] for hook in _of(first, "chat.message")
               for part in hook["output"]["parts"] if part.get("type") == "text"]
    assert prompts == ["hello OpenCode", "OCTOOL please"]
    # needs input: the permission request names the session, the tool and the command.
    asked = _of(first, "permission.asked")
    assert len(asked) == 1
    props = asked[0]["properties"]
    assert props["sessionID"] == ident and props["permission"] == "bash"
    assert props["metadata"]["command"] == OCTOOL_COMMAND
    replied = _of(first, "permission.replied")
    assert [(r["properties"]["requestID"], r["properties"]["reply"]) for r in replied] \
        == [(props["id"], "once")]
    ran = _of(first, "tool.execute.after")
    assert [(h["input"]["tool"], h["input"]["args"]["command"]) for h in ran] \
        == [("bash", OCTOOL_COMMAND)]
    # ready: one session.idle per finished turn, for this session.
    assert [p["properties"]["sessionID"] for p in _of(first, "session.idle")] == [ident, ident]
    # resume by the exact id: no new session, the prompt lands in the same one.
    assert _of(second, "session.created") == []
    assert [h["input"]["sessionID"] for h in _of(second, "chat.message")] == [ident]
    assert [p["properties"]["sessionID"] for p in _of(second, "session.idle")] == [ident]
    # Every request the CLI made went to the stand-in and carried the launch's key.
    assert requests and all(r.headers.get("x-api-key") == api.api_key for r in requests
                            if r.method == "POST")
