"""The engine's hands in tmux: a registry-aware facade over ``core.tmux.TmuxAdapter``.

Every stored locator (a view's window and main pane, a surface's pane) belongs
to the tmux server generation recorded in its ``tmux_servers`` row. The stage
binds a ``TmuxAdapter`` to exactly that identity, so every mutation carries the
adapter's in-tmux identity guard: on a restarted server that reissued ``%0``
the batch is refused (``ServerIdentityMismatch``) and nothing is touched;
``core.reconcile.recovery.reconcile`` then opens a ``server_restarted`` recovery.

Cost: ``present`` (with its launch gate), ``launch_pane``, ``paste_control``
and ``kill`` are one tmux process each; ``set_mode`` two (a dead navigator is
respawned in the same batch); so a transition stays within three.
"""

from __future__ import annotations

import fcntl
import shlex
import sqlite3
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from core.model.enums import ViewMode
from core.model.errors import Conflict, TmuxError
from core.model.files import create_private_file, private_dir
from core.tmux import topology
from core.tmux.adapter import TmuxAdapter
from core.tmux.commands import Check, both, equals, gated, guarded, outcome, outcomes
from core.tmux.control_input import CONTROL_CLAIM_TEXT, ControlSubmission
from core.tmux.errors import (
    PaneNotFound,
    PlacementRefused,
    ServerIdentityMismatch,
    TmuxCommandFailed,
    TmuxUnavailable,
    UnmanagedPane,
)
from core.tmux.identity import ServerIdentity, check_identity, read_identity, run_guarded
from core.tmux.panes import (
    OPT_HOLDING,
    OPT_ROLE,
    OPT_SERVES,
    OPT_VIEW,
    PaneRole,
    PaneSnapshot,
    ServerSnapshot,
    ViewLayout,
    pane_lines,
    pane_state_command,
    snapshot,
)
from core.tmux.runner import TmuxRunner
from core.tmux.topology import KeyBinding, NavigatorSpawn
from storage.operations import servers as servers_ops
from storage.operations import views as views_ops

if TYPE_CHECKING:
    from core.engine.engine import Engine
    from core.install.home import Home

CONTROL_TEMPLATE = CONTROL_CLAIM_TEXT
"""control.claim.v1, re-exported for the launcher (the resume_initial prompt)."""

ENV_VIEW_ID = "SWITCHBOARD_VIEW_ID"
"""Set in the navigator pane's environment: the view that pane belongs to."""
NAVIGATOR_KEY = "S"
"""`prefix + S` in a view window brings the navigator back (direct -> navigator)."""


@dataclass(frozen=True)
class LaunchedPane:
    pane_id: str
    pane_pid: int


def socket_path_for(engine: Engine, home: Home) -> str:
    return engine.config.tmux.socket_path or str(home.root / "tmux.sock")


def gate_name(launch_id: str) -> str:
    """The `tmux wait-for` channel a staged provider pane waits on before exec."""
    return f"sb-launch-{launch_id}"


class TmuxStage:
    """Physical effects for one engine on one tmux socket.

    Locators are only acted on through an adapter bound to the identity of the
    server that issued them; the live server's identity is read once per
    process (``ensure_server``) and re-read by ``reconcile``.
    """

    def __init__(self, engine: Engine, socket_path: str) -> None:
        self.engine = engine
        self.socket_path = socket_path
        self.runner = TmuxRunner(socket_path)
        self.view_session = engine.config.tmux.view_session
        self.holding_session = engine.config.tmux.holding_session
        self.navigator_width = engine.config.tmux.navigator_width
        self.navigator_command: list[str] | None = None
        """argv of the navigator pane; None = `python -m navigator.cli ui` (tests override)."""
        self.placeholder_command: list[str] = [sys.executable, "-m", "core.model.placeholder"]
        self._live: TmuxAdapter | None = None
        self._holding_checked: ServerIdentity | None = None
        self._bound: dict[str, TmuxAdapter] = {}

    @property
    def invocations(self) -> int:
        """tmux processes this stage has spawned (the per-transition budget is 3)."""
        return self.runner.invocations

    # ----------------------------------------------------------- server

    def ensure_server(self, *, refresh: bool = False) -> ServerIdentity:
        """Start the private server (with its holding session) if none answers; bind to it.

        Only needed for things without a recorded server yet (a new view, a
        rebuilt one); recorded locators go through ``adapter_for`` directly.
        """
        live = self._live.expected if self._live is not None else None
        if live is not None and not refresh and self._holding_checked == live:
            return live
        if live is None or refresh:
            try:
                live = read_identity(self.runner)
            except TmuxUnavailable:
                private_dir(Path(self.socket_path).parent)
                topology.ensure_holding_session(self.runner,
                                                holding_session=self.holding_session)
                live = read_identity(self.runner)
                self._holding_checked = live
        if self._holding_checked != live:
            topology.ensure_holding_session(self.runner, live,
                                            holding_session=self.holding_session)
            self._holding_checked = live
        self.adopt(live)
        return live

    def adopt(self, identity: ServerIdentity) -> None:
        """Bind new launches and views to ``identity`` (reconcile read it from tmux)."""
        if self._live is None or self._live.expected != identity:
            self._live = self._adapter(identity)

    def live_identity(self) -> ServerIdentity | None:
        """Who answers on the socket right now (never starts a server)."""
        try:
            return read_identity(self.runner)
        except TmuxUnavailable:
            return None

    def snapshot(self) -> ServerSnapshot | None:
        """Identity and every pane in one process; None when no server answers."""
        try:
            return snapshot(self.runner)
        except TmuxUnavailable:
            return None

    def server_row(self, conn: sqlite3.Connection,
                   identity: ServerIdentity | None = None) -> str:
        """The tmux_servers id of ``identity`` (default: the bound live server), inserted once."""
        identity = identity or self.ensure_server()
        row = conn.execute(
            "SELECT tmux_server_id FROM tmux_servers WHERE socket_path = ? AND server_pid = ?"
            " AND server_start_time = ?",
            (identity.socket_path, identity.server_pid, identity.server_start_time)).fetchone()
        if row is not None:
            return row[0]
        server_id = str(uuid.uuid4())
        servers_ops.insert_tmux_server(
            conn, tmux_server_id=server_id, host_id=self.engine.host_id,
            socket_path=identity.socket_path, server_pid=identity.server_pid,
            server_start_time=identity.server_start_time, now=self.engine.now())
        return server_id

    def adapter_for(self, tmux_server_id: str | None) -> TmuxAdapter:
        """An adapter bound to the recorded server ``tmux_server_id`` (None: the live one)."""
        if tmux_server_id is None:
            self.ensure_server()
            assert self._live is not None
            return self._live
        adapter = self._bound.get(tmux_server_id)
        if adapter is None:
            row = self.engine.conn.execute(
                "SELECT socket_path, server_pid, server_start_time FROM tmux_servers"
                " WHERE tmux_server_id = ?", (tmux_server_id,)).fetchone()
            if row is None:
                raise ServerIdentityMismatch(
                    f"tmux server {tmux_server_id} is not recorded; its locators cannot be "
                    "trusted. Run `switchboard reconcile`.")
            adapter = self._adapter(ServerIdentity(row[0], int(row[1]), int(row[2])))
            self._bound[tmux_server_id] = adapter
        return adapter

    def _adapter(self, identity: ServerIdentity) -> TmuxAdapter:
        return TmuxAdapter(self.runner, identity, holding_session=self.holding_session,
                           navigator_width=self.navigator_width)

    def _checked_snapshot(self, adapter: TmuxAdapter) -> ServerSnapshot:
        """One snapshot, refused unless it comes from the adapter's server generation."""
        snap = snapshot(self.runner)
        check_identity(adapter.expected, snap.identity)
        return snap

    # ----------------------------------------------------------- views

    @contextmanager
    def view_lock(self, timeout: float = 10.0) -> Iterator[None]:
        """Serialize view-window creation across processes on this socket (flock)."""
        path = Path(f"{self.socket_path}.views.lock")
        private_dir(path.parent)
        create_private_file(path)
        with open(path, "a") as handle:
            deadline = time.monotonic() + timeout
            while True:
                try:
                    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        raise TmuxCommandFailed(
                            f"another process holds {path} for over {timeout:.0f} s; "
                            "try again") from None
                    time.sleep(0.01)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def ensure_view(self, view: sqlite3.Row, title: str, *,
                    rebind: bool = False) -> tuple[str, str, str | None]:
        """The view's window (placeholder main + a running navigator), created if missing.

        A view recorded on another server generation is refused
        (ServerIdentityMismatch) unless ``rebind`` (the server_restarted
        recovery), which builds a fresh window on the live server. An existing
        window whose navigator crashed or was quit gets it back
        (``_restore_navigator``).
        """
        # A recorded view needs no live-server set-up: its own identity is checked below.
        adapter = self.adapter_for(None if rebind else view["tmux_server_id"])
        snap = self._checked_snapshot(adapter)
        layout = snap.view(view["view_id"])
        if layout is None:
            view_id = view["view_id"]
            spawn = self.navigator_spawn(view_id)
            layout = adapter.create_view(
                session_name=self.view_session, view_id=view_id,
                window_name=title[:30] or "view",
                navigator_command=spawn.command, navigator_env=spawn.env,
                main_command=self.placeholder_command,
                key_binding=self.navigator_key())
            if view["mode"] == ViewMode.DIRECT:
                layout = adapter.set_mode(view_id=view["view_id"], mode=ViewMode.DIRECT)
        else:
            layout = self._restore_navigator(adapter, view, layout)
        main = layout.main.pane_id if layout.main is not None else view["main_pane_id"]
        navigator = layout.navigator.pane_id if layout.navigator is not None else None
        return layout.window_id, main, navigator

    def _restore_navigator(self, adapter: TmuxAdapter, view: sqlite3.Row,
                           layout: ViewLayout) -> ViewLayout:
        """Bring back a navigator that is not running, where it belongs.

        Dead (crashed or quit; the pane keeps remain-on-exit): respawned in
        place, in the view window or parked (one tmux process). Gone (killed)
        while the view is in navigator mode: a new one is split next to main
        (two). A refusal (someone else got there first) or any other tmux
        failure leaves the layout as it is, so the view still opens; reconcile
        and prefix + S try again.
        """
        view_id = view["view_id"]
        try:
            if layout.navigator is not None and layout.navigator.dead:
                adapter.respawn_navigators([(layout.navigator.pane_id,
                                             self.navigator_spawn(view_id))])
            elif layout.navigator is None and view["mode"] == ViewMode.NAVIGATOR and \
                    layout.main is not None:
                return adapter.set_mode(view_id=view_id, mode=ViewMode.NAVIGATOR,
                                        navigator=self.navigator_spawn(view_id))
        except (ServerIdentityMismatch, TmuxUnavailable):
            raise  # not the view's server any more: the caller decides
        except TmuxError:
            pass
        return layout

    def revive_navigators(self, snap: ServerSnapshot, tmux_server_id: str,
                          view_ids: set[str]) -> int:
        """Respawn, in place, every dead navigator pane of ``view_ids`` in ``snap``.

        ``snap`` must be a reading of the server ``tmux_server_id``; the
        respawns are identity-guarded against it and gated on each pane's tags,
        all in one tmux process. Returns how many navigators run again.
        """
        dead = [(pane.pane_id, self.navigator_spawn(pane.serves_view)) for pane in snap
                if pane.role is PaneRole.NAVIGATOR and pane.dead and
                pane.serves_view in view_ids]
        if not dead:
            return 0
        adapter = self.adapter_for(tmux_server_id)
        check_identity(adapter.expected, snap.identity)
        results = adapter.respawn_navigators(dead)
        return sum(result == "ok" for result in results.values())

    def navigator_spawn(self, view_id: str) -> NavigatorSpawn:
        """The navigator pane of ``view_id``: its argv and its pane environment."""
        return NavigatorSpawn(view_id=view_id, command=tuple(self.navigator_argv(view_id)),
                              env={**_switchboard_env(self.engine), ENV_VIEW_ID: view_id})

    def navigator_argv(self, view_id: str) -> list[str]:
        """The navigator pane's program: `switchboard ui --view VIEW`, bound to its view."""
        if self.navigator_command is not None:
            return list(self.navigator_command)
        return [sys.executable, "-m", "navigator.cli", "ui", "--view", view_id]

    def navigator_key(self) -> KeyBinding:
        """`prefix + S` in any view window: bring the navigator pane back.

        Direct mode parks the navigator (fenced), so its own keys cannot undo
        it; this binding runs `switchboard view mode <view> navigator` for the
        view of the window the key was pressed in (`#{@sb_view}`, quoted by
        tmux), with this home's SWITCHBOARD_HOME/CONFIG. Outside a view window
        it does nothing; a failure is shown by tmux in the pane.
        """
        env = " ".join(f"{name}={shlex.quote(value)}"
                       for name, value in _switchboard_env(self.engine).items())
        literal = (f"exec env {env} {shlex.quote(sys.executable)} -m navigator.cli view mode "
                   '"$view" navigator >/dev/null').replace("#", "##")
        shell = f'view=#{{q:{OPT_VIEW}}}; [ -n "$view" ] || exit 0; {literal}'
        return KeyBinding(table="prefix", key=NAVIGATOR_KEY, shell_command=shell,
                          marker="navigator.cli view mode")

    def main_pane(self, view: sqlite3.Row) -> str | None:
        """Which pane sits in the view's main position, re-read from its own server."""
        if not view["tmux_window_id"]:
            return None
        snap = self._checked_snapshot(self.adapter_for(view["tmux_server_id"]))
        layout = snap.view(view["view_id"])
        return layout.main.pane_id if layout is not None and layout.main is not None else None

    def present(self, view: sqlite3.Row, target_pane: str | None, *,
                launch_gate: str | None = None, enable_input: bool = True) -> str | None:
        """Swap ``target_pane`` into main, park (and fence) the pane that was there.

        One guarded tmux process. A staged target (never shown) gets its
        launch gate signalled in the same command group as the swap, so its
        provider execs only once it occupies main. ``target_pane`` None shows
        the view's placeholder (an empty frame). Returns the pane in main
        afterwards, as tmux re-read it, or None if the view has no window.
        Refusals (PlacementRefused, UnmanagedPane, PaneNotFound,
        ServerIdentityMismatch) guarantee nothing moved.
        """
        if not view["tmux_window_id"]:
            return None
        adapter = self.adapter_for(view["tmux_server_id"])
        if target_pane is None:
            return self._present_placeholder(view, adapter)
        main = view["main_pane_id"] or self.main_pane(view)
        if main is None:
            raise PlacementRefused(f"view {view['view_id']} has no single main pane; reconcile it.")
        surface = self._surface_of_pane(view["tmux_server_id"], target_pane)
        gate = launch_gate or (surface[1] if surface is not None else None)
        if main == target_pane:
            # Nothing to swap, but the recorded locator is only evidence on its own
            # server: re-read it behind the identity guard (and open a pending gate).
            output = run_guarded(self.runner, adapter.expected, [
                pane_state_command(main), *([("wait-for", "-S", gate)] if gate else [])])
            shown = pane_lines(output.stdout)
            in_main = bool(shown) and shown[0].view_id == view["view_id"] and \
                not shown[0].parked
            return main if in_main else None
        presented = adapter.present(
            main_pane=main, target_pane=target_pane, view_id=view["view_id"],
            target_surface_id=surface[0] if surface is not None else None, launch_gate=gate,
            enable_target_input=enable_input)
        in_main_pane = presented.main
        self._record_main(view["view_id"], in_main_pane.pane_id)
        return in_main_pane.pane_id if in_main_pane.view_id == view["view_id"] \
            and not in_main_pane.parked else None

    def _record_main(self, view_id: str, pane_id: str) -> None:
        views_ops.set_main_pane(self.engine.conn, view_id, pane_id, self.engine.now())

    def _surface_of_pane(self, tmux_server_id: str | None,
                         pane_id: str) -> tuple[str, str | None] | None:
        """(surface id, launch gate if its placement is still staged) of a live pane."""
        row = self.engine.conn.execute(
            "SELECT s.surface_id, s.launch_id, p.state FROM surfaces s LEFT JOIN"
            " frame_placements p ON p.surface_id = s.surface_id AND p.state <> 'orphaned'"
            " WHERE s.pane_id = ? AND s.tmux_server_id IS ? AND s.lifecycle_state = 'live'",
            (pane_id, tmux_server_id)).fetchone()
        if row is None:
            return None
        return row[0], gate_name(row[1]) if row[2] == "staged" else None

    def _present_placeholder(self, view: sqlite3.Row, adapter: TmuxAdapter) -> str | None:
        """Show the view's placeholder in main (an empty frame); park what was there."""
        view_id = view["view_id"]
        snap = self._checked_snapshot(adapter)
        layout = snap.view(view_id)
        if layout is None or layout.main is None:
            raise PlacementRefused(f"view {view_id} has no single main pane; reconcile it.")
        if layout.main.role is PaneRole.PLACEHOLDER:
            self._record_main(view_id, layout.main.pane_id)
            return layout.main.pane_id
        placeholder = next((p for p in snap if p.role is PaneRole.PLACEHOLDER and p.parked
                            and p.serves_view == view_id and not p.dead), None)
        if placeholder is None:
            placeholder = self._new_placeholder(adapter, view_id)
        main, held = layout.main.pane_id, placeholder.pane_id
        is_placeholder = equals(f"#{{{OPT_ROLE}}}", PaneRole.PLACEHOLDER)
        output = run_guarded(self.runner, adapter.expected, [
            guarded([
                Check(held, both(is_placeholder, f"#{{{OPT_HOLDING}}}"), "placeholder_moved"),
                Check(main, both(equals(f"#{{{OPT_VIEW}}}", view_id),
                                 f"#{{!=:#{{{OPT_ROLE}}},{PaneRole.NAVIGATOR}}}"),
                      "main_not_in_view"),
            ], [("swap-pane", "-d", "-Z", "-s", held, "-t", main),
                ("select-pane", "-d", "-t", main),
                ("select-pane", "-e", "-t", held)]),
            pane_state_command(held),
        ])
        result = outcome(output.stdout)
        if result != "ok":
            raise PlacementRefused(f"showing the placeholder of view {view_id} was refused "
                                   f"({result}); nothing moved. Reconcile the view.")
        self._record_main(view_id, held)
        return held

    def restore_main(self, view: sqlite3.Row) -> str | None:
        """A view window left with only its navigator (the pane in main was killed):
        split a placeholder in as main, right of the navigator. One guarded process.

        Gated on the navigator being this view's and alone in its window, so a
        window that has a main again (someone else repaired it) is left alone.
        Returns the new main pane, or None when nothing needed or was done.
        """
        view_id = view["view_id"]
        adapter = self.adapter_for(view["tmux_server_id"])
        layout = self._checked_snapshot(adapter).view(view_id)
        if layout is None or layout.main is not None or layout.extra_panes or \
                layout.navigator is None or layout.navigator.parked:
            return None
        nav, window = layout.navigator.pane_id, layout.window_id
        output = run_guarded(self.runner, adapter.expected, [
            *gated([Check(nav, both(equals("#{window_id}", window),
                                    equals("#{window_panes}", "1"),
                                    equals(f"#{{{OPT_SERVES}}}", view_id)), "main_present")], [
                ("split-window", "-h", "-t", nav, "--", *self.placeholder_command),
                ("set-option", "-p", "-t", window, OPT_ROLE, PaneRole.PLACEHOLDER),
                ("set-option", "-p", "-t", window, OPT_SERVES, view_id),
                ("set-option", "-p", "-t", window, "remain-on-exit", "on"),
                ("resize-pane", "-t", nav, "-x", str(topology.DEFAULT_NAVIGATOR_WIDTH)),
                ("select-pane", "-t", nav),
            ]),
        ], refusal_stops=True)
        if outcomes(output.stdout, missing_raises=False) != ["ok"]:
            return None
        layout = self._checked_snapshot(adapter).view(view_id)
        if layout is None or layout.main is None:
            return None
        self._record_main(view_id, layout.main.pane_id)
        return layout.main.pane_id

    def _new_placeholder(self, adapter: TmuxAdapter, view_id: str) -> PaneSnapshot:
        name = f"sbp-{uuid.uuid4().hex[:12]}"
        window = f"={self.holding_session}:={name}"
        output = run_guarded(self.runner, adapter.expected, [
            ("new-window", "-d", "-t", f"={self.holding_session}:", "-n", name, "--",
             *self.placeholder_command),
            ("set-option", "-p", "-t", window, OPT_ROLE, PaneRole.PLACEHOLDER),
            ("set-option", "-p", "-t", window, OPT_SERVES, view_id),
            ("select-pane", "-d", "-t", window),
            pane_state_command(window),
        ])
        panes = pane_lines(output.stdout)
        if not panes:
            raise TmuxCommandFailed("the new placeholder pane was not reported")
        return panes[-1]

    def show_view(self, view: sqlite3.Row) -> None:
        """Switch the clients of the view session to this view's window."""
        if not view["tmux_window_id"] or not view["main_pane_id"]:
            raise Conflict(f"view {view['view_id']} has no tmux window yet; enter its "
                           "project first", code="view_not_live")
        self.adapter_for(view["tmux_server_id"]).show_view(
            view_id=view["view_id"], main_pane=view["main_pane_id"],
            window_id=view["tmux_window_id"])

    def layout_mode(self, view: sqlite3.Row) -> ViewMode | None:
        """The mode tmux shows for the view (navigator pane present or not), re-read."""
        if not view["tmux_window_id"]:
            return None
        layout = self._checked_snapshot(self.adapter_for(view["tmux_server_id"])).view(
            view["view_id"])
        return None if layout is None else ViewMode(layout.mode)

    def set_mode(self, view: sqlite3.Row, mode: ViewMode) -> None:
        """direct: park the navigator pane; navigator: bring it back. Zoom survives.

        On the way back a navigator that crashed or was quit is respawned in
        place (or, if its pane is gone, split anew), in the same batch as the move.
        """
        if not view["tmux_window_id"]:
            return
        adapter = self.adapter_for(view["tmux_server_id"])
        spawn = self.navigator_spawn(view["view_id"]) if mode is ViewMode.NAVIGATOR else None
        layout = adapter.set_mode(view_id=view["view_id"], mode=mode, navigator=spawn)
        self.engine.fault_point("mode_after_move")
        views_ops.set_zoom(self.engine.conn, view["view_id"], layout.zoomed)

    # ----------------------------------------------------------- launches

    def launch_pane(self, *, surface_id: str, launch_id: str, argv: list[str],
                    env: dict[str, str], cwd: str,
                    tmux_server_id: str | None = None) -> LaunchedPane:
        """Create the provider pane parked in holding, gated until it is placed in main.

        One process: created, tagged ``@sb_surface``, fenced and re-read
        together; ``env`` goes only into this pane's environment.
        """
        adapter = self.adapter_for(tmux_server_id)
        command = (f"tmux -S {shlex.quote(self.socket_path)} wait-for "
                   f"{gate_name(launch_id)} && exec " + shlex.join(argv))
        pane = adapter.launch_staged_pane(surface_id=surface_id, command=[command],
                                          env=env, cwd=cwd)
        return LaunchedPane(pane.pane_id, pane.pane_pid or 0)

    def release_gate(self, launch_id: str, *, tmux_server_id: str | None = None) -> None:
        """Open a launch gate on its own (present opens it with the swap; prefer that)."""
        self.release_gate_named(gate_name(launch_id), self.adapter_for(tmux_server_id))

    def release_gate_named(self, gate: str, adapter: TmuxAdapter) -> None:
        run_guarded(self.runner, adapter.expected, [("wait-for", "-S", gate)])

    # ----------------------------------------------------------- panes

    def _surface_for(self, pane_id: str, surface_id: str | None,
                     states: tuple[str, ...]) -> tuple[str, str | None]:
        """(surface id, recorded server) owning ``pane_id``; the live server's first."""
        live = self._live.expected if self._live is not None else None
        marks = ", ".join("?" for _ in states)
        rows = self.engine.conn.execute(
            "SELECT s.surface_id, s.tmux_server_id, t.socket_path, t.server_pid,"
            " t.server_start_time FROM surfaces s LEFT JOIN tmux_servers t"
            " ON t.tmux_server_id = s.tmux_server_id WHERE s.pane_id = ?"
            f" AND s.lifecycle_state IN ({marks}) AND (? IS NULL OR s.surface_id = ?)"
            " ORDER BY s.updated_at DESC",
            (pane_id, *states, surface_id, surface_id)).fetchall()
        if not rows:
            raise UnmanagedPane(f"pane {pane_id} belongs to no Switchboard surface; refusing")
        for row in rows:
            if live is not None and row[2] is not None and \
                    ServerIdentity(row[2], int(row[3]), int(row[4])) == live:
                return row[0], row[1]
        return rows[0][0], rows[0][1]

    def paste_control(self, pane_id: str, *, surface_id: str | None = None) -> ControlSubmission:
        """The fenced control turn (one process); refused unless the pane is input-off.

        The caller has already counted the submission: any exception means
        ``uncertain``, never a retry.
        """
        surface, server = self._surface_for(pane_id, surface_id, ("live",))
        return self.adapter_for(server).submit_control_line(pane_id=pane_id, surface_id=surface)

    def enable_input(self, pane_id: str, *, surface_id: str | None = None) -> None:
        surface, server = self._surface_for(pane_id, surface_id, ("live",))
        self.adapter_for(server).enable_input(pane_id=pane_id, surface_id=surface)

    def fence(self, pane_id: str, surface_id: str) -> None:
        """Disable input of a managed pane (before a control turn into a shown pane)."""
        surface, server = self._surface_for(pane_id, surface_id, ("live",))
        self.adapter_for(server).disable_input(pane_id=pane_id, surface_id=surface)

    def lift_fence(self, pane_id: str, surface_id: str) -> bool:
        """Re-enable input of a managed pane shown in main (never a parked one: every
        holding pane stays fenced). True if its input is on afterwards."""
        try:
            surface, server = self._surface_for(pane_id, surface_id, ("live",))
            adapter = self.adapter_for(server)
            pane = self._checked_snapshot(adapter).pane(pane_id)
            if pane is None or pane.parked or pane.surface_id != surface:
                return False
            if not pane.input_off:
                return True
            return not adapter.enable_input(pane_id=pane_id, surface_id=surface).input_off
        except TmuxError:
            return False

    def kill(self, pane_id: str, *, surface_id: str | None = None) -> bool:
        """Kill only the exact parked, launch-owned pane of a surface; True if it is gone.

        Refused (False) for an untagged pane, a pane on screen or sharing a
        window, or a locator of another server generation.
        """
        try:
            surface, server = self._surface_for(pane_id, surface_id,
                                                ("live", "dead", "retired", "orphaned"))
            self.adapter_for(server).kill_surface_pane(pane_id=pane_id, surface_id=surface)
        except PaneNotFound:
            return True
        except (UnmanagedPane, PlacementRefused, ServerIdentityMismatch, TmuxUnavailable):
            return False
        return True

    def kill_unrecorded(self, pane_id: str, surface_id: str, tmux_server_id: str) -> bool:
        """Kill the pane tagged ``@sb_surface=surface_id`` that a launch made but never
        recorded (interrupted before 'started'); the same adapter guards as ``kill``."""
        try:
            self.adapter_for(tmux_server_id).kill_surface_pane(pane_id=pane_id,
                                                               surface_id=surface_id)
        except PaneNotFound:
            return True
        except (UnmanagedPane, PlacementRefused, ServerIdentityMismatch, TmuxUnavailable):
            return False
        return True

    def list_panes(self) -> dict[str, str]:
        """pane id -> @sb_surface ('' if none) for every pane of the server (one process)."""
        snap = self.snapshot()
        if snap is None:
            return {}
        return {pane.pane_id: pane.surface_id or "" for pane in snap}


def _switchboard_env(engine: Engine) -> dict[str, str]:
    """The variables that make a child process open this engine's registry."""
    home = getattr(engine, "home", None)
    return home.child_env() if home is not None else {}


def attach_stage(engine: Engine, home: Home) -> TmuxStage:
    stage = TmuxStage(engine, socket_path_for(engine, home))
    engine.stage = stage
    return stage
