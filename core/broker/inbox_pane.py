"""The read-only inbox stream as its own pane in a view window, opened and closed by a key.

The pane runs ``switchboard inbox --stream`` for the project's person member
(who has no pane of its own), split below the view's main pane. It is tagged
``@sb_role=stream`` and ``@sb_inbox=<view_id>`` in the same tmux process that
splits it, so no snapshot ever sees an unknown second pane beside main (that
made main ambiguous: a placement recovery at once, and no mode change). It is
not a surface: nothing is recorded about it in the registry, and swaps of main
leave it in place. Every tmux step is one process whose first command is the
server identity guard; closing kills only a pane still carrying this view's tag.
"""

from __future__ import annotations

import shlex
import sys
from enum import StrEnum
from typing import TYPE_CHECKING

from core.model.errors import Conflict
from core.tmux.commands import Check, equals, gated, guarded, outcome, outcomes
from core.tmux.identity import identity_guard, run_guarded
from core.tmux.panes import OPT_ROLE, OPT_SERVES, PaneRole

if TYPE_CHECKING:
    from core.context.context import Context

OPT_INBOX = "@sb_inbox"
STREAM_HEIGHT = 8
#: The stream pane's title: its first line (and ``#{pane_title}``) say what it is.
STREAM_TITLE = "Inbox stream (read-only; l in the navigator closes it)"
#: The window hook that hands the keyboard on when a pane move (prefix + arrow, a
#: click) lands in the stream pane: to the agent's pane just above it (the stream is
#: split below main), so the pane is read-only and never keeps the focus, and prefix +
#: Right from the navigator still reaches the agent. Evaluated for the pane the move
#: made active; the agent's pane is no stream, so the hook's own move stops there.
BOUNCE_HOOK = "after-select-pane"
BOUNCE = (f"if -F '#{{&&:#{{==:#{{{OPT_ROLE}}},{PaneRole.STREAM.value}}},#{{pane_active}}}}' "
          "'select-pane -U'")


class StreamPane(StrEnum):
    OPENED = "opened"
    CLOSED = "closed"


def stream_command(argv: list[str]) -> str:
    """The stream pane's shell command: the terminal echoes nothing typed there (tmux
    already drops it: belt and braces), the first line is the pane's title, then the
    stream itself."""
    return (f"stty -echo -icanon 2>/dev/null; printf '%s\\n' {shlex.quote(STREAM_TITLE)}; "
            f"exec {shlex.join(argv)}")


def toggle_inbox_stream(ctx: Context, view_id: str) -> StreamPane:
    """Open the view's inbox stream pane, or close it when it is open."""
    from core.broker.membership import open_managed_broker, sync_project
    from storage.operations import views as views_ops

    view = views_ops.get_view(ctx.conn, view_id)
    if view["tmux_window_id"] is None or view["main_pane_id"] is None:
        raise Conflict("this view has no tmux window yet; enter the project first",
                       code="view_unbound")
    adapter = ctx.require_stage().adapter_for(view["tmux_server_id"])
    guard = identity_guard(adapter.expected)
    listed = adapter.runner.run([guard, ("list-panes", "-t", view["tmux_window_id"], "-F",
                                         f"#{{pane_id}}\t#{{{OPT_INBOX}}}")])
    existing = [line.split("\t")[0] for line in listed.stdout
                if line.endswith("\t" + view_id)]
    if existing:
        pane = existing[0]
        adapter.runner.run([guard, guarded(
            [Check(pane, equals(f"#{{{OPT_INBOX}}}", view_id), "not_inbox")],
            [("kill-pane", "-t", pane),
             ("set-hook", "-uw", "-t", view["tmux_window_id"], BOUNCE_HOOK)])])
        return StreamPane.CLOSED
    with open_managed_broker(ctx) as broker:
        fleet = sync_project(ctx, broker, view["project_id"])
        if fleet is None or fleet.person_id is None:
            raise Conflict("no agent of this project has run yet, so there is no inbox to "
                           "stream; start the workspace agent first", code="no_fleet")
        person = fleet.person_id
        broker_path = broker.store.path
    command = stream_command([sys.executable, "-m", "navigator.cli", "inbox", "--stream",
                              "--member", str(person), "--broker-db", str(broker_path)])
    window = view["tmux_window_id"]
    # Split without -d: the new pane is the window's active one, which the window
    # target then tags, titles and makes read-only (tmux drops what is typed there:
    # no "/exit" echoed as text); last-pane gives the keyboard back to whoever had it,
    # in the same tmux process, and the window hook then bounces any move into it.
    # The hook is off while the pane is set up (a select-pane of it would bounce).
    made = run_guarded(adapter.runner, adapter.expected, gated(
        [Check(view["main_pane_id"], equals("#{window_id}", window), "main_moved")],
        [("set-hook", "-uw", "-t", window, BOUNCE_HOOK),
         ("split-window", "-v", "-l", str(STREAM_HEIGHT), "-t", view["main_pane_id"],
          "-P", "-F", "#{pane_id}", command),
         ("set-option", "-p", "-t", window, OPT_ROLE, PaneRole.STREAM),
         ("set-option", "-p", "-t", window, OPT_SERVES, view_id),
         ("set-option", "-p", "-t", window, OPT_INBOX, view_id),
         ("select-pane", "-T", STREAM_TITLE, "-t", window),
         ("select-pane", "-d", "-t", window),
         ("last-pane", "-t", window),
         ("set-hook", "-w", "-t", window, BOUNCE_HOOK, BOUNCE)]), refusal_stops=True)
    if outcomes(made.stdout, missing_raises=False)[:1] != ["ok"]:
        raise Conflict("the view's main pane moved while the stream opened; nothing was "
                       "opened, press l again", code="view_changed")
    pane = next(line.strip() for line in made.stdout if line.startswith("%"))
    tagged = adapter.runner.run([guard, guarded(
        [Check(pane, equals("#{pane_dead}", "0"), "dead")], [])])
    if outcome(tagged.stdout) != "ok":
        raise Conflict("the inbox stream pane exited at once; run `switchboard inbox "
                       f"--stream --member {person}` to see why", code="stream_failed")
    return StreamPane.OPENED
