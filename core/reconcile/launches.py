"""Reconcile's launch checks: starts interrupted before their pane was recorded, and
started agents no hook has bound in time.

The launcher authorizes a launch, creates its pane (tagged ``@sb_surface``)
and only then records it, so a start that died in between leaves the pane's
existence unknown: the tmux reading decides (adopt the pane, or fail the
launch and say so). A started provider whose hooks never arrive is only
reported (``bind_timeout``), never stopped.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

from core.model.enums import (
    Actionability,
    PlacementState,
    Provider,
    RecoveryKind,
    RecoveryState,
    RuntimePresence,
)
from core.model.errors import InvariantViolation, TmuxError
from core.providers.traits import UNBOUND_HINT
from core.tmux.panes import PaneRole, PaneSnapshot, ServerSnapshot
from storage.connection import write_transaction
from storage.operations import frames as frames_ops
from storage.operations import recoveries as recoveries_ops
from storage.operations import sessions as sessions_ops
from storage.operations import views as views_ops

if TYPE_CHECKING:
    from core.context.context import Context

LAUNCH_REPORT_MS = 30_000
"""An authorized launch not started after this long was interrupted: creating its
pane is one tmux process, so whoever authorized it is gone (the transition lease)."""

BIND_TIMEOUT_MS = 60_000
"""A started provider, its gate open, that no hook has bound after this long."""


def bind_timeout_explanation(provider: str) -> str:
    """What the ``bind_timeout`` recovery tells the person, with the provider's own hint
    (``core.providers.traits.UNBOUND_HINT``)."""
    text = (f"The agent has run for over {BIND_TIMEOUT_MS // 1000} s without any hook "
            "reaching Switchboard (hooks missing, or the provider is stuck before its first "
            "prompt). Nothing was stopped: press Enter on this recovery to go and look; close "
            "the frame or resolve this when it is fine.")
    hint = UNBOUND_HINT.get(Provider(provider), "")
    return f"{text} {hint}" if hint else text


def interrupted_launches(ctx: Context, snap: ServerSnapshot | None, server_id: str | None,
                         busy: set[str], now: int) -> tuple[int, int]:
    """Launches stopped between 'authorized' and 'started': (adopted, failed).

    The launcher creates the pane (tagged ``@sb_surface``) and only then records
    it, so the pane may or may not exist. Alive on the live server -> adopted:
    surface live, launch started, and, when its frame is what the view shows
    and main holds the placeholder (an interrupted start), presented with its
    gate opened in the swap, as the start would have. No such pane -> the
    launch failed, the frame is empty again (``n`` starts it) and a
    ``launch_uncertain`` recovery says so; a dead pane of it is killed.
    A push or return whose launch this was is settled by
    ``core.reconcile.transitions``.
    """
    adopted = failed = 0
    rows = ctx.conn.execute(
        "SELECT l.launch_id, l.frame_id, l.session_key, s.surface_id, p.view_id,"
        " v.tmux_server_id AS view_server FROM launch_intents l"
        " JOIN surfaces s ON s.launch_id = l.launch_id"
        " LEFT JOIN frame_placements p ON p.surface_id = s.surface_id AND p.state <> 'orphaned'"
        " LEFT JOIN user_views v ON v.view_id = p.view_id"
        " WHERE l.state = 'authorized' AND s.lifecycle_state = 'planned' AND l.updated_at < ?",
        (now - LAUNCH_REPORT_MS,)).fetchall()
    for row in rows:
        pane = None
        if snap is not None and server_id is not None and row["view_server"] == server_id:
            pane = snap.by_surface(row["surface_id"])
        if pane is not None and not pane.dead and server_id is not None:
            _adopt(ctx, row, pane, server_id, now)
            adopted += 1
            if row["view_id"] is not None and row["view_id"] not in busy:
                _present_adopted(ctx, row["view_id"], row["frame_id"], pane,
                                 row["launch_id"])
            continue
        _fail_launch(ctx, row, now)
        failed += 1
        if pane is not None and server_id is not None:  # tagged with its surface, but dead
            ctx.require_stage().kill_unrecorded(pane.pane_id, row["surface_id"], server_id)
    return adopted, failed


def _adopt(ctx: Context, row: sqlite3.Row, pane: PaneSnapshot, server_id: str,
           now: int) -> None:
    """The interrupted launch's pane runs: record it live, and the launch started."""
    surface_id = row["surface_id"]
    with write_transaction(ctx.conn) as tx:
        sessions_ops.surface_live(tx, surface_id, tmux_server_id=server_id,
                                  pane_id=pane.pane_id, process_id=pane.pane_pid, now=now)
        sessions_ops.bind_capability_pane(tx, surface_id, server_id, pane.pane_id)
        sessions_ops.move_launch(tx, row["launch_id"], "authorized", "started", now)
        if row["session_key"]:
            sessions_ops.set_runtime_presence(tx, row["session_key"], RuntimePresence.LIVE,
                                              now)


def _fail_launch(ctx: Context, row: sqlite3.Row, now: int) -> None:
    """No live pane of the launch: it failed, its frame is empty, a recovery says so."""
    from core.runtime.sagas import stop_runtime

    launch_id, surface_id = row["launch_id"], row["surface_id"]
    with write_transaction(ctx.conn) as tx:
        sessions_ops.move_launch(
            tx, launch_id, "authorized", "failed", now,
            failure="interrupted before its pane was recorded; no live pane of it exists")
        placement = views_ops.placement_of_frame(tx, row["frame_id"])
        if placement is not None and placement["surface_id"] == surface_id:
            stop_runtime(tx, row["frame_id"], now)  # staged -> empty again
        else:
            sessions_ops.move_surface(tx, surface_id, "retired", now)
            sessions_ops.revoke_capabilities(tx, surface_id, now)
        recoveries_ops.open_recovery(
            tx, recovery_id=ctx.ids.new_id(), host_id=ctx.host_id,
            kind=RecoveryKind.LAUNCH_UNCERTAIN, subject_type="launch", subject_id=launch_id,
            actionability=Actionability.MANUAL,
            explanation="An agent start was interrupted before its pane was recorded, and "
                        "no live pane of it exists: the launch was marked failed and "
                        "nothing runs. Select "
                        f"“{frames_ops.get_frame(tx, row['frame_id'])['title']}” and "
                        "press n to start it again.", now=now)


def _present_adopted(ctx: Context, view_id: str, frame_id: str, pane: PaneSnapshot,
                     launch_id: str) -> None:
    """Finish an interrupted start: the view shows this frame, main the placeholder."""
    from core.runtime.stage import gate_name

    conn = ctx.conn
    view = views_ops.get_view(conn, view_id)
    placement = views_ops.placement_of_frame(conn, frame_id)
    if view["active_frame_id"] != frame_id or placement is None or \
            placement["state"] != PlacementState.STAGED or not pane.parked:
        return  # a later focus presents it and opens its gate
    layout = None
    snap = ctx.require_stage().snapshot()
    if snap is not None:
        layout = snap.view(view_id)
    if layout is None or layout.main is None or layout.main.role is not PaneRole.PLACEHOLDER:
        return
    try:
        shown = ctx.require_stage().present(view, pane.pane_id, launch_gate=gate_name(launch_id))
    except TmuxError:
        return  # nothing moved; the frame stays staged and a focus can show it
    if shown != pane.pane_id:
        return
    with write_transaction(conn) as tx:
        placement = views_ops.placement_of_frame(tx, frame_id)
        if placement is None:
            raise InvariantViolation(f"frame {frame_id} lost its placement while shown")
        if placement["state"] == PlacementState.STAGED:
            views_ops.move_placement(tx, placement["placement_id"], placement["generation"],
                                     PlacementState.ACTIVE, ctx.now(), focused=True)


def bind_timeouts(ctx: Context, conn: sqlite3.Connection, now: int) -> int:
    """Started launches no hook has bound BIND_TIMEOUT_MS after their provider could run.

    The gate opens when the pane is first shown (the placement leaves
    ``staged``), so a staged pane waiting behind its gate is never overdue.
    Opens one manual ``bind_timeout`` per launch and kills nothing; it is
    resolved once the launch is bound or has ended.
    """
    overdue = 0
    for row in conn.execute(
            "SELECT l.launch_id, l.provider FROM launch_intents l"
            " JOIN surfaces s ON s.launch_id = l.launch_id"
            " JOIN frame_placements p ON p.surface_id = s.surface_id"
            " AND p.state IN ('active', 'parked')"
            " WHERE l.state = 'started' AND s.lifecycle_state = 'live'"
            " AND MAX(l.updated_at, p.updated_at) < ?", (now - BIND_TIMEOUT_MS,)).fetchall():
        opened = conn.execute("SELECT 1 FROM recoveries WHERE kind = 'bind_timeout'"
                              " AND subject_id = ? AND state = 'open'",
                              (row["launch_id"],)).fetchone()
        if opened is not None:
            continue
        recoveries_ops.open_recovery(
            conn, recovery_id=ctx.ids.new_id(), host_id=ctx.host_id,
            kind=RecoveryKind.BIND_TIMEOUT, subject_type="launch", subject_id=row["launch_id"],
            actionability=Actionability.MANUAL,
            explanation=bind_timeout_explanation(row["provider"]), now=now)
        overdue += 1
    for row in conn.execute(
            "SELECT r.recovery_id FROM recoveries r JOIN launch_intents l"
            " ON l.launch_id = r.subject_id WHERE r.kind = 'bind_timeout'"
            " AND r.state = 'open' AND l.state <> 'started'").fetchall():
        recoveries_ops.close_recovery(conn, row["recovery_id"], RecoveryState.RESOLVED, now)
    return overdue
