"""The typed interface the engine calls: one object bound to one server generation.

`TmuxPort` is what the engine depends on (tests may fake it); `TmuxAdapter`
implements it with a counted runner and the identity stored in the
TmuxServer row, so every mutation is refused on a restarted server.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Protocol

import core.tmux.batches as batches
import core.tmux.control_input as control_input
import core.tmux.topology as topology
from core.model.defaults import HOLDING_SESSION
from core.model.enums import ViewMode
from core.tmux.control_input import ControlSubmission
from core.tmux.gates import gated_exec_line
from core.tmux.identity import ServerIdentity, read_identity, verify_identity
from core.tmux.panes import (
    PaneSnapshot,
    ServerSnapshot,
    ViewLayout,
    checked_snapshot,
    snapshot,
    tag_pane,
)
from core.tmux.runner import TmuxRunner
from core.tmux.topology import DEFAULT_NAVIGATOR_WIDTH, NavigatorSpawn, Presented


class TmuxPort(Protocol):
    """The engine's hands: every call is at most a few tmux processes."""

    expected: ServerIdentity

    def verify(self) -> ServerIdentity: ...
    def snapshot(self) -> ServerSnapshot: ...
    def ensure_holding_session(self) -> bool: ...
    def create_view(self, *, session_name: str, view_id: str, window_name: str,
                    navigator_command: Sequence[str], main_command: Sequence[str],
                    **options: object) -> ViewLayout: ...
    def launch_staged_pane(self, *, surface_id: str, command: Sequence[str],
                           env: Mapping[str, str] | None = None,
                           cwd: str | None = None) -> PaneSnapshot: ...
    def present(self, *, main_pane: str, target_pane: str, view_id: str | None = None,
                target_surface_id: str | None = None, enable_target_input: bool = True,
                launch_gate: str | None = None) -> Presented: ...
    def set_mode(self, *, view_id: str, mode: ViewMode,
                 navigator: NavigatorSpawn | None = None) -> ViewLayout: ...
    def respawn_navigators(self, dead: Sequence[tuple[str, NavigatorSpawn]], *,
                           leave_status: int | None = None) -> dict[str, str]: ...
    def show_view(self, *, view_id: str, main_pane: str, window_id: str) -> None: ...
    def kill_surface_pane(self, *, pane_id: str, surface_id: str) -> None: ...
    def submit_control_line(self, *, pane_id: str, surface_id: str,
                            text: str = ...) -> ControlSubmission: ...
    def enable_input(self, *, pane_id: str, surface_id: str) -> PaneSnapshot: ...
    def disable_input(self, *, pane_id: str, surface_id: str) -> PaneSnapshot: ...


class TmuxAdapter:
    """TmuxPort over a real server; never the default server (a socket path is required)."""

    def __init__(
        self,
        runner: TmuxRunner,
        expected: ServerIdentity,
        *,
        holding_session: str = HOLDING_SESSION,
        navigator_width: int = DEFAULT_NAVIGATOR_WIDTH,
    ) -> None:
        self.runner = runner
        self.expected = expected
        self.holding_session = holding_session
        self.navigator_width = navigator_width

    @classmethod
    def bind(cls, expected: ServerIdentity, **settings: object) -> TmuxAdapter:
        """Adapter for a stored TmuxServer row; mutations fail if the server restarted."""
        return cls(TmuxRunner(expected.socket_path), expected, **settings)  # type: ignore[arg-type]

    @classmethod
    def start(
        cls,
        socket_path: str | os.PathLike[str],
        *,
        config_file: str | None = None,
        holding_session: str = HOLDING_SESSION,
        navigator_width: int = DEFAULT_NAVIGATOR_WIDTH,
    ) -> TmuxAdapter:
        """Ensure a server with a holding session runs on `socket_path`; bind to it.

        This is where a new TmuxServer identity comes from: read from tmux
        after the holding session exists (two tmux processes).
        """
        runner = TmuxRunner(socket_path, config_file=config_file)
        topology.ensure_holding_session(runner, holding_session=holding_session)
        return cls(runner, read_identity(runner), holding_session=holding_session,
                   navigator_width=navigator_width)

    @property
    def invocations(self) -> int:
        return self.runner.invocations

    def verify(self) -> ServerIdentity:
        return verify_identity(self.runner, self.expected)

    def snapshot(self) -> ServerSnapshot:
        """All panes in one process; the caller compares `.identity` to decide trust."""
        return snapshot(self.runner)

    def checked_snapshot(self) -> ServerSnapshot:
        """One snapshot, refused (ServerIdentityMismatch) unless it is this generation's."""
        return checked_snapshot(self.runner, self.expected)

    def ensure_holding_session(self) -> bool:
        return topology.ensure_holding_session(
            self.runner, self.expected, holding_session=self.holding_session
        )

    def create_view(self, *, session_name: str, view_id: str, window_name: str,
                    navigator_command: Sequence[str], main_command: Sequence[str],
                    **options: object) -> ViewLayout:
        options.setdefault("navigator_width", self.navigator_width)
        return topology.create_view(
            self.runner, self.expected, session_name=session_name, view_id=view_id,
            window_name=window_name, navigator_command=navigator_command,
            main_command=main_command, **options,  # type: ignore[arg-type]
        )

    def launch_staged_pane(self, *, surface_id: str, command: Sequence[str],
                           env: Mapping[str, str] | None = None,
                           cwd: str | None = None) -> PaneSnapshot:
        return topology.launch_staged_pane(
            self.runner, self.expected, surface_id=surface_id, command=command, env=env, cwd=cwd,
            holding_session=self.holding_session,
        )

    def launch_gated_pane(self, *, surface_id: str, gate: str, argv: Sequence[str],
                          env: Mapping[str, str] | None = None,
                          cwd: str | None = None) -> PaneSnapshot:
        """A staged pane whose shell waits for ``gate`` on this server, then execs ``argv``."""
        line = gated_exec_line(self.runner.socket_path, gate, argv)
        return self.launch_staged_pane(surface_id=surface_id, command=[line], env=env, cwd=cwd)

    def reread_pane(self, pane_id: str, *, open_gate: str | None = None) -> PaneSnapshot | None:
        return batches.reread_pane(self.runner, self.expected, pane_id, open_gate=open_gate)

    def read_screens(self, pane_ids: Sequence[str], lines: int) -> dict[str, list[str]]:
        """The bottom ``lines`` of each pane, in one guarded process (read only)."""
        from core.tmux.screens import read_screens

        return read_screens(self.runner, self.expected, pane_ids, lines)

    def present_placeholder(self, *, view_id: str, placeholder_command: Sequence[str]) -> str:
        return batches.present_placeholder(
            self.runner, self.expected, view_id=view_id, holding_session=self.holding_session,
            placeholder_command=placeholder_command)

    def restore_main(self, *, view_id: str, placeholder_command: Sequence[str]) -> str | None:
        return batches.restore_main(self.runner, self.expected, view_id=view_id,
                                    placeholder_command=placeholder_command)

    def evict_foreign(self, moves: Sequence[tuple[str, str, str]],
                      refit_windows: Sequence[str] = ()) -> dict[str, PaneSnapshot | None]:
        """Foreign panes (pane, view, frame) out of view windows into holding, and the
        navigators of ``refit_windows`` back to their width, in one process
        (``core.tmux.batches.evict_foreign``)."""
        return batches.evict_foreign(self.runner, self.expected,
                                     holding_session=self.holding_session, moves=moves,
                                     refit_windows=refit_windows)

    def show_extra(self, *, view_id: str, frame_id: str, extra_pane: str,
                   main_pane: str) -> PaneSnapshot | None:
        return batches.show_extra(self.runner, self.expected, view_id=view_id,
                                  frame_id=frame_id, extra_pane=extra_pane, main_pane=main_pane)

    def kill_extra(self, *, frame_id: str, extra_pane: str) -> bool:
        return batches.kill_extra(self.runner, self.expected, frame_id=frame_id,
                                  extra_pane=extra_pane)

    def present(self, *, main_pane: str, target_pane: str, view_id: str | None = None,
                target_surface_id: str | None = None, enable_target_input: bool = True,
                launch_gate: str | None = None) -> Presented:
        return topology.present(
            self.runner, self.expected, main_pane=main_pane, target_pane=target_pane,
            view_id=view_id, target_surface_id=target_surface_id,
            enable_target_input=enable_target_input, launch_gate=launch_gate,
        )

    def set_mode(self, *, view_id: str, mode: ViewMode,
                 navigator: NavigatorSpawn | None = None) -> ViewLayout:
        return topology.set_mode(
            self.runner, self.expected, view_id=view_id, mode=mode,
            navigator_width=self.navigator_width, holding_session=self.holding_session,
            navigator=navigator,
        )

    def respawn_navigators(self, dead: Sequence[tuple[str, NavigatorSpawn]], *,
                           leave_status: int | None = None) -> dict[str, str]:
        """Restart dead navigator panes in place (one process); pane id -> "ok" or why not.
        A pane dead with ``leave_status`` when the batch runs is left as it is."""
        return topology.respawn_navigators(self.runner, self.expected, dead,
                                           navigator_width=self.navigator_width,
                                           leave_status=leave_status)

    def show_view(self, *, view_id: str, main_pane: str, window_id: str) -> None:
        topology.show_view(self.runner, self.expected, view_id=view_id, main_pane=main_pane,
                           window_id=window_id)

    def kill_surface_pane(self, *, pane_id: str, surface_id: str) -> None:
        topology.kill_surface_pane(
            self.runner, self.expected, pane_id=pane_id, surface_id=surface_id
        )

    def tag_pane(self, pane_id: str, tags: Mapping[str, str]) -> PaneSnapshot:
        return tag_pane(self.runner, self.expected, pane_id, tags)

    def submit_control_line(self, *, pane_id: str, surface_id: str,
                            text: str = control_input.CONTROL_CLAIM_TEXT) -> ControlSubmission:
        return control_input.submit_control_line(
            self.runner, self.expected, pane_id=pane_id, surface_id=surface_id, text=text
        )

    def enable_input(self, *, pane_id: str, surface_id: str) -> PaneSnapshot:
        return control_input.enable_input(
            self.runner, self.expected, pane_id=pane_id, surface_id=surface_id
        )

    def lift_fence(self, *, pane_id: str, surface_id: str) -> bool:
        return control_input.lift_fence(self.runner, self.expected, pane_id=pane_id,
                                        surface_id=surface_id)

    def disable_input(self, *, pane_id: str, surface_id: str) -> PaneSnapshot:
        return control_input.disable_input(
            self.runner, self.expected, pane_id=pane_id, surface_id=surface_id
        )
