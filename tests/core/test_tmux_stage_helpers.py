"""The pieces the tmux stage delegates to, pinned without a tmux server.

The staged pane's shell line and the view-creation lock used to be built
inside ``TmuxStage``; these tests pin what they produce so the split changed
nothing a provider pane or a second process would see.
"""

from __future__ import annotations

import shlex
import threading

import pytest

from core.tmux.errors import TmuxCommandFailed
from core.tmux.gates import gate_name, gated_exec_line, open_gate_command
from core.tmux.locks import exclusive_flock, views_lock_path
from core.tmux.navigator_pane import NAVIGATOR_KEY, navigator_key_binding


def test_gated_exec_line_quotes_socket_and_argv() -> None:
    gate = gate_name("L1")
    line = gated_exec_line("/tmp/a b/tmux.sock", gate, ["claude", "--say", "it's; $HOME"])
    assert gate == "sb-launch-L1"
    assert line == ("tmux -S '/tmp/a b/tmux.sock' wait-for sb-launch-L1 && exec "
                    + shlex.join(["claude", "--say", "it's; $HOME"]))
    assert open_gate_command(gate) == ("wait-for", "-S", "sb-launch-L1")


def test_navigator_key_quotes_env_and_doubles_hashes() -> None:
    binding = navigator_key_binding({"SWITCHBOARD_HOME": "/h/with #hash"})
    assert binding.key == NAVIGATOR_KEY
    assert binding.shell_command.startswith('view=#{q:@sb_view}; [ -n "$view" ] || exit 0; ')
    assert "SWITCHBOARD_HOME='/h/with ##hash'" in binding.shell_command
    assert binding.marker in binding.shell_command


def test_views_lock_times_out_while_another_holder_has_it(tmp_path) -> None:
    path = views_lock_path(str(tmp_path / "run" / "tmux.sock"))
    held, release = threading.Event(), threading.Event()

    def holder() -> None:
        with exclusive_flock(path, timeout=5):
            held.set()
            release.wait(5)

    thread = threading.Thread(target=holder)
    thread.start()
    try:
        assert held.wait(5)
        with pytest.raises(TmuxCommandFailed, match="try again"), \
                exclusive_flock(path, timeout=0.05):
            pass
    finally:
        release.set()
        thread.join()
    with exclusive_flock(path, timeout=1):
        assert path.exists()
