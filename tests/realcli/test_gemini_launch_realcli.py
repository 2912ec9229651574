"""Gemini CLI 0.61.0 started by Switchboard itself: the engine's launch path, in a view's
main pane on a private tmux server, against the loopback Gemini API stand-in (issue 41).

``frame_start`` with provider gemini runs the adapter's plan through the launcher (the
per-launch home, the agent tools' HTTP endpoint and token, the hook command), so what is
checked here is the whole chain a person uses: the prompt comes up although the tmux
server was started from an environment that says CI (Gemini CLI's is-in-ci check would
turn its interactive mode off); a turn is recorded working then ready from the CLI's own
hooks under the exact session id chosen before exec; a stop and a start again resume
that session by its id (the model is sent the earlier prompt); the person's own
``~/.gemini/settings.json`` stays byte for byte what it was.
"""

from __future__ import annotations

import functools
import json
import os
import signal
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.context.requests import new_request_id
from core.engine.engine import Engine
from core.model.enums import Provider
from tests.integration.journey_env import one, tmux
from tests.realcli.gemini_standin import API_KEY, GeminiStandin
from tests.realcli.harness import (
    activity,
    main_pane,
    make_real_engine,
    screen,
    type_prompt,
    xdg_home,
)
from tests.realcli.install import RealCliUnavailable, ensure_gemini
from tests.waiting import retry_until

SLOW = 120.0  # the CLI (node) starts in seconds; the machine is shared
PROMPT_READY = "Type your message"


def _gemini() -> Path:
    try:
        return ensure_gemini()
    except RealCliUnavailable as exc:  # the tier fails, never skips
        raise AssertionError(f"real-CLI tier cannot run: {exc}") from None


def _groups(socket: Path) -> set[int]:
    """The process groups of every pane of the server (Gemini CLI's node does not always
    end with its tmux server: each is ended by its group at teardown)."""
    found = set()
    for pid in tmux(socket, "list-panes", "-a", "-F", "#{pane_pid}").split():
        try:
            found.add(os.getpgid(int(pid)))
        except (ProcessLookupError, ValueError):
            continue
    return found


def _end(groups: set[int]) -> None:
    for group in groups:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(group, sig)
            except ProcessLookupError:
                break
            if retry_until(functools.partial(_gone, group), 5.0, 0.1):
                break


def _gone(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.fixture
def person(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A person's home (the engine's HOME too, as when they run Switchboard): their own
    ~/.gemini picks the API key and trusts the project; state and config in XDG folders.
    The environment says CI, as a CI runner's does."""
    root = tmp_path / "person"
    for name in ("SWITCHBOARD_HOME", "SWITCHBOARD_CONFIG", "GEMINI_CLI_HOME", "TMUX",
                 "TMUX_PANE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(root))
    monkeypatch.setenv("XDG_STATE_HOME", str(root / ".local" / "state"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(root / ".config"))
    monkeypatch.setenv("CI", "true")
    monkeypatch.setenv("CI_PIPELINE_ID", "41")
    theirs = root / ".gemini"
    theirs.mkdir(parents=True)
    (theirs / "settings.json").write_text(
        json.dumps({"security": {"auth": {"selectedType": "gemini-api-key"}}}), encoding="utf-8")
    trusted = {str(root / "src" / name): "TRUST_FOLDER" for name in ("alpha", "beta")}
    (theirs / "trustedFolders.json").write_text(json.dumps(trusted), encoding="utf-8")
    yield root


def _session(engine: Engine, frame_id: str) -> tuple[str, str, str]:
    """(provider, provider session id, session key) of the frame's current session."""
    key = str(one(engine, "SELECT current_session_key FROM frames WHERE frame_id = ?",
                  frame_id)[0])
    row = one(engine, "SELECT provider FROM provider_sessions WHERE session_key = ?", key)
    return str(row[0]), key.rsplit(":", 1)[1], key


def test_switchboard_launches_gemini_in_the_view_and_resumes_it_by_id(
        person: Path, tmux_socket: Path) -> None:
    binary = _gemini()
    theirs = person / ".gemini" / "settings.json"
    before = theirs.read_bytes()
    groups: set[int] = set()
    with GeminiStandin() as api:
        command = ("env", f"GEMINI_API_KEY={API_KEY}", f"GOOGLE_GEMINI_BASE_URL={api.url}",
                   "TERM=xterm-256color", str(binary))
        engine = make_real_engine(person, tmux_socket, {Provider.GEMINI: command},
                                  home=xdg_home(person))
        try:
            route = engine.project_enter(new_request_id(), "alpha")
            frame = route.frame_id
            started = engine.frame_start(new_request_id(), frame, Provider.GEMINI)
            assert retry_until(lambda: one(engine, "SELECT state FROM launch_intents WHERE"
                                                   " launch_id = ?", started.launch_id)
                               == ("bound",), SLOW)
            provider, session_id, key = _session(engine, frame)
            assert provider == "gemini" and str(uuid.UUID(session_id)) == session_id
            main = main_pane(engine)
            groups |= _groups(tmux_socket)
            # interactive although the server's environment says CI
            assert retry_until(lambda: PROMPT_READY in screen(tmux_socket, main), SLOW), \
                screen(tmux_socket, main)

            type_prompt(tmux_socket, main, "hello there")
            assert retry_until(lambda: "STANDIN-OK" in screen(tmux_socket, main), SLOW), \
                screen(tmux_socket, main)
            assert retry_until(lambda: activity(engine, frame) == "ready", SLOW), \
                (activity(engine, frame), screen(tmux_socket, main))
            assert [t.headers.get("x-goog-api-key") for t in api.turns()] == [API_KEY]
            chats = list((person / ".gemini" / "tmp").rglob(f"session-*-{session_id[:8]}.jsonl"))
            assert chats, "the session is written into the person's own ~/.gemini/tmp"
            assert session_id in chats[0].read_text(encoding="utf-8").splitlines()[0]

            # stop, then start again: the same session, resumed by its id
            engine.frame_stop(new_request_id(), frame)
            assert retry_until(lambda: main not in tmux(tmux_socket, "list-panes", "-a",
                                                        "-F", "#{pane_id}").split(), SLOW)
            again = engine.frame_start(new_request_id(), frame)
            assert again.session_key == key
            assert one(engine, "SELECT action FROM launch_intents WHERE launch_id = ?",
                       again.launch_id) == ("resume",)
            resumed = main_pane(engine)
            groups |= _groups(tmux_socket)
            assert retry_until(lambda: PROMPT_READY in screen(tmux_socket, resumed), SLOW), \
                screen(tmux_socket, resumed)
            type_prompt(tmux_socket, resumed, "and again")
            assert retry_until(lambda: len(api.turns()) == 2, SLOW), \
                screen(tmux_socket, resumed)
            sent = json.dumps(api.turns()[-1].body)
            assert "hello there" in sent and "and again" in sent
            assert retry_until(lambda: activity(engine, frame) == "ready", SLOW), \
                (activity(engine, frame), screen(tmux_socket, resumed))
        finally:
            groups |= _groups(tmux_socket)
            engine.conn.close()
            tmux(tmux_socket, "kill-server")
            _end(groups)
    assert theirs.read_bytes() == before
