"""The batched runner: one tmux process per batch, literal arguments, specific errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.tmux import (
    PaneNotFound,
    TmuxRunner,
    TmuxUnavailable,
    snapshot,
)
from core.tmux.errors import TmuxNotInstalled
from core.tmux.runner import escape_arg

TRICKY = ["plain", "ends;", "ends\\;", ";", "{", "}", "#{pid}", "$HOME", "~", "'q'", '"dq"',
          "-flag", "a ; b", "tab\there"]


def test_escape_only_touches_a_trailing_semicolon() -> None:
    assert escape_arg("a;") == "a\\;"
    assert escape_arg("a;b") == "a;b"
    assert escape_arg("plain") == "plain"


def test_a_batch_is_one_process_and_keeps_every_argument_literal(runner: TmuxRunner) -> None:
    before = runner.invocations
    runner.run([("set-buffer", "-b", f"t{i}", "--", value) for i, value in enumerate(TRICKY)])
    assert runner.invocations - before == 1
    # show-buffer closes the client's stdout, so it can only be the last command of a batch.
    shown = [runner.run([("show-buffer", "-b", f"t{i}")]).stdout for i in range(len(TRICKY))]
    assert ["\n".join(lines) for lines in shown] == TRICKY


def test_listing_all_panes_is_one_process_regardless_of_pane_count(runner: TmuxRunner) -> None:
    runner.run([("new-window", "-d", "-t", "=scratch:") for _ in range(12)])
    before = runner.invocations
    snap = snapshot(runner)
    assert runner.invocations - before == 1
    assert len(snap.panes) == 13
    assert snap.identity.socket_path == runner.socket_path


def test_a_failing_command_stops_the_rest_of_the_batch(runner: TmuxRunner) -> None:
    with pytest.raises(PaneNotFound) as raised:
        runner.run([("select-pane", "-t", "%999"), ("set-buffer", "-b", "after", "x")])
    assert raised.value.pane_id == "%999"
    assert runner.run([("list-buffers", "-F", "#{buffer_name}")]).stdout.count("after") == 0


def test_no_server_is_a_specific_error(tmp_path: Path) -> None:
    runner = TmuxRunner(tmp_path / "nothing.sock")
    with pytest.raises(TmuxUnavailable):
        snapshot(runner)
    assert runner.invocations == 1


def test_tmux_missing_from_path_is_a_one_line_error(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # a folder with no tmux in it
    runner = TmuxRunner(tmp_path / "any.sock")
    with pytest.raises(TmuxNotInstalled) as raised:  # not "the server is gone"
        runner.run([("list-sessions",)])
    message = str(raised.value)
    assert "tmux is not installed" in message and "\n" not in message
    assert runner.invocations == 0  # nothing was spawned


def test_blank_lines_inside_output_are_kept_only_the_trailing_newline_goes(
        runner: TmuxRunner) -> None:
    runner.run([("set-buffer", "-b", "blank", "--", "one\n\nthree\n")])
    assert runner.run([("show-buffer", "-b", "blank")]).stdout == ("one", "", "three")


def test_every_package_name_loads_from_its_module_and_one_module_loads_alone() -> None:
    import importlib
    import subprocess
    import sys

    import core.tmux

    assert sorted(core.tmux.__all__) == sorted(core.tmux._HOME)
    for name in core.tmux.__all__:
        home = importlib.import_module(core.tmux._HOME[name])
        assert getattr(core.tmux, name) is getattr(home, name), name
    loaded = subprocess.run(
        [sys.executable, "-c", "import sys, core.tmux.commands; print('core.tmux.adapter' in "
         "sys.modules)"], capture_output=True, text=True, check=True).stdout.split()
    assert loaded == ["False"]  # the broker's typer needs the commands, not the adapter


def test_the_default_server_is_never_used() -> None:
    with pytest.raises(ValueError):
        TmuxRunner("")


def test_guards_only_take_exact_pane_ids_and_quotable_tokens() -> None:
    from core.tmux.commands import Check, guarded

    with pytest.raises(ValueError):
        Check("=scratch:", "1", "label")
    with pytest.raises(ValueError):
        guarded([Check("%1", "1", "label")], [("send-keys", "-t", "%1", "it's")])


def test_a_batch_that_acts_goes_through_libtmux_and_a_read_does_not(tmp_path: Path) -> None:
    """The process that changes tmux drives it through libtmux's ``Server.cmd``; one that
    only reads never imports it (a reading navigator stays light). Each batch is still one
    counted process, and both paths see the same server."""
    import subprocess
    import sys

    script = (
        "import sys\n"
        "from core.tmux.runner import TmuxRunner\n"
        f"runner = TmuxRunner({str(tmp_path / 'sock')!r})\n"
        "runner.run([('new-session', '-d', '-s', 'probe')])\n"
        "runner.run([('list-sessions', '-F', '#{session_name}')], check=False)\n"
        "print('libtmux.server' in sys.modules, runner.invocations)\n"
        "runner.run([('kill-server',)], check=False)\n")
    reading = (
        "import sys\n"
        "from core.tmux.runner import TmuxRunner\n"
        f"runner = TmuxRunner({str(tmp_path / 'none')!r})\n"
        "out = runner.run([('list-sessions',)], check=False)\n"
        "print('libtmux' in sys.modules, runner.invocations, out.returncode != 0)\n")
    acted = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                           check=True).stdout.split()
    read = subprocess.run([sys.executable, "-c", reading], capture_output=True, text=True,
                          check=True).stdout.split()
    assert acted == ["True", "2"]
    assert read == ["False", "1", "True"]


def test_the_servers_runner_acts_without_libtmux(runner: TmuxRunner,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The home's server spawns its acting batches like reads (issue 38: libtmux would
    stay in its memory for the home's life): same effect, same count, no libtmux handle."""
    monkeypatch.setattr(TmuxRunner, "acts_through_libtmux", False)
    before = runner.invocations
    runner.run([("set-option", "-g", "@sb_probe", "a;b"), ("show-options", "-gv", "@sb_probe")])
    assert runner.invocations == before + 1
    assert runner.run([("show-options", "-gv", "@sb_probe")]).stdout == ("a;b",)
    assert runner._server is None
