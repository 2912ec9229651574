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

Run as ``python -m core.stop_worker GENERATION FRAME_ID`` with the home's
``SWITCHBOARD_HOME``/``SWITCHBOARD_CONFIG`` in the environment; failures go to
``<home>/run/stop-worker.log``.
"""

from __future__ import annotations

import os
import sys
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from core.home import Home

LOG_NAME = "stop-worker.log"


def start(home: Home, generation: str, frame_id: str) -> None:
    """Start the worker in its own session, sharing no pipe with the hook: the
    provider waits for the hook's stdout/stderr to close, never for this.

    ``posix_spawn`` instead of ``subprocess``: no module to import and no wait
    for the child's exec, so handing over costs the hook a millisecond or two.
    The hook's other descriptors are close-on-exec (Python's default).
    """
    home.run_dir.mkdir(parents=True, exist_ok=True)
    log = str(home.run_dir / LOG_NAME)
    os.posix_spawn(
        sys.executable, [sys.executable, "-m", "core.stop_worker", generation, frame_id],
        {**os.environ, **home.child_env()},
        file_actions=[(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                      (os.POSIX_SPAWN_OPEN, 1, log, os.O_WRONLY | os.O_APPEND | os.O_CREAT,
                       0o600),
                      (os.POSIX_SPAWN_DUP2, 1, 2)],
        setsid=True)


def main(argv: list[str]) -> int:
    from core.home import Home
    from core.hook_handler import _after_trusted_stop

    if len(argv) != 2:
        print("usage: python -m core.stop_worker GENERATION FRAME_ID", file=sys.stderr)
        return 2
    generation, frame_id = argv
    home = Home.from_env()
    try:
        _after_trusted_stop(home, generation, frame_id)
    except Exception as exc:  # reconcile finishes it; say why in the log
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S")
        print(f"{stamp} frame {frame_id}: waiting work not finished "
              f"({type(exc).__name__}: {exc}); reconcile will finish it", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
