"""Commands that type into or read panes use the views' server, never ``$TMUX`` (issue 31.1).

The person runs ``switchboard message send`` and ``member capture`` from a pane
of their own tmux server while the views live on a private one. Pane ids are
per server: the person's server has a ``%N`` too, an unrelated pane. The line
must reach the agent on the views' server (from the config, checked against the
server process the registry recorded), and nothing may be typed anywhere else.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.broker.delivery import DeliveryFailed, PaneServer, PaneTarget, TmuxTyper
from core.context.requests import new_request_id
from core.model.enums import Provider
from tests.integration.journey_env import make_live_engine, one, tmux, type_line
from tests.integration.transitions_env import screen
from tests.waiting import retry_until


@pytest.fixture
def persons_tmux() -> Iterator[Path]:
    """The person's own tmux server: panes running ``cat``, which shows what is typed."""
    folder = Path(tempfile.mkdtemp(prefix="sbperson-", dir="/tmp"))
    socket = folder / "own.sock"
    env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}
    subprocess.run(["tmux", "-S", str(socket), "-f", "/dev/null", "new-session", "-d",
                    "-s", "mine", "-x", "80", "-y", "24", "cat"], check=True, env=env)
    yield socket
    subprocess.run(["tmux", "-S", str(socket), "kill-server"], capture_output=True)
    shutil.rmtree(folder, ignore_errors=True)


def _cover_pane_id(socket: Path, pane: str) -> list[str]:
    """Open ``cat`` windows on the person's server until ``pane`` names one there too."""
    while pane not in (ids := tmux(socket, "list-panes", "-a", "-F", "#{pane_id}").split()):
        tmux(socket, "new-window", "-d", "cat")
    return ids


def _inside_persons_tmux(home: Path, socket: Path) -> dict[str, str]:
    """The environment of a shell in the person's tmux: ``$TMUX`` names *their* server."""
    pid = tmux(socket, "display-message", "-p", "#{pid}").strip()
    env = {k: v for k, v in os.environ.items() if k != "SWITCHBOARD_TMUX_SOCKET"}
    env.update(SWITCHBOARD_HOME=str(home), SWITCHBOARD_CONFIG=str(home / "config.toml"),
               TMUX=f"{socket},{pid},0", TMUX_PANE="%0")
    return env


def _sb(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "navigator.cli", *args], env=env,
                          capture_output=True, text=True, timeout=60)


def test_message_send_and_capture_from_the_persons_tmux_reach_the_views_server(
        tmp_path: Path, tmux_socket: Path, persons_tmux: Path, monkeypatch) -> None:
    monkeypatch.setenv("SWITCHBOARD_HOME", str(tmp_path))
    engine = make_live_engine(tmp_path, tmux_socket)  # the config names the views' server
    route = engine.project_enter(new_request_id(), "alpha")
    engine.frame_start(new_request_id(), route.frame_id, Provider.CLAUDE)
    agent = one(engine, "SELECT main_pane_id FROM user_views")[0]
    project, title = one(engine, "SELECT project_id, title FROM frames WHERE frame_id = ?",
                         route.frame_id)
    type_line(tmux_socket, agent, "hello")  # a turn and its Stop: the agent is ready
    assert retry_until(lambda: one(engine, "SELECT activity FROM provider_sessions") ==
                       ("ready",), 15.0)
    own_panes = _cover_pane_id(persons_tmux, agent)
    env = _inside_persons_tmux(tmp_path, persons_tmux)

    sent = _sb(env, "message", "send", "--fleet", f"project:{project}", "--from", "person",
               "--to", title, "from my own tmux")
    assert sent.returncode == 0, sent.stderr
    assert "(notified)" in sent.stdout, sent.stdout + sent.stderr
    assert retry_until(lambda: "message 1: from my own tmux" in screen(tmux_socket, agent),
                       30), screen(tmux_socket, agent)
    for pane in own_panes:  # nothing was typed into the person's own panes
        assert "[switchboard]" not in screen(persons_tmux, pane)

    captured = _sb(env, "member", "capture", title, "--lines", "40")
    assert captured.returncode == 0, captured.stderr
    assert "message 1: from my own tmux" in captured.stdout
    pinged = _sb(env, "member", "ping", title)
    assert pinged.returncode == 0 and "alive" in pinged.stdout, pinged.stdout + pinged.stderr


def test_a_restarted_views_server_is_not_typed_into(tmux_socket: Path, tmp_path: Path) -> None:
    """Same socket, same pane id, another server process: the recorded identity refuses."""
    env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}
    subprocess.run(["tmux", "-S", str(tmux_socket), "-f", "/dev/null", "new-session", "-d",
                    "-s", "s", "cat"], check=True, env=env)
    pid, start = tmux(tmux_socket, "display-message", "-p", "#{pid} #{start_time}").split()
    pane = tmux(tmux_socket, "display-message", "-p", "#{pane_id}").strip()
    recorded = PaneServer(str(tmux_socket), int(pid) + 1, int(start))  # an earlier server
    typer = TmuxTyper(tmux_socket)
    with pytest.raises(DeliveryFailed, match="restarted"):
        typer.type_line(PaneTarget("tmux", "s", "@0", pane), "[switchboard] hello", recorded)
    with pytest.raises(DeliveryFailed, match="not on"):
        TmuxTyper(tmp_path / "other.sock").type_line(
            PaneTarget("tmux", "s", "@0", pane), "[switchboard] hello",
            PaneServer(str(tmux_socket), int(pid), int(start)))
    assert "[switchboard]" not in screen(tmux_socket, pane)
    typer.type_line(PaneTarget("tmux", "s", "@0", pane), "[switchboard] hello",
                    PaneServer(str(tmux_socket), int(pid), int(start)))
    assert retry_until(lambda: "[switchboard] hello" in screen(tmux_socket, pane), 10)
