"""Entry points of the detached processes the engine's steps start.

``python -m core.apps.workers watchdog CONTROL_TURN_ID``: a submitted control turn's
watchdog (started by ``core.runtime.sagas`` after typing the claim line).
``python -m core.apps.workers kick FRAME_ID``: delivers the broker messages that
waited for an agent's Stop (started by the hook, ``core.broker.kick``).

Each opens the full engine (``core.engine.open.open_engine``), so they live here,
above the engine, and not in ``core.reconcile.settlement`` or ``core.broker.membership``,
whose logic they run and which the engine itself imports.
"""

from __future__ import annotations

import sqlite3
import sys
import time

from core.config.home import Home
from core.engine.open import open_engine
from core.model.text import shown

WATCHDOG = "watchdog"
KICK = "kick"


def watchdog(control_turn_id: str) -> int:
    """Wait the bounded timeout, then expire the turn if unobserved and lift its fence."""
    from core.reconcile.settlement import run_watchdog, watchdog_ms

    engine = open_engine(Home.from_env(), with_stage=True)
    try:
        # The full timeout even when the prompt is observed early: that hook cannot lift
        # the fence of a pane still parked, so this pass makes sure it is lifted in main.
        time.sleep(watchdog_ms(engine) / 1000)
        run_watchdog(engine, control_turn_id)
    finally:
        engine.conn.close()
    return 0


def kick(frame_id: str) -> int:
    """Deliver the pending messages of the frame's project now that its agent stopped."""
    from core.broker.broker import BrokerUnavailable
    from core.model.errors import SwitchboardError
    from core.server.turn_end import deliver_for_frame

    try:
        deliver_for_frame(Home.from_env(), frame_id)
    except (SwitchboardError, BrokerUnavailable, sqlite3.Error, OSError) as exc:
        print(f"switchboard: broker delivery skipped: {shown(exc)}", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == WATCHDOG:
        return watchdog(argv[1])
    if len(argv) == 2 and argv[0] == KICK:
        return kick(argv[1])
    print("usage: python -m core.apps.workers watchdog CONTROL_TURN_ID | kick FRAME_ID",
          file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
