"""Which surface owns a recorded tmux pane locator: the reads behind every pane effect.

A pane id means something only on the server generation that issued it, and
after a restart two surfaces may have held the same ``%N``. The tmux stage
resolves a pane to its surface (and that surface's recorded server) before it
acts, so these lookups decide which identity guard a tmux batch carries; they
live here, beside the operations that write the same rows, rather than as
SQL inside the stage.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass


@dataclass(frozen=True)
class LivePane:
    """A live surface shown by a pane, and whether its placement is still staged."""

    surface_id: str
    launch_id: str
    staged: bool
    """True while its launch gate has not been opened (the placement is 'staged')."""


@dataclass(frozen=True)
class PaneOwner:
    """A surface that recorded a pane, with the server generation it recorded it on."""

    surface_id: str
    tmux_server_id: str | None
    server: tuple[str, int, int] | None
    """(socket path, server pid, server start time); None if the server is unrecorded."""


def live_surface_of_pane(conn: sqlite3.Connection, pane_id: str,
                         tmux_server_id: str | None) -> LivePane | None:
    """The live surface recorded in ``pane_id`` on ``tmux_server_id`` (None: no server)."""
    row = conn.execute(
        "SELECT s.surface_id, s.launch_id, p.state FROM surfaces s LEFT JOIN"
        " frame_placements p ON p.surface_id = s.surface_id AND p.state <> 'orphaned'"
        " WHERE s.pane_id = ? AND s.tmux_server_id IS ? AND s.lifecycle_state = 'live'",
        (pane_id, tmux_server_id)).fetchone()
    if row is None:
        return None
    return LivePane(surface_id=row[0], launch_id=row[1], staged=row[2] == "staged")


def pane_owner(conn: sqlite3.Connection, pane_id: str, states: tuple[str, ...],
               surface_id: str | None = None, *,
               prefer_server: tuple[str, int, int] | None = None) -> PaneOwner | None:
    """The surface in ``states`` that recorded ``pane_id`` (only ``surface_id`` if given).

    One recorded on ``prefer_server`` (socket path, pid, start time: the live
    generation) wins; otherwise the most recently updated one.
    """
    marks = ", ".join("?" for _ in states)
    rows = conn.execute(
        "SELECT s.surface_id, s.tmux_server_id, t.socket_path, t.server_pid,"
        " t.server_start_time FROM surfaces s LEFT JOIN tmux_servers t"
        " ON t.tmux_server_id = s.tmux_server_id WHERE s.pane_id = ?"
        f" AND s.lifecycle_state IN ({marks}) AND (? IS NULL OR s.surface_id = ?)"
        " ORDER BY s.updated_at DESC",
        (pane_id, *states, surface_id, surface_id)).fetchall()
    owners = [PaneOwner(surface_id=row[0], tmux_server_id=row[1],
                        server=None if row[2] is None else (row[2], int(row[3]), int(row[4])))
              for row in rows]
    preferred = (owner for owner in owners
                 if prefer_server is not None and owner.server == prefer_server)
    return next(preferred, owners[0] if owners else None)
