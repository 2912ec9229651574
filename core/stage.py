"""The engine's hands in tmux: views, launches, swaps, fenced input, kills.

Every method is one batched tmux invocation (occasionally two) through
``core.tmux.runner.TmuxRunner`` against one exact server, whose identity
(socket path, pid, start time) is recorded in ``tmux_servers`` and checked
before a stored locator is trusted.
"""

from __future__ import annotations

import shlex
import sqlite3
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from core.enums import ViewMode
from core.errors import TmuxError
from core.tmux.errors import TmuxUnavailable
from core.tmux.identity import ServerIdentity, read_identity
from core.tmux.runner import TmuxRunner

if TYPE_CHECKING:
    from core.engine import Engine
    from core.home import Home

CONTROL_TEMPLATE = "Call transition_claim() and follow the returned transition instructions."
ROLE_OPTION = "@sb_role"
SURFACE_OPTION = "@sb_surface"
VIEW_OPTION = "@sb_view"


@dataclass(frozen=True)
class LaunchedPane:
    pane_id: str
    pane_pid: int


def socket_path_for(engine: Engine, home: Home) -> str:
    return engine.config.tmux.socket_path or str(home.root / "tmux.sock")


class TmuxStage:
    """Physical effects for one engine on one tmux server."""

    def __init__(self, engine: Engine, socket_path: str) -> None:
        self.engine = engine
        self.socket_path = socket_path
        self.runner = TmuxRunner(socket_path)
        self.view_session = engine.config.tmux.view_session
        self.holding_session = engine.config.tmux.holding_session
        self.navigator_width = engine.config.tmux.navigator_width
        self._identity: ServerIdentity | None = None

    # ----------------------------------------------------------- server

    def ensure_server(self) -> ServerIdentity:
        """Start the private server (view + holding sessions) if none answers."""
        try:
            identity = read_identity(self.runner)
        except TmuxUnavailable:
            Path(self.socket_path).parent.mkdir(parents=True, exist_ok=True)
            self.runner.run([
                ("new-session", "-d", "-s", self.view_session, "-n", "switchboard",
                 "-x", "200", "-y", "50"),
                ("set-option", "-g", "remain-on-exit", "off"),
            ])
            identity = read_identity(self.runner)
        sessions = set(self.runner.run([("list-sessions", "-F", "#{session_name}")]).stdout)
        missing = []
        if self.holding_session not in sessions:
            missing.append(("new-session", "-d", "-s", self.holding_session, "-n", "_hold"))
        if self.view_session not in sessions:
            missing.append(("new-session", "-d", "-s", self.view_session))
        if missing:
            self.runner.run(missing)
        self._identity = identity
        return identity

    def server_row(self, conn: sqlite3.Connection) -> str:
        """The tmux_servers id of the live server, inserting it on first sight."""
        identity = self._identity or self.ensure_server()
        row = conn.execute(
            "SELECT tmux_server_id FROM tmux_servers WHERE socket_path = ? AND server_pid = ?"
            " AND server_start_time = ?",
            (identity.socket_path, identity.server_pid, identity.server_start_time)).fetchone()
        if row is not None:
            return row[0]
        server_id = str(uuid.uuid4())
        conn.execute(
            "INSERT INTO tmux_servers (tmux_server_id, host_id, socket_path, server_pid,"
            " server_start_time, observed_at) VALUES (?, ?, ?, ?, ?, ?)",
            (server_id, self.engine.host_id, identity.socket_path, identity.server_pid,
             identity.server_start_time, self.engine.now()))
        return server_id

    # ----------------------------------------------------------- views

    def ensure_view(self, view: sqlite3.Row, title: str) -> tuple[str, str, str | None]:
        """Create the view's window (placeholder main + navigator pane) if missing."""
        self.ensure_server()
        if view["tmux_window_id"]:
            out = self.runner.run([("list-panes", "-a", "-F", "#{window_id}")], check=False)
            if view["tmux_window_id"] in out.stdout:
                return view["tmux_window_id"], view["main_pane_id"], view["navigator_pane_id"]
        placeholder = _python_cmd("core.placeholder")
        created = self.runner.run([(
            "new-window", "-d", "-P", "-F", "#{window_id} #{pane_id}", "-t",
            f"{self.view_session}:", "-n", title[:30] or "view", placeholder)])
        window_id, main_pane = created.stdout[0].split()
        batch = [("set-option", "-p", "-t", main_pane, ROLE_OPTION, "placeholder"),
                 ("set-option", "-w", "-t", window_id, VIEW_OPTION, view["view_id"])]
        nav_pane = None
        if view["mode"] == ViewMode.NAVIGATOR:
            nav = self.runner.run([("split-window", "-h", "-b", "-d", "-l",
                                    str(self.navigator_width), "-P", "-F", "#{pane_id}",
                                    "-t", main_pane, _navigator_cmd(self.engine))])
            nav_pane = nav.stdout[0].strip()
            batch.append(("set-option", "-p", "-t", nav_pane, ROLE_OPTION, "navigator"))
        self.runner.run(batch)
        return window_id, main_pane, nav_pane

    def main_pane(self, view: sqlite3.Row) -> str | None:
        """Which pane sits in the view's main position, re-read from tmux."""
        if not view["tmux_window_id"]:
            return None
        out = self.runner.run([("list-panes", "-t", view["tmux_window_id"], "-F",
                                f"#{{pane_id}} #{{{ROLE_OPTION}}}")], check=False)
        for line in out.stdout:
            pane_id, _, role = line.partition(" ")
            if role != "navigator":
                return pane_id
        return None

    def present(self, view: sqlite3.Row, target_pane: str | None) -> None:
        """Swap ``target_pane`` into main and park the pane that was there."""
        if not view["tmux_window_id"] or target_pane is None:
            return
        current = self.main_pane(view)
        if current is None or current == target_pane:
            return
        zoom = self.runner.run([("display-message", "-p", "-t", current,
                                 "#{window_zoomed_flag}")]).stdout
        batch = [("swap-pane", "-d", "-s", target_pane, "-t", current),
                 ("select-pane", "-d", "-t", current),
                 ("select-pane", "-e", "-t", target_pane),
                 ("select-pane", "-t", target_pane)]
        if zoom and zoom[0] == "1":
            batch.append(("resize-pane", "-Z", "-t", target_pane))
        self.runner.run(batch)
        conn = self.engine.conn
        conn.execute("UPDATE user_views SET main_pane_id = ? WHERE view_id = ?",
                     (target_pane, view["view_id"]))

    def set_mode(self, view: sqlite3.Row, mode: ViewMode) -> None:
        """direct: park the navigator pane; navigator: bring it back. Zoom survives."""
        if not view["tmux_window_id"]:
            return
        main = self.main_pane(view)
        nav = view["navigator_pane_id"]
        if mode is ViewMode.DIRECT and nav:
            zoom = self.runner.run([("display-message", "-p", "-t", main,
                                     "#{window_zoomed_flag}")]).stdout
            self.engine.conn.execute("UPDATE user_views SET zoomed = ? WHERE view_id = ?",
                                     (1 if zoom and zoom[0] == "1" else 0, view["view_id"]))
            self.runner.run([("break-pane", "-d", "-s", nav, "-t", f"{self.holding_session}:")])
        elif mode is ViewMode.NAVIGATOR and nav and main:
            batch = [("join-pane", "-h", "-b", "-d", "-l", str(self.navigator_width),
                      "-s", nav, "-t", main)]
            if view["zoomed"]:
                batch.append(("resize-pane", "-Z", "-t", main))
            self.runner.run(batch)

    # ----------------------------------------------------------- launches

    def launch_pane(self, *, surface_id: str, launch_id: str, argv: list[str],
                    env: dict[str, str], cwd: str) -> LaunchedPane:
        """Create the provider pane parked in holding, gated until it is placed."""
        self.ensure_server()
        gate = f"sb-launch-{launch_id}"
        command = (f"tmux -S {shlex.quote(self.socket_path)} wait-for {gate} && exec "
                   + " ".join(shlex.quote(a) for a in argv))
        env_args: list[str] = []
        for key, value in sorted(env.items()):
            env_args += ["-e", f"{key}={value}"]
        out = self.runner.run([(
            "new-window", "-d", "-P", "-F", "#{pane_id} #{pane_pid}", "-t",
            f"{self.holding_session}:", "-n", f"sb-{surface_id[:8]}", "-c", cwd, *env_args,
            command)])
        pane_id, pid = out.stdout[0].split()
        self.runner.run([("set-option", "-p", "-t", pane_id, SURFACE_OPTION, surface_id),
                         ("set-option", "-p", "-t", pane_id, ROLE_OPTION, "provider"),
                         ("select-pane", "-d", "-t", pane_id)])
        return LaunchedPane(pane_id, int(pid))

    def release_gate(self, launch_id: str) -> None:
        self.runner.run([("wait-for", "-S", f"sb-launch-{launch_id}")])

    def paste_control(self, pane_id: str) -> None:
        """The fenced control turn: one queue, one buffer, one Enter, input off after."""
        buffer = f"sb-ctl-{uuid.uuid4().hex[:12]}"
        self._require_managed(pane_id)
        self.runner.run([
            ("set-buffer", "-b", buffer, CONTROL_TEMPLATE),
            ("select-pane", "-e", "-t", pane_id),
            ("paste-buffer", "-p", "-d", "-b", buffer, "-t", pane_id),
            ("send-keys", "-t", pane_id, "Enter"),
            ("select-pane", "-d", "-t", pane_id),
        ])

    def enable_input(self, pane_id: str) -> None:
        self.runner.run([("select-pane", "-e", "-t", pane_id)], check=False)

    def kill(self, pane_id: str) -> None:
        """Kill only a pane Switchboard launched (tagged with its surface)."""
        try:
            self._require_managed(pane_id)
        except TmuxError:
            return
        self.runner.run([("kill-pane", "-t", pane_id)], check=False)

    def _require_managed(self, pane_id: str) -> None:
        out = self.runner.run([("display-message", "-p", "-t", pane_id,
                                f"#{{{SURFACE_OPTION}}}")], check=False)
        if not out.ok or not out.stdout or not out.stdout[0].strip():
            raise TmuxError(f"pane {pane_id} is not a Switchboard-launched pane; refusing")

    def list_panes(self) -> dict[str, str]:
        """pane id -> @sb_surface for every pane of the server (one invocation)."""
        out = self.runner.run([("list-panes", "-a", "-F",
                                f"#{{pane_id}} #{{{SURFACE_OPTION}}}")], check=False)
        panes: dict[str, str] = {}
        for line in out.stdout:
            pane_id, _, surface = line.partition(" ")
            panes[pane_id] = surface
        return panes


def _python_cmd(module: str, *args: str) -> str:
    return " ".join(shlex.quote(a) for a in (sys.executable, "-m", module, *args))


def _navigator_cmd(engine: Engine) -> str:
    home = getattr(engine, "home", None)
    prefix = f"SWITCHBOARD_HOME={shlex.quote(str(home.root))} " if home is not None else ""
    return prefix + _python_cmd("navigator.cli", "ui")


def attach_stage(engine: Engine, home: Home) -> TmuxStage:
    stage = TmuxStage(engine, socket_path_for(engine, home))
    engine.stage = stage
    return stage
