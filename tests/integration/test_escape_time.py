"""Escape then a key, typed through a real tmux client, reaches the pane as two keys
(issue 40 item 5).

tmux holds an Escape for ``escape-time`` (500 ms by default in tmux < 3.5) to tell
it from the start of a sequence: Escape then ``j`` within that time reached the
navigator as Alt+j and the Escape was lost. Switchboard's own server (the home's
socket) gets a 10 ms one; a person's own server keeps whatever they set. What is
left is Textual's own wait (``ESCDELAY``, 100 ms), so the navigator is shown a
key 150 ms after the Escape (inside tmux's old 500 ms, past Textual's 100 ms).

Each test attaches a real client in a pseudo-terminal and types into it, as a
person's terminal does.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from core.config.config import TmuxConfig
from core.config.home import Home
from core.config.registry import init_registry
from core.engine.engine import Engine
from core.engine.open import open_engine
from tests.factories import project_config
from tests.integration.test_terminal_sizes import Terminal
from tests.waiting import retry_until

pytestmark = pytest.mark.tmux

RAW_RECORDER = """
import os, sys, tty
tty.setraw(0)
with open(sys.argv[1], "a") as out:
    out.write("ready\\n")
while True:
    data = os.read(0, 64)
    with open(sys.argv[1], "a") as out:
        out.write(data.hex() + "\\n")
"""

KEY_RECORDER = """
import sys
from textual.app import App

class Keys(App):
    def on_mount(self) -> None:
        with open(sys.argv[1], "a") as out:
            out.write("ready\\n")

    def on_key(self, event) -> None:
        with open(sys.argv[1], "a") as out:
            out.write(event.key + "\\n")

Keys().run()
"""


def tmux(socket: Path, *args: str) -> str:
    return subprocess.run(["tmux", "-S", str(socket), *args], check=True, capture_output=True,
                          text=True, timeout=30).stdout.strip()


def _engine(home_root: Path, socket_path: str | None) -> Engine:
    home = Home(root=home_root, config_path=home_root / "config.toml")
    template = replace(project_config(home_root / "src"), generation_id="",
                       tmux=TmuxConfig(socket_path=socket_path))
    init_registry(home, template=template)
    return open_engine(home, with_stage=True)


@pytest.fixture
def own_server(sb_home: Path) -> Iterator[Path]:
    """The server Switchboard starts on its home's socket (no socket configured)."""
    engine = _engine(sb_home, None)
    socket = Path(engine.require_stage().socket_path)
    assert socket == sb_home / "tmux.sock"
    try:
        engine.require_stage().ensure_server()
        yield socket
    finally:
        engine.conn.close()
        subprocess.run(["tmux", "-S", str(socket), "kill-server"], capture_output=True)


def _typed(socket: Path, script: str, tmp_path: Path, name: str, gap: float) -> list[str]:
    """Escape, then `j` ``gap`` seconds later, typed into a client showing ``script``'s
    pane; the lines the script recorded after it was ready."""
    record = tmp_path / f"{name}.log"
    source = tmp_path / f"{name}.py"
    source.write_text(script, encoding="utf-8")
    tmux(socket, "new-session", "-d", "-s", name, "-x", "80", "-y", "24",
         sys.executable, str(source), str(record))
    terminal = Terminal(socket, name, 80, 24)
    try:
        assert retry_until(lambda: record.exists() and "ready" in record.read_text(), 30)
        time.sleep(0.5)  # the client's own start-up queries are answered by now
        terminal.type(b"\x1b")
        time.sleep(gap)
        terminal.type(b"j")
        assert retry_until(lambda: record.read_text().count("\n") >= 2, 10)
        time.sleep(0.7)  # anything tmux or the app still held would have come by now
        return record.read_text().splitlines()[1:]
    finally:
        terminal.close()


def test_switchboards_own_server_passes_escape_then_a_key_as_two_keys(
        own_server: Path, tmp_path: Path) -> None:
    assert int(tmux(own_server, "show-options", "-s", "-v", "escape-time")) <= 20
    # tmux passes the Escape on alone, then the j typed 50 ms later
    assert _typed(own_server, RAW_RECORDER, tmp_path, "raw", 0.05) == ["1b", "6a"]
    # and a Textual app (the navigator is one) gets Escape, then j: not Alt+j
    assert _typed(own_server, KEY_RECORDER, tmp_path, "keys", 0.15) == ["escape", "j"]


def test_a_persons_own_server_keeps_its_escape_time(
        sb_home: Path, tmux_server: object, tmux_socket: Path, tmp_path: Path) -> None:
    tmux(tmux_socket, "set-option", "-s", "escape-time", "500")  # as their tmux.conf says
    engine = _engine(sb_home, str(tmux_socket))
    try:
        engine.require_stage().ensure_server()  # the holding session is made on it
    finally:
        engine.conn.close()
    assert tmux(tmux_socket, "has-session", "-t", "=" + engine.config.tmux.holding_session) == ""
    assert tmux(tmux_socket, "show-options", "-s", "-v", "escape-time") == "500"
    # what the person lives with there: the same keys arrive as one Alt+j sequence
    assert _typed(tmux_socket, RAW_RECORDER, tmp_path, "raw", 0.05) == ["1b6a"]
    assert _typed(tmux_socket, KEY_RECORDER, tmp_path, "keys", 0.15) == ["alt+j"]
