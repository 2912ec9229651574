"""ctrl+q in a view's navigator leaves a dead pane that says how to bring it back
(issue 40 item 8).

The real `switchboard ui` runs in a pane of a private tmux server that keeps dead
panes (as a view's navigator pane does), on a real home; a key typed into the pane
quits it, and the pane's last screen is read back from tmux.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from core.context.requests import new_request_id
from core.model.ports import Uuid4Ids
from tests.factories import make_engine
from tests.waiting import retry_until

pytestmark = pytest.mark.tmux

BIN = Path(sys.executable).parent


def tmux(socket: Path, *args: str) -> str:
    return subprocess.run(["tmux", "-S", str(socket), *args], check=True, capture_output=True,
                          text=True, timeout=30).stdout


def test_quitting_the_navigator_says_how_to_bring_it_back(
        tmp_path: Path, tmux_server: object, tmux_socket: Path) -> None:
    home = tmp_path / "home"
    engine = make_engine(home, ids=Uuid4Ids())
    view_id = engine.project_enter(new_request_id(), "alpha").view_id
    engine.conn.close()
    env = {"SWITCHBOARD_HOME": str(home), "SWITCHBOARD_CONFIG": str(home / "config.toml"),
           "PATH": os.environ["PATH"]}
    tmux(tmux_socket, "new-window", "-d", "-t", "=scratch:", "-n", "nav",
         *[arg for name, value in env.items() for arg in ("-e", f"{name}={value}")],
         str(BIN / "switchboard"), "ui", "--view", view_id)
    pane = "=scratch:=nav"
    tmux(tmux_socket, "set-option", "-p", "-t", pane, "remain-on-exit", "on")

    def screen() -> str:
        return tmux(tmux_socket, "capture-pane", "-p", "-t", pane)

    def dead() -> bool:
        return tmux(tmux_socket, "display-message", "-p", "-t", pane,
                    "#{pane_dead}").strip() == "1"

    assert retry_until(lambda: "alpha" in screen(), 60), screen()  # the app has drawn
    tmux(tmux_socket, "send-keys", "-t", pane, "C-q")
    assert retry_until(dead, 30), screen()
    shown = screen()
    assert "The navigator was closed (ctrl+q)." in shown
    assert "prefix S brings it back here;" in shown
