"""`switchboard serve [--port N]`: the navigator in a browser, on 127.0.0.1, behind a
random token (``navigator.serve``).

``serve --lifeline FD`` is how serve starts each browser tab's navigator (not for
people; hidden from the help): it runs ``switchboard ui --browser`` and ends it, with
its whole process group, once FD (the read end of a pipe whose only writer is serve)
reaches end of file. The kernel closes serve's end when serve exits in any way, a
``kill -9`` included, so no tab's navigator outlives its serve; no OS-specific
parent-death call is needed, only a pipe and a process group (``start_new_session``).
"""

from __future__ import annotations

import argparse
import os
import signal
import stat
import threading
import time

from core.model.errors import SwitchboardError

#: Seconds a tab's navigator gets to quit on its own (SIGTERM: Textual exits the app)
#: once serve is gone, before its process group is killed.
LIFELINE_GRACE = 3.0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("serve", help="serve the navigator to a browser on 127.0.0.1 behind a "
                                     "random token (prints the URL to open)")
    p.add_argument("--port", type=int, default=None,
                   help="the port to listen on (default: a free one)")
    p.add_argument("--lifeline", type=int, default=None, help=argparse.SUPPRESS)
    p.set_defaults(handler=_serve)


def _serve(args: argparse.Namespace) -> int:
    if args.lifeline is not None:
        return _tab(args.lifeline)
    if args.port is not None and not 1 <= args.port <= 65535:
        raise SwitchboardError(f"--port {args.port} is not a TCP port; give 1 to 65535 (or "
                               "leave it out for a free one)", code="invalid_port")
    from core.config.home import Home
    from core.config.registry import open_current

    open_current(Home.from_env(), readonly=True).conn.close()  # refuse early, not per page
    from navigator.serve import serve

    serve(args.port)
    return 0


def _tab(lifeline: int) -> int:
    """One browser tab's navigator, bound to its serve by ``lifeline``."""
    try:
        is_pipe = stat.S_ISFIFO(os.fstat(lifeline).st_mode)
    except OSError:
        is_pipe = False
    if not is_pipe or os.getpgrp() != os.getpid():
        raise SwitchboardError(f"--lifeline {lifeline} is internal to `switchboard serve` "
                               "(a pipe it passes to each browser tab); run `switchboard "
                               "serve` instead", code="invalid_lifeline")
    threading.Thread(target=_end_with_serve, args=(lifeline,), name="serve-lifeline",
                     daemon=True).start()
    from navigator.cli import main

    return main(["ui", "--browser"])


def _end_with_serve(lifeline: int) -> None:
    """Block until serve's end of the pipe is closed, then end this process group:
    SIGTERM first (the app quits as on a quit request), SIGKILL after the grace."""
    try:
        while os.read(lifeline, 512):
            pass  # serve never writes; anything read is ignored
    except OSError:
        pass
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(LIFELINE_GRACE)
    os.killpg(os.getpgrp(), signal.SIGKILL)
