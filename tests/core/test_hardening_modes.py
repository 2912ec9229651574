"""Switchboard's files are the person's alone: 0600 files, 0700 folders.

The journey runs as the person runs it: `switchboard init`, `project enter`,
`frame start` as separate processes on a private tmux server, the fake
agent's own hooks calling `switchboard hook`, `reconcile`; then every file
and folder Switchboard made under the home is checked. The agents' pane must
keep the person's umask (their project files are not Switchboard's). A second
test checks the explicit modes without any umask help (a library caller).
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

from core.config.config import ProviderConfig, TmuxConfig, render_config
from core.model.enums import Provider
from core.model.files import write_private
from storage.broker_store import open_store
from storage.registry_file import create_registry, publish_pointer
from storage.session_db import open_session_db
from tests.factories import project_config
from tests.integration.journey_env import fake_provider_command, tmux
from tests.waiting import retry_until

REPO = Path(__file__).resolve().parents[2]


def loose(root: Path, skip: set[Path]) -> list[str]:
    """Every path under ``root`` (not in ``skip``) with any group/other bit."""
    found = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if Path(folder, d) not in skip]
        for name in [*dirs, *files]:
            path = Path(folder, name)
            mode = path.lstat().st_mode
            if stat.S_ISSOCK(mode) or stat.S_ISLNK(mode):
                continue
            if mode & 0o077:
                found.append(f"{oct(mode & 0o777)} {path.relative_to(root)}")
    return sorted(found)


def provider_screen(socket: Path) -> str:
    panes = tmux(socket, "list-panes", "-a", "-F", "#{pane_id} #{@sb_role}").split("\n")
    return "\n".join(tmux(socket, "capture-pane", "-p", "-t", line.split()[0])
                     for line in panes if line.endswith(" provider"))


def test_journey_leaves_nothing_readable_by_others(tmp_path: Path, tmux_socket: Path) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    src = tmp_path / "src"  # the person's projects: not Switchboard's to tighten
    template = replace(project_config(src), generation_id="",
                       tmux=TmuxConfig(socket_path=str(tmux_socket)),
                       providers={p: ProviderConfig(command=fake_provider_command(p.value))
                                  for p in Provider})
    (home / "config.toml").write_text(render_config(template), encoding="utf-8")
    os.chmod(home / "config.toml", 0o644)  # as an editor might leave it; init rewrites it
    env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}
    env.update(SWITCHBOARD_HOME=str(home), SWITCHBOARD_CONFIG=str(home / "config.toml"))

    def cli(*args: str) -> str:
        done = subprocess.run([sys.executable, "-m", "navigator.cli", *args], cwd=REPO,
                              env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, (args, done.stderr)
        return done.stdout

    person = os.umask(0o022)
    try:
        cli("init")
        route = json.loads(cli("project", "enter", "alpha", "--json"))
        cli("frame", "start", route["frame_id"], "--json")

        def evidence() -> list[Path]:  # the agent's own hooks wrote its session file
            return list((home / "sessions").glob("*/session.db"))
        assert retry_until(lambda: bool(evidence()), 60), provider_screen(tmux_socket)
        cli("reconcile")
    finally:
        os.umask(person)
    assert loose(home, skip=set()) == []
    # The agent's pane runs with the person's umask, not Switchboard's.
    pids = tmux(tmux_socket, "list-panes", "-a", "-F", "#{pane_pid} #{@sb_role}").split("\n")
    (pid,) = [line.split()[0] for line in pids if line.endswith(" provider")]
    umask = next(line.split()[1] for line in Path(f"/proc/{pid}/status").read_text()
                 .splitlines() if line.startswith("Umask:"))
    assert umask == "0022"


def test_storage_creates_private_files_without_a_umask(tmp_path: Path) -> None:
    person = os.umask(0o022)
    try:
        root = tmp_path / "h"
        create_registry(root / "state" / "g" / "registry.sqlite3", generation_id="g",
                        host_id="h", now_ms=1)
        publish_pointer(root / "state" / "current", "g")
        conn = open_session_db(root / "sessions" / "k.sqlite3", now_ms=1)
        store = open_store(root / "broker.sqlite3")
        with store.transaction():
            store.insert_fleet("f", "2026-01-01T00:00:00Z")
        write_private(root / "run" / "x" / "settings.json", "{}")
        try:
            assert loose(root, skip=set()) == []
            wal = [p.name for p in root.rglob("*-wal")]
            assert "k.sqlite3-wal" in wal and "broker.sqlite3-wal" in wal
        finally:
            conn.close()
            store.close()
    finally:
        os.umask(person)


def test_per_launch_files_are_private_without_umask_help(tmp_path: Path) -> None:
    """The launcher's run folder, MCP file and hook state are 0700/0600 even when an
    in-process caller runs under a permissive umask."""
    from core.install.hooks_install import HookTarget, install
    from core.model.files import private_dir
    from core.providers.agent_http import HttpEndpoint
    from core.providers.claude_settings import write_mcp_config

    old = os.umask(0o022)
    try:
        run_dir = private_dir(tmp_path / "run" / "h_claude_x")
        mcp = write_mcp_config(run_dir, HttpEndpoint("http://127.0.0.1:1/mcp", "t" * 43))
        install(HookTarget.claude_settings(run_dir / "settings.json"), ["sb", "hook"],
                state_dir=run_dir / "hook-state")
    finally:
        os.umask(old)
    assert stat.S_IMODE(run_dir.stat().st_mode) == 0o700
    assert stat.S_IMODE(mcp.stat().st_mode) == 0o600
    assert stat.S_IMODE((run_dir / "hook-state").stat().st_mode) == 0o700
