"""A pager opened from the navigator hands the terminal back to a working app (issue 38).

The navigator runs as a person runs it: ``switchboard ui`` in the view's left pane
on a private tmux server, driven by ``send-keys``. ``v`` opens the frame's diff and
``o`` hands the terminal to ``$PAGER`` (the real ``less``) with the app suspended;
``q`` leaves the pager. The app must then draw and act on keys again, and ``q``
must not be what ends it: a copy of Textual's private input loop used to close its
wake pipe on suspend, so the resumed input thread died with ``OSError: [Errno 22]``
and the next key went to the shell behind it.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from core.context.requests import new_request_id
from tests.integration.journey_env import make_live_engine, tmux
from tests.waiting import retry_until

pytestmark = pytest.mark.tmux


def _screen(socket: Path, pane: str) -> str:
    return tmux(socket, "capture-pane", "-p", "-t", pane)


def _git(checkout: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(checkout), "-c", "user.name=t", "-c", "user.email=t@t",
                    *args], check=True, capture_output=True)


def test_the_diff_pager_returns_to_a_working_app(tmp_path: Path, tmux_socket: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SWITCHBOARD_HOME", str(tmp_path))
    monkeypatch.setenv("SWITCHBOARD_CONFIG", str(tmp_path / "config.toml"))
    monkeypatch.setenv("PAGER", "less")
    monkeypatch.setenv("LESS", "")
    checkout = tmp_path / "src" / "alpha"
    checkout.mkdir(parents=True)
    _git(checkout, "init", "-q")
    (checkout / "notes.txt").write_text("first\n")
    _git(checkout, "add", "notes.txt")
    _git(checkout, "commit", "-q", "-m", "start")
    (checkout / "notes.txt").write_text("first\nPAGER-MARK second line\n")

    engine = make_live_engine(tmp_path, tmux_socket)
    engine.project_enter(new_request_id(), "alpha")
    nav = engine.conn.execute("SELECT navigator_pane_id FROM user_views").fetchone()[0]
    assert retry_until(lambda: "Projects" in _screen(tmux_socket, nav), 20), \
        _screen(tmux_socket, nav)

    def press(key: str, shows: Callable[[str], bool], seconds: float = 15) -> None:
        tmux(tmux_socket, "send-keys", "-t", nav, key)
        assert retry_until(lambda: shows(_screen(tmux_socket, nav)), seconds), \
            _screen(tmux_socket, nav)

    press("v", lambda screen: "notes.txt" in screen, 20)
    # less shows the patch (its git header: the diff screen draws no such line) in the
    # whole pane, with the app suspended
    press("o", lambda screen: "diff --git a/notes.txt" in screen and "Diff of" not in screen)
    # A person reads the page before leaving it. (Found, not fixed: a q sent within
    # ~0.1 s of less's first page is lost in the navigator's pane, not in a bare
    # Textual app's; docs/decisions.md.)
    time.sleep(0.5)
    # back in the diff screen, drawn again
    press("q", lambda screen: "diff --git" not in screen and "Diff of" in screen)
    # and it acts on keys: close the diff, open and close help
    press("Escape", lambda screen: "Projects" in screen)
    press("?", lambda screen: "Keys" in screen or "Badges" in screen)
    press("Escape", lambda screen: "Projects" in screen)
    # the navigator process is the pane's process still (it did not die and respawn)
    dead = tmux(tmux_socket, "display-message", "-p", "-t", nav, "#{pane_dead}").strip()
    assert dead == "0"
    assert "Errno" not in _screen(tmux_socket, nav)
