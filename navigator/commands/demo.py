"""`switchboard demo`: the navigator on an embedded default, with fake agents."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from core.apps.demo import DemoSession


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="open a demo view (private tmux server, fake agents)")
    p.add_argument("--home", type=Path, help="demo home (default: XDG state/switchboard-demo)")
    p.add_argument("--no-attach", action="store_true", help="set up only; print how to attach")
    end = p.add_mutually_exclusive_group()
    end.add_argument("--stop", action="store_true",
                     help="stop the demo's tmux server and fake agents (the home stays)")
    end.add_argument("--reset", action="store_true",
                     help="stop the demo and delete its home; the next run starts fresh")
    p.set_defaults(handler=_demo)


def _demo(args: argparse.Namespace) -> int:
    from core.apps.demo import build, default_demo_home, stop
    from core.model.hints import command
    from navigator.commands.output import say

    if args.stop or args.reset:
        ended = stop(args.home or default_demo_home(), reset=args.reset)
        state = "stopped its tmux server" if ended.server_was_running else "was not running"
        again = ("--home", str(ended.home)) if args.home else ()
        say(f"demo {state}" + (f"; deleted {ended.home}" if ended.removed else
                               f"; home kept at {ended.home} "
                               f"({command('demo', '--reset', *again)} deletes it)"))
        return 0
    session = build(args.home or default_demo_home())
    # A hint names the same home, or it would stop (and find) another demo.
    home = ("--home", str(session.home)) if args.home else ()
    say(f"demo home: {session.home}\nattach:    {session.attach_command}\n"
        f"leave:     tmux detach (prefix d); stop it: {command('demo', '--stop', *home)}")
    if args.no_attach or not sys.stdin.isatty():
        return 0
    inside = os.environ.get("TMUX", "").split(",")[0]
    if inside and _same_socket(inside, session.socket_path):
        # A pane of the demo itself: its own client goes to the view, as `open` does.
        os.execvp("tmux", ["tmux", "-S", session.socket_path, "switch-client", "-t",
                           session.window_id])
    if inside:
        if _move_client(inside, session):
            say("this terminal moved to the demo's own tmux server (no tmux inside "
                "tmux); prefix d there brings it back to this session")
        else:
            say("you are inside tmux: attaching here would nest a second tmux with the "
                "same prefix; run the attach line above in a terminal outside tmux (or "
                "detach first with prefix d)")
        return 0
    env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}
    os.execvpe("tmux", ["tmux", "-S", session.socket_path, "attach", "-t",
                        session.window_id], env)
    return 0


def _same_socket(current: str, socket_path: str) -> bool:
    try:
        return Path(current).resolve() == Path(socket_path).resolve()
    except OSError:
        return False


def _move_client(own_socket: str, session: DemoSession) -> bool:
    """Move the person's tmux client (of the pane this runs in) to the demo's server
    and back when it detaches there (``core.apps.demo.handover_command``).

    The client is the most recently active one on this pane's session (tmux's own
    choice of a current client), found and detached with two commands on the
    person's own server; False when there is none on this pane's session (a
    pane nobody looks at), or a value cannot be quoted for every shell, and nothing
    was changed.
    """
    import subprocess

    from core.apps.demo import handover_command
    from core.tmux.runner import escape_arg

    def tmux(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["tmux", "-S", own_socket, *argv], capture_output=True,
                              text=True, timeout=10, check=False)

    pane = os.environ.get("TMUX_PANE", "")
    if not pane:
        return False
    # The clients on this pane's session, the most recently active first (tmux's own
    # choice of a current client); `display-message` without a target would name any
    # client of the server when none looks at this session: another terminal.
    found = tmux("list-clients", "-t", pane, "-F",
                 "#{client_activity}\t#{client_name}\t#{session_id}")
    clients = sorted((line.split("\t") for line in found.stdout.splitlines()
                      if line.count("\t") == 2),
                     key=lambda row: int(row[0]) if row[0].isdigit() else 0, reverse=True)
    if found.returncode != 0 or not clients:
        return False
    _activity, client, own_session = clients[0]
    shell = handover_command(session.socket_path, session.window_id, own_socket, own_session)
    if shell is None:
        return False
    return tmux("detach-client", "-t", client, "-E", escape_arg(shell)).returncode == 0
