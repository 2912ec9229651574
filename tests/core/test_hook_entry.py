"""The launch hook command (``python -S navigator/hook_entry.py hook ...``) as providers
run it: what it prints and exits with, the third-party import it still allows, and the
session file's WAL it leaves for the next writer (closed by the session's last hook)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

from core.install.hooks_install import launch_hook_command
from storage.session_db import session_db_path
from tests.core.test_hook_handler import LiveSurface, payload_for

ENTRY = Path(launch_hook_command()[2])
CLEAN_ENV = {k: v for k, v in os.environ.items()
             if not k.startswith("SWITCHBOARD_") and k not in ("TMUX", "TMUX_PANE")}


def run_hook(*args: str, env: dict[str, str] | None = None,
             stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([*launch_hook_command(), *args], input=stdin, capture_output=True,
                          env=env if env is not None else CLEAN_ENV, timeout=60)


def test_the_command_is_this_python_without_site_on_the_entry_script() -> None:
    python, flag, entry, word = launch_hook_command()
    assert (python, flag, word) == (sys.executable, "-S", "hook")
    assert Path(entry).is_file() and Path(entry).is_absolute()


def test_an_unmanaged_hook_prints_its_json_and_exits_zero() -> None:
    done = run_hook("--provider", "claude", "Stop", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["handled"] is False  # flushed before os._exit


def test_a_refused_argv_keeps_argparse_words_and_code() -> None:
    done = run_hook("--provider", "nobody", "Stop")
    assert done.returncode == 2
    assert b"nobody" in done.stderr


def test_a_third_party_import_loads_site_on_demand() -> None:
    """Without site, libtmux is not on sys.path: the last-resort finder runs site.main()
    once, for it; a standard-library name never triggers it."""
    probe = (
        "import runpy, sys\n"
        f"entry = runpy.run_path({str(ENTRY)!r}, run_name='probe')\n"
        "sys.path[0] = entry['ROOT']\n"
        "sys.meta_path.append(entry['SiteOnDemand'])\n"
        "try:\n    import nt  # a standard module absent on POSIX\nexcept ImportError:\n    pass\n"
        "print('site' in sys.modules)\n"
        "import libtmux\n"
        "print('site' in sys.modules, libtmux.__name__)\n"
    )
    done = subprocess.run([sys.executable, "-S", "-c", probe], capture_output=True, text=True,
                          env=CLEAN_ENV, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "True", "libtmux"]


def _events(path: Path) -> list[str]:
    conn = sqlite3.connect(path)
    try:
        return [row[0] for row in conn.execute("SELECT type FROM events ORDER BY rowid")]
    finally:
        conn.close()


def test_a_turn_leaves_its_wal_and_the_session_end_closes_it(live: LiveSurface) -> None:  # noqa: F811
    env = dict(CLEAN_ENV, **live.env())
    done = run_hook("--provider", "claude", "UserPromptSubmit", env=env,
                    stdin=payload_for(live, "UserPromptSubmit", prompt="hello"))
    assert done.returncode == 0, done.stderr
    path = session_db_path(live.root, live.session_key)
    wal = Path(f"{path}-wal")
    assert wal.exists()  # committed in the WAL, not checkpointed by a close
    assert oct(wal.stat().st_mode & 0o777) == "0o600"
    assert "prompt_submitted" in _events(path)  # a fresh reader sees the commit
    done = run_hook("--provider", "claude", "SessionEnd", env=env,
                    stdin=payload_for(live, "SessionEnd", reason="exit"))
    assert done.returncode == 0, done.stderr
    assert not wal.exists()
    assert _events(path)[-1] == "session_ended"
