"""`switchboard ui`: run the Textual navigator (the default with no arguments).

Textual is imported inside the handler so every other command (notably the
hook path) starts without paying for it.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

#: Native modules a navigator never uses whose import maps OpenSSL (libssl and
#: libcrypto, ~4.5 MB of every navigator's RSS): asyncio imports ``ssl`` only to
#: offer TLS transports, and ``secrets`` reaches ``hashlib``'s OpenSSL binding
#: through ``hmac``. Both fall back cleanly when the import fails (asyncio then
#: has no TLS, hashlib uses CPython's own SHA-2 and MD5).
UNUSED_OPENSSL_MODULES = ("ssl", "_ssl", "_hashlib")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("ui", help="run the navigator app (what a view's left pane runs; bare "
                                  "`switchboard` there)")
    p.add_argument("--view", dest="view_id", default=os.environ.get("SWITCHBOARD_VIEW_ID"),
                   help="the view this navigator pane belongs to "
                        "(default: $SWITCHBOARD_VIEW_ID, else the selected view)")
    p.add_argument("--poll", type=float, default=0.25, metavar="SECONDS",
                   help="how often to check the registry for changes where the kernel "
                        "cannot say when it changes (default 0.25)")
    p.add_argument("--browser", action="store_true",
                   help="running in a browser (what `switchboard serve` starts): the preview "
                        "also shows the agent a view shows, read-only, since no tmux view "
                        "is on screen")
    p.set_defaults(handler=_run)


def forgo_openssl() -> None:
    """Make ``UNUSED_OPENSSL_MODULES`` unimportable in this process, unless already loaded.

    A navigator runs in every view's pane for as long as the view lives; it
    speaks to SQLite files and a local tmux socket, never TLS. Must run before
    asyncio is first imported (Textual imports it).
    """
    for name in UNUSED_OPENSSL_MODULES:
        if name not in sys.modules:  # None: `import name` raises ImportError
            sys.modules[name] = None  # type: ignore[assignment]


def _run(args: argparse.Namespace) -> int:
    forgo_openssl()
    from core.apps.client import EngineClient
    from navigator.app import SwitchboardApp

    try:
        client = EngineClient.open()
    except ImportError:
        # The tmux stage is optional for browsing; keys that move panes then
        # only change the registry, which the CLI would do as well.
        client = EngineClient.open(with_stage=False)
    if args.view_id:
        # A view of another home (its id copied, or $SWITCHBOARD_VIEW_ID from a pane of
        # another home) is refused before the screen is taken, never swapped for another.
        from core.state.names import NameKind
        from navigator.commands.names import resolve_one

        engine = client.engine
        try:
            args.view_id = resolve_one(engine.conn, engine.config, client.home.root,
                                       NameKind.VIEW, args.view_id)
        except BaseException:
            client.shutdown()
            raise
    app = SwitchboardApp(client, view_id=args.view_id, poll_interval=args.poll,
                         wake_on_change=True, start_server=True, browser=args.browser)
    app.run()
    if app.return_code in (0, None) and args.view_id and not args.browser \
            and os.environ.get("TMUX"):
        say_how_to_return()
    return 0


RETURN_HINT = ("\nThe navigator was closed (ctrl+q).\n"
               "prefix S brings it back here;\n"
               "{reopen} in a shell opens\n"
               "the view again.\n")
"""What a view's navigator pane shows after the person quits it: the pane stays
(remain-on-exit, so the view keeps its shape) and tmux adds "Pane is dead" below.
Short lines: the pane is about 40 columns wide."""


def say_how_to_return() -> None:
    """Leave ``RETURN_HINT`` on the pane's screen. A pane that is already gone (the
    navigator was parked or its pane killed) has no screen to write to."""
    from core.apps.demo import reopen_command
    from core.config.home import Home
    from core.tmux.panes import LAST_WORDS_PAUSE_S

    try:
        reopen = reopen_command(Home.from_env().root)
    except OSError:  # an unreadable config: the plain command is still right outside the demo
        reopen = "`switchboard`"
    try:
        sys.stdout.write(RETURN_HINT.format(reopen=reopen))
        sys.stdout.flush()
    except OSError:
        return
    time.sleep(LAST_WORDS_PAUSE_S)  # tmux reads the hint before the pane dies
