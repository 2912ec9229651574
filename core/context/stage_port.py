"""What the engine and its collaborators need from the tmux stage, as a type.

``Engine.stage`` is optional (registry-only front ends and most unit tests run
without tmux) and the real one, ``core.runtime.stage.TmuxStage``, pulls in the whole
tmux package. The engine, the sagas, launches, recovery and the commands
depend on this protocol instead: exactly the members they use, which
``TmuxStage`` satisfies structurally and a test double may implement.
Importing it costs nothing at run time (the tmux types are annotations only); the
stage's two result types live here, below both the stage and its users.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from core.model.enums import ViewMode
    from core.tmux.adapter import TmuxAdapter
    from core.tmux.control_input import ControlSubmission
    from core.tmux.identity import ServerIdentity
    from core.tmux.panes import ServerSnapshot
    from core.tmux.runner import TmuxRunner


@dataclass(frozen=True)
class LaunchedPane:
    """A launched agent pane: its id and its process."""

    pane_id: str
    pane_pid: int


@dataclass(frozen=True)
class PresentRecord:
    """What a present batch left in the view's main position, as tmux re-read it: the
    stage's record of a ``core.tmux.topology.Presented``."""

    main: str | None
    """The pane to record as the view's main (None: nothing to record)."""
    shown: str | None
    """That pane when it is the view's own and not parked (the move landed), else None."""


@runtime_checkable
class StagePort(Protocol):
    """The tmux effects of one home's private server, bound to its live generation."""

    socket_path: str
    """The private server's socket (commands compare it with ``$TMUX``)."""

    runner: TmuxRunner
    """The counted tmux runner, for read-only probes (doctor, preview, remote open)."""

    # -- the server
    def ensure_server(self, *, refresh: bool = False) -> ServerIdentity: ...
    def adopt(self, identity: ServerIdentity) -> None: ...
    def snapshot(self) -> ServerSnapshot | None: ...
    def server_row(self, conn: sqlite3.Connection,
                   identity: ServerIdentity | None = None) -> str: ...
    def adapter_for(self, tmux_server_id: str | None) -> TmuxAdapter: ...

    # -- views
    def view_lock(self, timeout: float = 10.0) -> AbstractContextManager[None]: ...
    def ensure_view(self, view: sqlite3.Row, title: str, *,
                    rebind: bool = False) -> tuple[str, str, str | None]: ...
    def revive_navigators(self, snap: ServerSnapshot, tmux_server_id: str,
                          view_ids: set[str]) -> int: ...
    def present(self, view: sqlite3.Row, target_pane: str | None, *,
                launch_gate: str | None = None, enable_input: bool = True) -> str | None: ...
    def present_unrecorded(self, view: sqlite3.Row, target_pane: str | None, *,
                           launch_gate: str | None = None, enable_input: bool = True
                           ) -> PresentRecord: ...
    def restore_main(self, view: sqlite3.Row) -> str | None: ...
    def show_view(self, view: sqlite3.Row) -> None: ...
    def layout_mode(self, view: sqlite3.Row) -> ViewMode | None: ...
    def set_mode(self, view: sqlite3.Row, mode: ViewMode) -> None: ...

    # -- agent panes
    def launch_pane(self, *, surface_id: str, launch_id: str, argv: list[str],
                    env: dict[str, str], cwd: str,
                    tmux_server_id: str | None = None) -> LaunchedPane: ...
    def paste_control(self, pane_id: str, *, surface_id: str | None = None,
                      text: str = ...) -> ControlSubmission: ...
    def fence(self, pane_id: str, surface_id: str) -> None: ...
    def lift_fence(self, pane_id: str, surface_id: str) -> bool: ...
    def kill(self, pane_id: str, *, surface_id: str | None = None) -> bool: ...
    def read_screens(self, tmux_server_id: str, pane_ids: Sequence[str],
                     lines: int) -> dict[str, list[str]]: ...
    def kill_unrecorded(self, pane_id: str, surface_id: str, tmux_server_id: str) -> bool: ...


__all__ = ["LaunchedPane", "PresentRecord", "StagePort"]
