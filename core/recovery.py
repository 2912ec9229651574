"""Recoveries and reconciliation: uncertainty becomes a durable, stable row.

``reconcile`` reads pane metadata once (one tmux invocation) and compares it
with the registry: a live surface whose pane vanished, a view on a restarted
server, an executing transition whose lease expired, a submitted control turn
past its watchdog. It finishes what evidence proves and records a recovery for
everything else; it never repeats a swap or a control turn.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from core.enums import Actionability, RecoveryKind, RecoveryState
from core.errors import Conflict
from storage.connection import write_transaction
from storage.operations import recoveries as recoveries_ops
from storage.operations import transitions as transitions_ops

if TYPE_CHECKING:
    from core.engine import Engine


@dataclass(frozen=True)
class RecoveryRecord:
    recovery_id: str
    kind: str
    subject_type: str
    subject_id: str
    actionability: str
    state: str
    explanation: str


def list_recoveries(engine: Engine, *, include_closed: bool = False) -> list[RecoveryRecord]:
    where = "" if include_closed else " WHERE state = 'open'"
    return [RecoveryRecord(r["recovery_id"], r["kind"], r["subject_type"], r["subject_id"],
                           r["actionability"], r["state"], r["bounded_explanation"])
            for r in engine.conn.execute(
                f"SELECT * FROM recoveries{where} ORDER BY created_at, recovery_id")]


def show(engine: Engine, recovery_id: str) -> RecoveryRecord:
    r = recoveries_ops.get_recovery(engine.conn, recovery_id)
    return RecoveryRecord(r["recovery_id"], r["kind"], r["subject_type"], r["subject_id"],
                          r["actionability"], r["state"], r["bounded_explanation"])


def dismiss(engine: Engine, request_id: str, recovery_id: str) -> RecoveryRecord:
    with write_transaction(engine.conn) as conn:
        recoveries_ops.close_recovery(conn, recovery_id, RecoveryState.DISMISSED, engine.now())
    return show(engine, recovery_id)


def resolve(engine: Engine, request_id: str, recovery_id: str) -> RecoveryRecord:
    """A person says the uncertain outcome is settled (after looking)."""
    with write_transaction(engine.conn) as conn:
        recoveries_ops.close_recovery(conn, recovery_id, RecoveryState.RESOLVED, engine.now())
    return show(engine, recovery_id)


def execute(engine: Engine, request_id: str, recovery_id: str) -> RecoveryRecord:
    """Run a safe_auto recovery through the engine; others explain what to do."""
    record = show(engine, recovery_id)
    if record.state != "open":
        return record
    if record.actionability != Actionability.SAFE_AUTO:
        raise Conflict(f"recovery {recovery_id} is {record.actionability}: "
                       f"{record.explanation}", code="not_safe_auto")
    reconcile(engine)
    with write_transaction(engine.conn) as conn:
        row = recoveries_ops.get_recovery(conn, recovery_id)
        if row["state"] == "open":
            recoveries_ops.close_recovery(conn, recovery_id, RecoveryState.RESOLVED,
                                          engine.now())
    return show(engine, recovery_id)


@dataclass(frozen=True)
class ReconcileReport:
    panes_seen: int
    surfaces_lost: int
    transitions_finished: int
    transitions_rolled_back: int
    turns_marked_uncertain: int
    recoveries_opened: int


def reconcile(engine: Engine) -> ReconcileReport:
    now = engine.now()
    stage = engine.stage
    panes: dict[str, str] = stage.list_panes() if stage is not None else {}
    server_id = None
    if stage is not None:
        with write_transaction(engine.conn) as conn:
            server_id = stage.server_row(conn)
    lost = finished = rolled = uncertain = opened = 0
    watchdog_ms = int(engine.config.control_turns.watchdog_timeout_seconds * 1000)
    with write_transaction(engine.conn) as conn:
        before = conn.execute("SELECT COUNT(*) FROM recoveries").fetchone()[0]
        if stage is not None:
            for s in conn.execute("SELECT * FROM surfaces WHERE lifecycle_state = 'live'"):
                same_server = s["tmux_server_id"] == server_id
                if same_server and panes.get(s["pane_id"]) == s["surface_id"]:
                    continue
                lost += 1
                conn.execute("UPDATE surfaces SET lifecycle_state = 'orphaned', updated_at = ?"
                             " WHERE surface_id = ?", (now, s["surface_id"]))
                kind = RecoveryKind.PANE_VANISHED if same_server \
                    else RecoveryKind.SERVER_RESTARTED
                recoveries_ops.open_recovery(
                    conn, recovery_id=engine.ids.new_id(), host_id=engine.host_id, kind=kind,
                    subject_type="surface", subject_id=s["surface_id"],
                    actionability=Actionability.MANUAL,
                    explanation=("The agent pane is gone" if same_server else
                                 "The tmux server restarted; old pane locators are invalid")
                    + ". Its session can be resumed with n (start) on the frame.", now=now)
        for t in conn.execute("SELECT * FROM view_transitions WHERE state = 'executing'"
                              " AND lease_expires_at < ?", (now,)).fetchall():
            phase = t["transport_phase"]
            if phase == "inspected":
                finished += 1  # evidence was read: commit below, outside this transaction
                continue
            if phase in ("moved",):
                transitions_ops.advance_phase(conn, t["transition_id"], "moved", "rolled_back",
                                              now)
            transitions_ops.move_transition(conn, t["transition_id"], _ts("executing"),
                                            _ts("failed"), now,
                                            failure=f"interrupted at {phase}")
            rolled += 1
            recoveries_ops.open_recovery(
                conn, recovery_id=engine.ids.new_id(), host_id=engine.host_id,
                kind=RecoveryKind.TRANSITION_INTERRUPTED, subject_type="view",
                subject_id=t["view_id"], actionability=Actionability.OPEN_VIEW,
                explanation=f"A {t['kind']} stopped at {phase}; the registry keeps the last "
                            "committed placement. Open the view and repeat the action.",
                now=now)
        for c in conn.execute("SELECT * FROM control_turns WHERE state = 'submitted'"
                              " AND submitted_at < ?", (now - watchdog_ms,)).fetchall():
            transitions_ops.move_control(conn, c["control_turn_id"], ("submitted",),
                                         "uncertain", now, failure="watchdog expired")
            uncertain += 1
            recoveries_ops.open_recovery(
                conn, recovery_id=engine.ids.new_id(), host_id=engine.host_id,
                kind=RecoveryKind.CONTROL_SUBMIT_UNCERTAIN, subject_type="control_turn",
                subject_id=c["control_turn_id"], actionability=Actionability.OPEN_VIEW,
                explanation="No prompt evidence after the claim line was sent. It is never "
                            "typed again; open the view and check the agent.", now=now)
        after = conn.execute("SELECT COUNT(*) FROM recoveries").fetchone()[0]
        opened = after - before
    if finished:
        from core.sagas import commit
        for t in engine.conn.execute("SELECT transition_id FROM view_transitions WHERE state ="
                                     " 'executing' AND transport_phase = 'inspected'").fetchall():
            commit(engine, t["transition_id"])
    return ReconcileReport(len(panes), lost, finished, rolled, uncertain, opened)


def _ts(value: str):
    from core.enums import TransitionState
    return TransitionState(value)
