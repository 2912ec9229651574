"""Reconcile: compare tmux with the registry once, in a fixed order of steps.

``reconcile`` reads the tmux server once (one snapshot: identity and every
pane) and compares it with the registry: live surfaces whose pane vanished,
views recorded on a restarted server, a pane someone split into a view's
window (moved out, still running: ``foreign``), a view whose main shows
another pane than its committed placement, executing transitions whose lease expired,
submitted control turns past their watchdog. It finishes what the pane
metadata proves and records a recovery for everything else. It never repeats
a swap it cannot prove did not happen, and never types a control line.

This module is only the order of the steps and the rule that keeps the one
reading honest (it is compared with the rows under the write lock); each
step lives in the module of its concern (``surfaces``, ``views``,
``launches``, ``runtimes``, ``transitions``, ``controls``, ``panes``). What a
person does with the recoveries it opens is ``core.reconcile.recovery``.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import TYPE_CHECKING

from core.reconcile import settlement
from core.reconcile.controls import expire_overdue_turns, resolve_settled_controls
from core.reconcile.foreign import evict_foreign_panes, record_extra_panes
from core.reconcile.launches import LAUNCH_REPORT_MS, bind_timeouts, interrupted_launches
from core.reconcile.panes import revive_navigators, stop_stray_panes
from core.reconcile.runtimes import exited_providers
from core.reconcile.surfaces import found_surfaces, lost_surfaces
from core.reconcile.transitions import settle_expired
from core.reconcile.views import check_views, restore_mains
from core.runtime.dialogs import watch_dialogs
from core.runtime.pane_evidence import live_server_id
from core.tmux.panes import ServerSnapshot
from storage.connection import write_transaction

if TYPE_CHECKING:
    from core.context.context import Context
    from core.context.stage_port import StagePort


@dataclass(frozen=True)
class ReconcileReport:
    """What one pass saw and did (``switchboard reconcile`` prints it)."""

    panes_seen: int
    surfaces_lost: int
    transitions_finished: int
    transitions_rolled_back: int
    turns_marked_uncertain: int
    recoveries_opened: int
    transitions_resumed: int = 0
    views_repaired: int = 0
    panes_stopped: int = 0
    sessions_aged: int = 0
    launches_adopted: int = 0
    launches_failed: int = 0
    providers_exited: int = 0
    binds_overdue: int = 0
    surfaces_found: int = 0
    navigators_respawned: int = 0
    transitions_run: int = 0
    transitions_settled: int = 0
    transitions_stalled: int = 0
    mains_restored: int = 0
    dialogs_changed: int = 0
    resumed_after_limit: int = 0
    usage_reads: int = 0
    foreign_panes_moved: int = 0


@dataclass
class _Pass:
    """One reconcile pass: its time, its latest tmux reading and what each step did."""

    now: int
    snap: ServerSnapshot | None
    server_id: str | None
    aged: int = 0
    adopted: int = 0
    failed: int = 0
    exited: int = 0
    lost: int = 0
    restored: int = 0
    found: int = 0
    repaired: int = 0
    overdue: int = 0
    finished: int = 0
    resumed: int = 0
    rolled: int = 0
    uncertain: int = 0
    stopped: int = 0
    revived: int = 0
    dialogs: int = 0
    resumed_after_limit: int = 0
    usage_reads: int = 0
    evicted: int = 0


def reconcile(ctx: Context) -> ReconcileReport:
    """Compare tmux with the registry once; finish, roll back or record a recovery."""
    from core.providers.checks import reconcile_stale_activity

    now = ctx.now()
    aged = len(reconcile_stale_activity(ctx.conn, now))  # a lost Stop: working -> unknown
    stage: StagePort | None = ctx.stage
    seen = _others_commits(ctx.conn)
    snap = stage.snapshot() if stage is not None else None
    run = _Pass(now, snap, live_server_id(ctx, snap), aged=aged)
    before = _recoveries(ctx.conn)
    if stage is not None:
        _settle_launches_and_exits(ctx, run)
        run.evicted = evict_foreign_panes(ctx, run.snap, run.server_id)
        if run.evicted:  # the windows changed: the comparison reads them again
            run.snap = stage.snapshot()
        _compare_under_write_lock(ctx, stage, run, seen)
    expired = settle_expired(ctx, run.snap, run.server_id, now)
    run.finished, run.resumed, run.rolled = expired.finished, expired.resumed, expired.rolled_back
    run.uncertain = expire_overdue_turns(ctx, now)
    swept = settlement.sweep(ctx, now)
    resolve_settled_controls(ctx, now)
    if stage is not None and run.snap is not None:
        _finish_in_tmux(ctx, stage, run, run.snap)
        run.dialogs = watch_dialogs(ctx, run.snap, run.server_id, now)
        from core.reconcile.limits import auto_resume
        from core.reconcile.usage_sweep import sweep_usage

        run.resumed_after_limit = len(auto_resume(ctx, now))
        run.usage_reads = sweep_usage(ctx, now)
    return _report(run, swept, _recoveries(ctx.conn) - before)


def _settle_launches_and_exits(ctx: Context, run: _Pass) -> None:
    """Interrupted launches and exited providers, each in its own commits (they run tmux)."""
    busy = _busy_views(ctx.conn, run.now)
    run.adopted, run.failed = interrupted_launches(ctx, run.snap, run.server_id, busy,
                                                   run.now)
    run.exited = exited_providers(ctx, run.snap, run.server_id, busy, run.now)


def _compare_under_write_lock(ctx: Context, stage: StagePort, run: _Pass, seen: int) -> None:
    """Surfaces, mains, views and bind timeouts against a reading no older than the rows."""
    with write_transaction(ctx.conn) as tx:
        # Read tmux again while holding the write lock: a launch records its pane
        # as live and a saga marks its view busy only in a write transaction, so
        # this reading is never older than the rows it is compared with (an older
        # one would call a just-launched pane vanished and orphan its surface).
        busy = _busy_views(tx, run.now)
        if run.adopted or run.failed or run.exited or _others_commits(tx) != seen:
            run.snap = stage.snapshot()
        run.lost = lost_surfaces(ctx, tx, run.snap, run.server_id, run.now)
        run.restored = restore_mains(ctx, tx, run.snap, run.server_id, busy, run.now)
        if run.restored:
            run.snap = stage.snapshot()
        run.found = found_surfaces(tx, run.snap, run.server_id, run.now)
        record_extra_panes(ctx, tx, run.snap, run.server_id, run.now)
        run.repaired = check_views(ctx, tx, run.snap, run.server_id, busy, run.now)
        run.overdue = bind_timeouts(ctx, tx, run.now)


def _finish_in_tmux(ctx: Context, stage: StagePort, run: _Pass,
                    snap: ServerSnapshot) -> None:
    """Stray panes of committed stops are killed and dead navigators respawned."""
    if run.finished or run.resumed:  # those commits stopped panes themselves: read again
        snap = run.snap = stage.snapshot() or snap
    run.stopped = stop_stray_panes(ctx, snap, run.server_id)
    run.revived = revive_navigators(ctx, snap, run.server_id)


def _report(run: _Pass, swept: settlement.SweepReport, opened: int) -> ReconcileReport:
    return ReconcileReport(
        panes_seen=len(run.snap.panes) if run.snap is not None else 0,
        surfaces_lost=run.lost, transitions_finished=run.finished,
        transitions_rolled_back=run.rolled, turns_marked_uncertain=run.uncertain,
        recoveries_opened=opened, transitions_resumed=run.resumed,
        views_repaired=run.repaired, panes_stopped=run.stopped, sessions_aged=run.aged,
        launches_adopted=run.adopted, launches_failed=run.failed,
        providers_exited=run.exited, binds_overdue=run.overdue, surfaces_found=run.found,
        navigators_respawned=run.revived, transitions_run=swept.ran,
        transitions_settled=swept.completed, transitions_stalled=swept.stalled,
        mains_restored=run.restored, dialogs_changed=run.dialogs,
        resumed_after_limit=run.resumed_after_limit, usage_reads=run.usage_reads,
        foreign_panes_moved=run.evicted)


def _recoveries(conn: sqlite3.Connection) -> int:
    """Recoveries recorded so far, open or not (the report counts what a pass added)."""
    return int(conn.execute("SELECT COUNT(*) FROM recoveries").fetchone()[0])


def _others_commits(conn: sqlite3.Connection) -> int:
    """SQLite's count of commits by other connections, as this connection sees it.

    Unchanged between the first tmux read and the write lock means no launch or
    saga committed in between, so that read is not older than the rows it is
    compared with and one `list-panes` serves the whole reconcile.
    """
    return conn.execute("PRAGMA data_version").fetchone()[0]


def _busy_views(conn: sqlite3.Connection, now: int) -> set[str]:
    """Views whose tmux state belongs to someone at work: a transition executing, or
    a start presenting its pane (main shows it a moment before staged -> active)."""
    return {row[0] for row in conn.execute(
        "SELECT view_id FROM view_transitions WHERE state = 'executing'"
        " UNION SELECT p.view_id FROM frame_placements p"
        " JOIN launch_intents l ON l.frame_id = p.frame_id"
        " WHERE p.state = 'staged' AND l.state IN ('planned', 'authorized', 'started')"
        " AND l.updated_at >= ?", (now - LAUNCH_REPORT_MS,))}
