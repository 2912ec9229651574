"""A real Switchboard home on a private tmux server whose providers are real CLIs.

The same registry and engine as the fake-agent journeys
(``tests/integration/journey_env.py``); only the provider commands differ. A
command is an argv prefix, so a test points a CLI at its isolated ``HOME`` and
loopback model stand-in with ``env NAME=VALUE ... /path/to/cli``.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from core.config.config import ProviderConfig, TmuxConfig
from core.config.home import Home
from core.config.registry import init_registry
from core.engine.engine import Engine
from core.engine.open import open_engine
from core.model.enums import Provider
from storage.session_db import session_db_path
from storage.uri import sqlite_uri
from tests.factories import project_config
from tests.integration.journey_env import one
from tests.waiting import retry_until


def xdg_home(person: Path) -> Home:
    """The default install layout of a person whose home folder is ``person``: state in
    the XDG state dir, config in the XDG config dir (not inside the state home)."""
    return Home(root=person / ".local" / "state" / "switchboard",
                config_path=person / ".config" / "switchboard" / "config.toml")


def make_real_engine(root: Path, socket: Path,
                     commands: Mapping[Provider, tuple[str, ...]],
                     home: Home | None = None) -> Engine:
    """A registry (projects ``root/src/alpha`` and ``beta``) whose providers run
    ``commands``, on the tmux server at ``socket``; ``home`` defaults to a
    SWITCHBOARD_HOME-style home at ``root``."""
    home = home or Home(root=root, config_path=root / "config.toml")
    template = project_config(root / "src")
    template = replace(template,
                       providers={p: ProviderConfig(command=tuple(c), version_timeout_seconds=60)
                                  for p, c in commands.items()},
                       tmux=TmuxConfig(socket_path=str(socket)))
    init_registry(home, template=template)
    return open_engine(home, with_stage=True)




def screen(socket: Path, pane: str) -> str:
    """The pane's text with wrapped lines joined (a long prompt stays one line)."""
    return subprocess.run(["tmux", "-S", str(socket), "capture-pane", "-p", "-J", "-S", "-300",
                           "-t", pane], capture_output=True, text=True).stdout


def type_prompt(socket: Path, pane: str, text: str, timeout: float = 60.0) -> None:
    """Type a line as a person does: the words, and Enter once they are on screen.

    A real CLI reads keys arriving in one burst as a paste and does not submit on
    an Enter inside it, so the Enter waits until the text has been drawn."""
    tmux = ["tmux", "-S", str(socket)]
    subprocess.run([*tmux, "send-keys", "-t", pane, "-l", text], check=True)
    retry_until(lambda: text in screen(socket, pane), timeout)
    time.sleep(0.1)
    subprocess.run([*tmux, "send-keys", "-t", pane, "Enter"], check=True)


def main_pane(engine: Engine) -> str:
    row = one(engine, "SELECT main_pane_id FROM user_views")
    assert row is not None
    return str(row[0])


def activity(engine: Engine, frame_id: str) -> str | None:
    row = one(engine, "SELECT s.activity FROM provider_sessions s JOIN frames f"
                      " ON f.current_session_key = s.session_key WHERE f.frame_id = ?",
              frame_id)
    return None if row is None else row[0]


@dataclass(frozen=True)
class CommandRun:
    """One ``command_runs`` row of a session's evidence file, with its tool run."""

    command: str
    cwd: str
    exit_code: int | None
    duration_ms: int | None
    completed: bool
    outcome: str | None
    tool_name: str | None
    tool_status: str | None


def command_runs(home: Home, session_key: str, command: str) -> list[CommandRun]:
    """The runs of exactly ``command`` in the session's own evidence file (read only),
    each joined to the tool run it belongs to; [] while the file does not exist."""
    path = session_db_path(home.root, session_key)
    if not path.exists():
        return []
    conn = sqlite3.connect(sqlite_uri(path, mode="ro"), uri=True)
    try:
        rows = conn.execute(
            "SELECT c.command, c.cwd, c.exit_code, c.duration_ms, c.completed_at IS NOT NULL,"
            " c.metadata_json, t.tool_name, t.status FROM command_runs c"
            " LEFT JOIN tool_runs t ON t.id = c.tool_run_id WHERE c.command = ?"
            " ORDER BY c.started_at", (command,)).fetchall()
    finally:
        conn.close()
    return [CommandRun(r[0], r[1], r[2], r[3], bool(r[4]),
                       json.loads(r[5] or "{}").get("outcome"), r[6], r[7]) for r in rows]


def evidence_dump(home: Home, session_key: str) -> str:
    """Every command and tool run of the session, for a failing assertion's message."""
    path = session_db_path(home.root, session_key)
    if not path.exists():
        return f"no evidence file at {path}"
    conn = sqlite3.connect(sqlite_uri(path, mode="ro"), uri=True)
    try:
        return "\n".join(
            f"{table}: {[tuple(r) for r in conn.execute(sql)]}" for table, sql in (
                ("tool_runs", "SELECT id, tool_name, status, duration_ms FROM tool_runs"),
                ("command_runs", "SELECT tool_run_id, command, cwd, exit_code, duration_ms,"
                                 " completed_at, metadata_json FROM command_runs")))
    finally:
        conn.close()


def witness_only(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The typist's own ``notified_at`` stamp touches no row from here on (as if it were
    killed right after typing, its attempt record left in place): only the agent's
    prompt hook, the witness of the line it received (``storage.broker_witness``), can
    stamp. Returns the ids the typist tried to stamp, in order."""
    from core.broker.delivery import PaneLocks
    from storage.broker_store import BrokerStore

    tried: list[int] = []

    def lost(store: BrokerStore, message_id: int, at: str) -> int:
        tried.append(message_id)
        return 0

    monkeypatch.setattr(BrokerStore, "stamp_notified", lost)
    # A killed typist never ends its attempt either: the record stays, so any other
    # typist (the server's delivery backstop) waits for the witness instead of typing
    # the line again, as it would after a real kill.
    monkeypatch.setattr(PaneLocks, "end_attempt", lambda locks, target: None)
    return tried
