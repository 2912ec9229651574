"""What an empty main pane shows: a frame with no running agent."""

from __future__ import annotations

import signal
import sys


def main() -> None:
    sys.stdout.write("\x1b[2J\x1b[H  No agent is running in this frame.\n\n"
                     "  Press n in the navigator to start one.\n")
    sys.stdout.flush()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    while True:
        signal.pause()


if __name__ == "__main__":
    main()
