"""A trusted Stop's waiting work, run beside the agent instead of inside its hook.

A push or complete-return that waited for an agent's Stop needs the engine,
tmux and often a new provider pane: seconds on a loaded machine. The agent
waits for its hook to exit, so ``switchboard hook`` records the Stop (one short
transaction), starts this worker detached and returns at once.

Durability is the registry's, not this process's: the transition is already
recorded as ``prepared`` before the Stop arrives, and the Stop's activity is
committed before the worker starts. If the worker never starts or dies, the
next reconcile finishes what it did not (a prepared push/return that no
longer waits for a Stop runs; an executing one whose lease expired is finished
or rolled back from pane evidence). Two workers for one frame are harmless:
``sagas.execute`` claims a prepared transition in a write transaction, so only
one of them runs it.

Run as ``python -m core.hooks.stop_worker GENERATION FRAME_ID`` with the home's
``SWITCHBOARD_HOME``/``SWITCHBOARD_CONFIG`` in the environment; failures go to
``<home>/run/stop-worker.log``.
"""

from __future__ import annotations

import os
import sys
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from core.config.home import Home
    from core.context.context import Context

LOG_NAME = "stop-worker.log"


def hand_over(home: Home, generation: str, frame_id: str) -> str:
    """To the home's running server (``core.model.turn_end``), else to a worker of its
    own (``start``); says which ("the server" or "a worker")."""
    from core.model.turn_end import STOP, hand_off

    if hand_off(home.run_dir, STOP, frame_id, [generation, frame_id]):
        return "the server"
    start(home, generation, frame_id)
    return "a worker"


def start(home: Home, generation: str, frame_id: str) -> None:
    """Start the worker in its own session, sharing no pipe with the hook: the
    provider waits for the hook's stdout/stderr to close, never for this.

    (``core.model.spawn``: no module to import and no wait for the child's exec,
    so handing over costs the hook a millisecond or two.)
    """
    from core.model.spawn import spawn_detached

    home.run_dir.mkdir(parents=True, exist_ok=True)
    spawn_detached([sys.executable, "-m", "core.hooks.stop_worker", generation, frame_id],
                   {**os.environ, **home.child_env()}, log_path=str(home.run_dir / LOG_NAME))


def run_waiting_work(home: Home, generation: str, frame_id: str) -> list[str]:
    """Run the push/complete-return that waited for this frame's Stop; settle returns.

    Runs after the activity commit, on the full engine (validated config, tmux
    stage on demand), and only when the hook's ``_waiting_for_stop`` said there is
    work: here in the worker, or inline in ``core.hooks.hook_handler`` for a caller that
    passes its own environment.
    """
    from core.engine.open import open_engine
    from core.runtime import claims, sagas

    ctx = open_engine(home, expected_generation=generation)
    try:
        executed: list[str] = list(claims.settle_after_stop(ctx, frame_id))
        if executed:
            _sweep_returned_children(ctx, home, executed)
        # Its own push/return, and a return that waited for this (parent) agent's Stop;
        # one whose other side is still working keeps waiting for that side's Stop.
        rows = ctx.conn.execute(
            "SELECT transition_id FROM view_transitions WHERE state = 'prepared' AND"
            " ((source_frame_id = ? AND kind IN ('push', 'complete_return'))"
            "  OR (target_frame_id = ? AND kind = 'complete_return'))"
            " ORDER BY created_at", (frame_id, frame_id)).fetchall()
        runnable = [row["transition_id"] for row in rows
                    if not sagas.waits_for_stop(ctx, row["transition_id"])]
        if runnable and ctx.stage is None:
            from core.runtime.stage import attach_stage
            attach_stage(ctx, home)
        for transition_id in runnable:
            sagas.execute(ctx, transition_id)
            executed.append(transition_id)
        # A return shown to this parent before it was proven idle: this Stop proves it,
        # so the fixed line is typed now (once; the turn was left prepared for this).
        for row in ctx.conn.execute(
                "SELECT t.transition_id FROM view_transitions t JOIN control_turns c"
                " ON c.transition_id = t.transition_id WHERE t.target_frame_id = ?"
                " AND t.state = 'awaiting_claim' AND c.state = 'prepared'"
                " AND c.transport = 'live_input'", (frame_id,)).fetchall():
            if ctx.stage is None:
                from core.runtime.stage import attach_stage
                attach_stage(ctx, home)
            sagas.submit_after_stop(ctx, row["transition_id"])
            executed.append(row["transition_id"])
        return executed
    finally:
        ctx.conn.close()


def _sweep_returned_children(ctx: Context, home: Home, transition_ids: list[str]) -> None:
    """Second chance for a returned child's parked pane: the claim already tried to
    kill it; the parent's settling Stop makes sure it is gone (only tagged panes)."""
    marks = ", ".join("?" for _ in transition_ids)
    panes = ctx.conn.execute(
        "SELECT s.pane_id, s.surface_id FROM view_transitions t"
        " JOIN frame_placements p ON p.frame_id = t.source_frame_id"
        " JOIN surfaces s ON s.surface_id = p.surface_id"
        f" WHERE t.transition_id IN ({marks}) AND s.lifecycle_state IN ('dead', 'retired')"
        " AND s.pane_id IS NOT NULL", transition_ids).fetchall()
    if not panes:
        return
    stage = ctx.stage
    if stage is None:
        from core.runtime.stage import attach_stage
        stage = attach_stage(ctx, home)
    for row in panes:
        stage.kill(row["pane_id"], surface_id=row["surface_id"])


def main(argv: list[str]) -> int:
    from core.config.home import Home

    if len(argv) != 2:
        print("usage: python -m core.hooks.stop_worker GENERATION FRAME_ID", file=sys.stderr)
        return 2
    generation, frame_id = argv
    home = Home.from_env()
    try:
        run_waiting_work(home, generation, frame_id)
    except Exception as exc:  # reconcile finishes it; say why in the log
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S")
        print(f"{stamp} frame {frame_id}: waiting work not finished "
              f"({type(exc).__name__}: {exc}); reconcile will finish it", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
