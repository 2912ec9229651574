"""The parking policy's periodic part: ``park_unseen``, once per server pass.

Only the home's server (``core.server.housekeeping``, after each reconcile) parks
and wakes; an explicit ``switchboard reconcile`` or a test's ``reconcile()`` leaves
navigators alone, so nothing parks a navigator someone is about to use because they
asked for a repair. The server is no navigator, so parking never ends the process
that decides it.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING

from core.memory.parking import SWEEP_LOCK, SweepReport, park_after, sweep
from core.model.errors import TmuxError

if TYPE_CHECKING:
    from core.context.context import Context


def park_unseen(ctx: Context, lock: AbstractContextManager[object] | None = None
                ) -> SweepReport:
    """Park the navigators nobody has looked at for a while, wake the shown parked ones.

    Nothing without a tmux stage or a home; nothing when parking is off. A tmux
    failure is the next turn's to retry (parking only ever saves memory). ``lock``
    guards the registry connection (a navigator's requests share it); it is held for
    the one read, not for the tmux processes."""
    stage = ctx.stage
    home = getattr(ctx, "home", None)
    if stage is None or home is None or park_after() is None:
        return SweepReport()
    runner = getattr(stage, "runner", None)
    spawn_of = getattr(stage, "navigator_spawn", None)
    if runner is None or spawn_of is None:
        return SweepReport()
    with lock or nullcontext():
        views = [row[0] for row in ctx.conn.execute(
            "SELECT view_id FROM user_views WHERE state <> 'retired'")]
    try:
        with SWEEP_LOCK:
            return sweep(runner, home.run_dir, views, spawn_of)
    except (TmuxError, OSError, ValueError):
        return SweepReport()
