"""The engine's hands in tmux: a registry-aware facade over ``core.tmux.TmuxAdapter``.

Every stored locator (a view's window and main pane, a surface's pane) belongs
to the tmux server generation recorded in its ``tmux_servers`` row. The stage
binds a ``TmuxAdapter`` to exactly that identity, so every mutation carries the
adapter's in-tmux identity guard: on a restarted server that reissued ``%0``
the batch is refused (``ServerIdentityMismatch``) and nothing is touched;
``core.reconcile.reconcile.reconcile`` then opens a ``server_restarted`` recovery.

Cost: ``present`` (with its launch gate), ``launch_pane``, ``paste_control``
and ``kill`` are one tmux process each; ``set_mode`` two (a dead navigator is
respawned in the same batch); so a transition stays within three.

The stage itself only reads the registry rows a step needs (through
``storage.operations``), calls one adapter operation per step and records what
tmux reported; the batches are built in ``core.tmux`` (``topology``,
``batches``, ``control_input``), locks in ``locks``, shell lines in ``gates``
and ``navigator_pane``.
"""

from __future__ import annotations

import os
import sqlite3
import uuid
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import astuple
from typing import TYPE_CHECKING

from core.context.stage_port import LaunchedPane, PresentRecord
from core.model.enums import ViewMode
from core.model.errors import Conflict, TmuxError
from core.model.placeholder import placeholder_argv
from core.tmux.adapter import TmuxAdapter
from core.tmux.binding import ServerBindings
from core.tmux.control_input import CONTROL_CLAIM_TEXT, ControlSubmission
from core.tmux.errors import (
    PaneNotFound,
    PlacementRefused,
    ServerIdentityMismatch,
    TmuxUnavailable,
    UnmanagedPane,
)
from core.tmux.gates import gate_name
from core.tmux.identity import ServerIdentity, check_identity
from core.tmux.locks import exclusive_flock, views_lock_path
from core.tmux.navigator_pane import (
    ASLEEP_STATUS,
    ENV_VIEW_ID,
    NAVIGATOR_KEY,
    dead_navigators,
    default_navigator_argv,
    navigator_key_binding,
    navigator_spawn,
    restore_navigator,
)
from core.tmux.panes import ServerSnapshot, snapshot
from core.tmux.runner import TmuxRunner
from core.tmux.topology import KeyBinding, NavigatorSpawn
from storage.operations import pane_owners
from storage.operations import servers as servers_ops
from storage.operations import views as views_ops

if TYPE_CHECKING:
    from core.config.home import Home
    from core.context.context import Context

__all__ = ["CONTROL_TEMPLATE", "ENV_VIEW_ID", "NAVIGATOR_KEY", "LaunchedPane", "TmuxStage",
           "attach_stage", "gate_name", "socket_path_for"]

CONTROL_TEMPLATE = CONTROL_CLAIM_TEXT
"""control.claim.v1, re-exported for the launcher (the resume_initial prompt)."""

KILL_STATES = ("live", "dead", "retired", "orphaned")
"""Surface states whose recorded pane ``kill`` may still remove (a leftover pane)."""


def socket_path_for(ctx: Context, home: Home) -> str:
    return ctx.config.tmux.socket_path or str(home.root / "tmux.sock")


def is_private_socket(ctx: Context, socket_path: str) -> bool:
    """Whether the server on ``socket_path`` is Switchboard's own: the socket lies in
    the Switchboard home (the default when the config names none, and the demo's).
    A server named by ``init`` inside tmux or ``--tmux-socket`` is the person's: its
    options are theirs (``core.tmux.topology.PRIVATE_SERVER_OPTIONS``)."""
    home = getattr(ctx, "home", None)
    if home is not None:
        return os.path.dirname(os.path.abspath(socket_path)) == os.path.abspath(home.root)
    return ctx.config.tmux.socket_path is None


class TmuxStage:
    """Physical effects for one engine on one tmux socket.

    Locators are only acted on through an adapter bound to the identity of the
    server that issued them; the live server's identity is read once per
    process (``ensure_server``) and re-read by ``reconcile``.
    """

    def __init__(self, ctx: Context, socket_path: str) -> None:
        self.engine = ctx
        self.socket_path = socket_path
        self.runner = TmuxRunner(socket_path)
        self.view_session = ctx.config.tmux.view_session
        self.navigator_command: list[str] | None = None
        """argv of the navigator pane; None = `python -m navigator.cli ui` (tests override)."""
        self.placeholder_command: list[str] = placeholder_argv()
        self.servers = ServerBindings(self.runner,
                                      holding_session=ctx.config.tmux.holding_session,
                                      navigator_width=ctx.config.tmux.navigator_width,
                                      private=is_private_socket(ctx, socket_path))

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
        return self.servers.ensure_live(refresh=refresh)

    def adopt(self, identity: ServerIdentity) -> None:
        """Bind new launches and views to ``identity`` (reconcile read it from tmux)."""
        self.servers.adopt(identity)

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
        found = servers_ops.tmux_server_id_of(
            conn, socket_path=identity.socket_path, server_pid=identity.server_pid,
            server_start_time=identity.server_start_time)
        if found is not None:
            return found
        server_id = str(uuid.uuid4())
        servers_ops.insert_tmux_server(
            conn, tmux_server_id=server_id, host_id=self.engine.host_id,
            socket_path=identity.socket_path, server_pid=identity.server_pid,
            server_start_time=identity.server_start_time, now=self.engine.now())
        return server_id

    def read_screens(self, tmux_server_id: str, pane_ids: Sequence[str],
                     lines: int) -> dict[str, list[str]]:
        """The bottom lines of panes of the recorded server (one tmux process)."""
        return self.adapter_for(tmux_server_id).read_screens(pane_ids, lines)

    def adapter_for(self, tmux_server_id: str | None) -> TmuxAdapter:
        """An adapter bound to the recorded server ``tmux_server_id`` (None: the live one)."""
        if tmux_server_id is None:
            return self.servers.live_adapter()
        return self.servers.recorded(tmux_server_id, self._recorded_identity)

    def _recorded_identity(self, tmux_server_id: str) -> ServerIdentity:
        generation = servers_ops.tmux_server_generation(self.engine.conn, tmux_server_id)
        if generation is None:
            raise ServerIdentityMismatch(
                f"tmux server {tmux_server_id} is not recorded; its locators cannot be "
                "trusted. Run `switchboard reconcile`.")
        return ServerIdentity(*generation)

    # ----------------------------------------------------------- views

    def view_lock(self, timeout: float = 10.0) -> AbstractContextManager[None]:
        """Serialize view-window creation across processes on this socket (flock)."""
        return exclusive_flock(views_lock_path(self.socket_path), timeout)

    def ensure_view(self, view: sqlite3.Row, title: str, *,
                    rebind: bool = False) -> tuple[str, str, str | None]:
        """The view's window (placeholder main + a running navigator), created if missing.

        A view recorded on another server generation is refused
        (ServerIdentityMismatch) unless ``rebind`` (the server_restarted
        recovery), which builds a fresh window on the live server. An existing
        window whose navigator crashed or was quit gets it back
        (``navigator_pane.restore_navigator``).
        """
        # A recorded view needs no live-server set-up: its own identity is checked below.
        adapter = self.adapter_for(None if rebind else view["tmux_server_id"])
        view_id = view["view_id"]
        layout = adapter.checked_snapshot().view(view_id)
        if layout is None:
            spawn = self.navigator_spawn(view_id)
            layout = adapter.create_view(
                session_name=self.view_session, view_id=view_id,
                window_name=title[:30] or "view",
                navigator_command=spawn.command, navigator_env=spawn.env,
                main_command=self.placeholder_command,
                key_binding=self.navigator_key())
            if view["mode"] == ViewMode.DIRECT:
                layout = adapter.set_mode(view_id=view_id, mode=ViewMode.DIRECT)
        else:
            layout = restore_navigator(adapter, layout, ViewMode(view["mode"]),
                                       self.navigator_spawn(view_id))
        main = layout.main.pane_id if layout.main is not None else view["main_pane_id"]
        navigator = layout.navigator.pane_id if layout.navigator is not None else None
        return layout.window_id, main, navigator

    def revive_navigators(self, snap: ServerSnapshot, tmux_server_id: str,
                          view_ids: set[str]) -> int:
        """Respawn, in place, every dead navigator pane of ``view_ids`` in ``snap``.

        ``snap`` must be a reading of the server ``tmux_server_id``; the
        respawns are identity-guarded against it and gated on each pane's tags,
        all in one tmux process. Returns how many navigators run again.
        """
        dead = [(pane_id, self.navigator_spawn(view_id))
                for pane_id, view_id in dead_navigators(snap, view_ids)]
        if not dead:
            return 0
        adapter = self.adapter_for(tmux_server_id)
        check_identity(adapter.expected, snap.identity)
        # ``snap`` may be older than a park (another process's): a pane asleep by the
        # time the batch runs is left asleep (only showing the view wakes it).
        results = adapter.respawn_navigators(dead, leave_status=ASLEEP_STATUS)
        return sum(result == "ok" for result in results.values())

    def navigator_spawn(self, view_id: str) -> NavigatorSpawn:
        """The navigator pane of ``view_id``: its argv and its pane environment."""
        return navigator_spawn(view_id, self.navigator_argv(view_id),
                               _switchboard_env(self.engine))

    def navigator_argv(self, view_id: str) -> list[str]:
        """The navigator pane's program: `switchboard ui --view VIEW`, bound to its view."""
        if self.navigator_command is not None:
            return list(self.navigator_command)
        return default_navigator_argv(view_id)

    def navigator_key(self) -> KeyBinding:
        """`prefix + S` in any view window brings the navigator pane back (this home's env)."""
        return navigator_key_binding(_switchboard_env(self.engine))

    def main_pane(self, view: sqlite3.Row) -> str | None:
        """Which pane sits in the view's main position, re-read from its own server."""
        if not view["tmux_window_id"]:
            return None
        snap = self.adapter_for(view["tmux_server_id"]).checked_snapshot()
        layout = snap.view(view["view_id"])
        return layout.main.pane_id if layout is not None and layout.main is not None else None

    def present(self, view: sqlite3.Row, target_pane: str | None, *,
                launch_gate: str | None = None, enable_input: bool = True) -> str | None:
        """``present_unrecorded``, then the pane it left in main recorded as the view's
        main (its own commit); returns the pane shown, or None."""
        presented = self.present_unrecorded(view, target_pane, launch_gate=launch_gate,
                                            enable_input=enable_input)
        if presented.main is not None:
            self._record_main(view["view_id"], presented.main)
        return presented.shown

    def present_unrecorded(self, view: sqlite3.Row, target_pane: str | None, *,
                           launch_gate: str | None = None, enable_input: bool = True
                           ) -> PresentRecord:
        """Swap ``target_pane`` into main, park (and fence) the pane that was there.

        One guarded tmux process. A staged target (never shown) gets its
        launch gate signalled in the same command group as the swap, so its
        provider execs only once it occupies main. ``target_pane`` None shows
        the view's placeholder (an empty frame). Returns the pane in main
        afterwards, as tmux re-read it, or None if the view has no window.
        Refusals (PlacementRefused, UnmanagedPane, PaneNotFound,
        ServerIdentityMismatch) guarantee nothing moved. Nothing is written to the
        registry: the caller records ``PresentRecord.main`` (a focus does so in the
        commit that records the move).
        """
        if not view["tmux_window_id"]:
            return PresentRecord(None, None)
        adapter = self.adapter_for(view["tmux_server_id"])
        view_id = view["view_id"]
        if target_pane is None:  # the placeholder (an empty frame); what was there is parked
            shown = adapter.present_placeholder(view_id=view_id,
                                                placeholder_command=self.placeholder_command)
            return PresentRecord(shown, shown)
        main = view["main_pane_id"] or self.main_pane(view)
        if main is None:
            raise PlacementRefused(f"view {view_id} has no single main pane; reconcile it.")
        owner = pane_owners.live_surface_of_pane(self.engine.conn, target_pane,
                                                 view["tmux_server_id"])
        gate = launch_gate or (gate_name(owner.launch_id) if owner and owner.staged else None)
        if main == target_pane:
            # Nothing to swap, but the recorded locator is only evidence on its own
            # server: re-read it behind the identity guard (and open a pending gate).
            reread = adapter.reread_pane(main, open_gate=gate)
            in_main = reread is not None and reread.view_id == view_id and not reread.parked
            return PresentRecord(None, main if in_main else None)
        in_main_pane = adapter.present(
            main_pane=main, target_pane=target_pane, view_id=view_id,
            target_surface_id=owner.surface_id if owner is not None else None,
            launch_gate=gate, enable_target_input=enable_input).main
        landed = in_main_pane.view_id == view_id and not in_main_pane.parked
        return PresentRecord(in_main_pane.pane_id, in_main_pane.pane_id if landed else None)

    def _record_main(self, view_id: str, pane_id: str) -> None:
        views_ops.set_main_pane(self.engine.conn, view_id, pane_id, self.engine.now())

    def restore_main(self, view: sqlite3.Row) -> str | None:
        """A view window left with only its navigator (the pane in main was killed):
        split a placeholder in as main, right of the navigator. One guarded process.

        Gated on the navigator being this view's and alone in its window, so a
        window that has a main again (someone else repaired it) is left alone.
        Returns the new main pane, or None when nothing needed or was done.
        """
        main = self.adapter_for(view["tmux_server_id"]).restore_main(
            view_id=view["view_id"], placeholder_command=self.placeholder_command)
        if main is not None:
            self._record_main(view["view_id"], main)
        return main

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
        layout = self.adapter_for(view["tmux_server_id"]).checked_snapshot().view(
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
        pane = self.adapter_for(tmux_server_id).launch_gated_pane(
            surface_id=surface_id, gate=gate_name(launch_id), argv=argv, env=env, cwd=cwd)
        return LaunchedPane(pane.pane_id, pane.pane_pid or 0)

    # ----------------------------------------------------------- panes

    def _surface_for(self, pane_id: str, surface_id: str | None,
                     states: tuple[str, ...]) -> tuple[str, str | None]:
        """(surface id, recorded server) owning ``pane_id``; the live server's first."""
        live = self.servers.live
        owner = pane_owners.pane_owner(
            self.engine.conn, pane_id, states, surface_id,
            prefer_server=astuple(live.expected) if live is not None else None)
        if owner is None:
            raise UnmanagedPane(f"pane {pane_id} belongs to no Switchboard surface; refusing")
        return owner.surface_id, owner.tmux_server_id

    def paste_control(self, pane_id: str, *, surface_id: str | None = None,
                      text: str = CONTROL_CLAIM_TEXT) -> ControlSubmission:
        """The fenced control turn (one process); refused unless the pane is input-off.
        ``text`` is one of ``core.model.control_line.FIXED_LINES`` (the claim line unless
        said otherwise); the adapter refuses any other.

        The caller has already counted the submission: any exception means
        ``uncertain``, never a retry.
        """
        surface, server = self._surface_for(pane_id, surface_id, ("live",))
        return self.adapter_for(server).submit_control_line(pane_id=pane_id, surface_id=surface,
                                                            text=text)

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
            return self.adapter_for(server).lift_fence(pane_id=pane_id, surface_id=surface)
        except TmuxError:
            return False

    def kill(self, pane_id: str, *, surface_id: str | None = None) -> bool:
        """Kill only the exact parked, launch-owned pane of a surface; True if it is gone.

        Refused (False) for an untagged pane, a pane on screen or sharing a
        window, or a locator of another server generation.
        """
        try:
            surface, server = self._surface_for(pane_id, surface_id, KILL_STATES)
        except UnmanagedPane:
            return False
        return self._kill_surface_pane(server, pane_id, surface)

    def kill_unrecorded(self, pane_id: str, surface_id: str, tmux_server_id: str) -> bool:
        """Kill the pane tagged ``@sb_surface=surface_id`` that a launch made but never
        recorded (interrupted before 'started'); the same adapter guards as ``kill``."""
        return self._kill_surface_pane(tmux_server_id, pane_id, surface_id)

    def _kill_surface_pane(self, tmux_server_id: str | None, pane_id: str,
                           surface_id: str) -> bool:
        try:
            self.adapter_for(tmux_server_id).kill_surface_pane(pane_id=pane_id,
                                                               surface_id=surface_id)
        except PaneNotFound:
            return True
        except (UnmanagedPane, PlacementRefused, ServerIdentityMismatch, TmuxUnavailable):
            return False
        return True


def _switchboard_env(ctx: Context) -> dict[str, str]:
    """The variables that make a child process open this engine's registry."""
    home = getattr(ctx, "home", None)
    return home.child_env() if home is not None else {}


def attach_stage(ctx: Context, home: Home) -> TmuxStage:
    stage = TmuxStage(ctx, socket_path_for(ctx, home))
    ctx.stage = stage
    return stage
