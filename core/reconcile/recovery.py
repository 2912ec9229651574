"""The recovery commands a person runs: list, show, resolve, dismiss, run one.

Reconcile (``core.reconcile.reconcile``) turns uncertainty into a durable,
stable recovery row; this module is what a person (``switchboard recovery``,
the navigator's Enter/R) does with one. A safe_auto view recovery runs as a
``recover`` ViewTransition (``core.reconcile.recover_view``); any other
safe_auto recovery runs a reconcile pass; manual ones only explain what to do.
An explicit project entry (``enter_view``) runs the ``server_restarted`` one
itself, so opening a project after a tmux server restart is not a dead end.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from core.model.enums import Actionability, RecoveryKind, RecoveryState
from core.model.errors import Conflict, SwitchboardError, TmuxError
from core.reconcile.reconcile import reconcile
from core.reconcile.recover_view import recover_view
from core.reconcile.views import shows_own_extra
from core.runtime.pane_evidence import expected_main, live_server_id, shows
from core.tmux.errors import ServerIdentityMismatch, TmuxUnavailable
from storage.connection import write_transaction
from storage.operations import recoveries as recoveries_ops
from storage.operations import views as views_ops

if TYPE_CHECKING:
    from core.context.context import Context


@dataclass(frozen=True)
class RecoveryRecord:
    recovery_id: str
    kind: str
    subject_type: str
    subject_id: str
    actionability: str
    state: str
    explanation: str


def list_recoveries(ctx: Context, *, include_closed: bool = False) -> list[RecoveryRecord]:
    where = "" if include_closed else " WHERE state = 'open'"
    return [RecoveryRecord(r["recovery_id"], r["kind"], r["subject_type"], r["subject_id"],
                           r["actionability"], r["state"], r["bounded_explanation"])
            for r in ctx.conn.execute(
                f"SELECT * FROM recoveries{where} ORDER BY created_at, recovery_id")]


def show(ctx: Context, recovery_id: str) -> RecoveryRecord:
    r = recoveries_ops.get_recovery(ctx.conn, recovery_id)
    return RecoveryRecord(r["recovery_id"], r["kind"], r["subject_type"], r["subject_id"],
                          r["actionability"], r["state"], r["bounded_explanation"])


def dismiss(ctx: Context, request_id: str, recovery_id: str) -> RecoveryRecord:
    return _close(ctx, recovery_id, RecoveryState.DISMISSED)


def resolve(ctx: Context, request_id: str, recovery_id: str) -> RecoveryRecord:
    """A person says the uncertain outcome is settled (after looking)."""
    return _close(ctx, recovery_id, RecoveryState.RESOLVED)


def _close(ctx: Context, recovery_id: str, to_state: RecoveryState) -> RecoveryRecord:
    """open -> to_state; a retry that finds it already there changes nothing, and
    one closed the other way is refused by name."""
    with write_transaction(ctx.conn) as conn:
        state = recoveries_ops.get_recovery(conn, recovery_id)["state"]
        if state not in ("open", to_state.value):
            raise Conflict(f"recovery {recovery_id} is already {state}; nothing changed",
                           code="recovery_closed")
        if state == "open":
            recoveries_ops.close_recovery(conn, recovery_id, to_state, ctx.now())
    return show(ctx, recovery_id)


def execute(ctx: Context, request_id: str, recovery_id: str) -> RecoveryRecord:
    """Run a safe_auto recovery through the engine; others explain what to do.

    A view's recovery becomes a ``recover`` transition that presents the
    view's committed active frame (after rebuilding the window on the live
    server when the old one is gone); it resolves only if that transition
    completed.
    """
    record = show(ctx, recovery_id)
    if record.state != "open":
        return record
    if record.actionability != Actionability.SAFE_AUTO:
        raise Conflict(f"recovery {recovery_id} is {record.actionability}: "
                       f"{record.explanation}", code="not_safe_auto")
    about_view = record.subject_type == "view" and ctx.stage is not None
    if about_view:
        recover_view(ctx, request_id, record.recovery_id, record.subject_id)
        _cause_gone(ctx, record)
    else:
        reconcile(ctx)
    with write_transaction(ctx.conn) as conn:
        row = recoveries_ops.get_recovery(conn, recovery_id)
        if row["state"] == "open":
            recoveries_ops.close_recovery(conn, recovery_id, RecoveryState.RESOLVED,
                                          ctx.now())
        if about_view:
            # The view is presented as committed and nothing is in flight: every other
            # safe_auto recovery about it asked for exactly that.
            for other in conn.execute(
                    "SELECT recovery_id FROM recoveries WHERE subject_type = 'view'"
                    " AND subject_id = ? AND state = 'open' AND actionability = 'safe_auto'",
                    (record.subject_id,)).fetchall():
                recoveries_ops.close_recovery(conn, other["recovery_id"],
                                              RecoveryState.RESOLVED, ctx.now())
    return show(ctx, recovery_id)


def _cause_gone(ctx: Context, record: RecoveryRecord) -> None:
    """Refuse to call a view recovery handled while main still shows another pane.

    The recover transition may complete (its own target re-read in main) while a
    fresh reading of the window still disagrees with the committed placement;
    resolving then only made reconcile open the same recovery again on its next
    pass, every few seconds. The recovery stays open and the refusal says why.
    """
    snap = ctx.require_stage().snapshot()
    if snap is None:
        return  # nothing answers: the next reconcile records the restart
    server_id = live_server_id(ctx, snap)
    try:
        layout = snap.view(record.subject_id)
    except TmuxError as exc:
        raise Conflict(f"the recovery ran but the view's window is not one shape: "
                       f"{exc.message} The recovery stays open.", code="recover_failed") from exc
    if shows(layout, expected_main(ctx.conn, record.subject_id, server_id, snap)) or \
            shows_own_extra(views_ops.get_view(ctx.conn, record.subject_id), layout):
        return
    raise Conflict("the recovery ran but main still shows another pane than the view's "
                   "active frame; the recovery stays open. Close the pane shown in main "
                   "or select the frame again.", code="recover_failed")


def enter_view(ctx: Context, request_id: str, view_id: str) -> None:
    """The view's window for an explicit entry (`switchboard open`, the navigator's enter).

    When the view's tmux server is gone (nothing answers on the socket, or a
    server with another identity does), the entry does what the person would
    otherwise do by hand: start or use the live server, record the restart
    (``reconcile`` opens ``server_restarted`` for every view and surface of the
    old server) and run this view's safe_auto recovery, which rebuilds the
    window on the live server. Agents are not restarted: their frames show
    stopped and `n` resumes each session by its exact id. Nothing is done
    through a locator of the old server; the stage's identity guards refuse it.
    """
    from core.runtime.launcher import ensure_view_window

    try:
        ensure_view_window(ctx, view_id)
        return
    except (TmuxUnavailable, ServerIdentityMismatch):
        pass  # refused before anything was changed: the view's server is not the live one
    _start_live_server(ctx)
    reconcile(ctx)
    failure = _run_server_restarted(ctx, request_id, view_id)
    try:
        ensure_view_window(ctx, view_id)
    except (TmuxUnavailable, ServerIdentityMismatch) as exc:
        why = (failure.message if failure is not None else exc.message).rstrip(". ")
        raise Conflict(
            f"The tmux server of this view restarted and rebuilding the view on the running "
            f"server failed: {why}. `switchboard recovery list` shows the view's "
            "server_restarted recovery (`switchboard reconcile` records it if it is missing) "
            "and `switchboard recovery run ID` retries the rebuild.",
            code="view_rebuild_failed") from exc


def _start_live_server(ctx: Context) -> None:
    """Start or use the server on the stage's socket; a failure says what to check."""
    stage = ctx.require_stage()
    try:
        stage.ensure_server(refresh=True)
    except TmuxError as exc:
        said = exc.detail if isinstance(exc, TmuxUnavailable) else exc.message
        raise TmuxUnavailable(
            f"The tmux server of this view is gone and starting a new one on "
            f"{stage.socket_path} failed ({said}). Check that `tmux` runs for this user "
            "and that the socket's directory is writable.", detail=said) from exc


def _run_server_restarted(ctx: Context, request_id: str,
                          view_id: str) -> SwitchboardError | None:
    """Run the view's open ``server_restarted`` recovery; its failure, if any (the window
    may stand already, and the recovery stays open)."""
    row = ctx.conn.execute(
        "SELECT recovery_id FROM recoveries WHERE kind = ? AND subject_type = 'view'"
        " AND subject_id = ? AND state = 'open'",
        (RecoveryKind.SERVER_RESTARTED.value, view_id)).fetchone()
    if row is None:
        return None
    try:
        execute(ctx, f"{request_id}:recover:{row['recovery_id']}", row["recovery_id"])
    except SwitchboardError as exc:
        return exc
    return None
