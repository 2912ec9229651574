"""What an empty main pane shows: a frame with no running agent.

Every view keeps one (shown, or parked for the next empty frame) for as long as it
lives: once the words are on the screen this process becomes ``sleep`` (exec, same
pid), about 1 MB instead of a ~10 MB idle interpreter (issue 25). Without a
``sleep`` on PATH it waits here as before.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys

from core.platform.commands import sleep_forever_argv


def main() -> None:
    sys.stdout.write("\x1b[2J\x1b[H  No agent is running in this frame.\n\n"
                     "  Press n in the navigator to start one.\n")
    sys.stdout.flush()
    sleep = shutil.which("sleep")
    if sleep is not None:
        try:
            os.execv(sleep, sleep_forever_argv(sleep))
        except OSError:
            pass
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    while True:
        signal.pause()


if __name__ == "__main__":
    main()
