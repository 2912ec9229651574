"""Shell commands printed for the person are quoted: pasting one runs exactly it.

The demo runs for real (private tmux server, fake agents) in a home whose
name holds a space, a quote and ``$(...)``; the printed attach line is then
run by ``sh`` with a ``tmux`` stand-in first on PATH that records its argv.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path


def test_demo_attach_line_is_safe_to_paste(tmp_path: Path) -> None:
    marker = Path(tempfile.mkdtemp(prefix="sbm", dir="/tmp")) / "p"
    # Short (tmux socket paths are limited), and hostile when pasted unquoted.
    top = Path(tempfile.mkdtemp(prefix="sb q'", dir="/tmp"))
    home = top / f"h$(touch {marker})"  # the marker's slashes make this a few folders deep
    socket = home / "tmux.sock"
    env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}
    env.update(SWITCHBOARD_HOME=str(home), SWITCHBOARD_CONFIG=str(home / "config.toml"))
    try:
        done = subprocess.run([sys.executable, "-m", "navigator.cli", "demo", "--home",
                               str(home), "--no-attach"], env=env, capture_output=True,
                              text=True, timeout=180)
        assert done.returncode == 0, done.stderr
        (line,) = [ln for ln in done.stdout.splitlines() if ln.startswith("attach:")]
        command = line.partition(":")[2].strip()
        window = shlex.split(command)[-1]
        assert window.startswith("@")
        shim = tmp_path / "bin"
        shim.mkdir()
        (shim / "tmux").write_text('#!/bin/sh\necho "TMUX=${TMUX-unset}"\n'
                                  'for a in "$@"; do printf "%s\\n" "$a"; done\n')
        (shim / "tmux").chmod(0o700)
        pasted = subprocess.run(["sh", "-c", command], capture_output=True, text=True,
                                env={**env, "PATH": f"{shim}:{env['PATH']}",
                                     "TMUX": "/tmp/outer,1,0"}, timeout=30)
        assert pasted.returncode == 0, pasted.stderr
        # pasted inside another tmux, it attaches as Switchboard's own attach does: no TMUX
        assert pasted.stdout.splitlines() == ["TMUX=unset", "-S", str(socket), "attach", "-t",
                                              window]
        assert not marker.exists()  # the $(...) in the path was never run
    finally:
        subprocess.run(["tmux", "-S", str(socket), "kill-server"], capture_output=True)
        subprocess.run(["rm", "-rf", str(top), str(marker.parent)], check=False)
