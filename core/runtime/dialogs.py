"""Panes that wait on their CLI's own dialog are needs-input, with the dialog's words.

Only four kinds of pane are read, their bottom lines all in one tmux process
per turn (``core.tmux.screens``), parsed by ``core.providers.dialogs``: a pane
already known to show a dialog (every turn, to see it answered); a fresh launch
whose agent has not taken a first prompt (twice: 2 s and 10 s after its launch,
when a start-up dialog would show); a control turn no hook confirmed (2 s
and 10 s after it was submitted); and a session whose hook said its CLI asks the
person (needs-input, reason ``question``: Claude Code 2.1.332's
``Notification(agent_needs_input)`` for a notice it puts up mid-turn, or an
AskUserQuestion), at the next turn and 2 s and 10 s after the hook. The hook is the
trigger: nothing is polled, and an idle fleet is never read. A dialog found
makes the session needs-input (reason ``question``: the CLI asks the person) and
opens a ``provider_dialog`` recovery on the surface that quotes it; nothing is
ever typed into it. When the dialog is gone the recovery resolves, and the
session is ``unknown`` until its hooks speak again (only a Stop says ready).
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

from core.model.enums import Actionability, RecoveryKind, RecoveryState
from core.providers.dialogs import DIALOG_LINES, PaneDialog, find_dialog
from core.tmux.panes import ServerSnapshot
from storage.connection import write_transaction
from storage.operations import recoveries as recoveries_ops
from storage.operations import sessions as sessions_ops

if TYPE_CHECKING:
    from core.context.context import Context

CHECKPOINTS_MS: tuple[int, ...] = (2_000, 10_000)
"""When a fresh launch (after its launch) or an unconfirmed control turn (after its
submission) is read: once past each."""
ASKED_CHECKPOINTS_MS: tuple[int, ...] = (0, 2_000, 10_000)
"""When a session whose hook said its CLI asks the person is read, after that hook's
write: at once (the notice is up when the hook runs), then as a launch is, in case
it was drawn a moment later."""
WATCH_MS = 120_000
"""Beyond this a launch or control turn is no longer read for a dialog."""

_OPEN_DIALOG = ("(SELECT r.recovery_id FROM recoveries r WHERE r.kind = 'provider_dialog'"
                " AND r.subject_type = 'surface' AND r.subject_id = s.surface_id"
                " AND r.state = 'open')")
"""The surface's open dialog recovery (``s`` is the surface row), or NULL."""

_ASKED = "(ps.activity = 'needs_input' AND ps.activity_reason = 'question')"
"""A hook (or this watch) said the session's CLI asks the person something."""

_CANDIDATES = f"""
SELECT s.surface_id, s.pane_id, s.session_key, {_OPEN_DIALOG} AS open_dialog,
       CASE WHEN ps.last_turn_id IS NULL AND ps.activity <> 'working'
             AND NOT (ps.activity = 'needs_input' AND ps.activity_reason <> 'question')
            THEN l.created_at END AS fresh_since,
       (SELECT MAX(c.submitted_at) FROM control_turns c
         WHERE c.target_session_key = ps.session_key AND c.state = 'submitted')
           AS unconfirmed_since,
       CASE WHEN {_ASKED} THEN ps.updated_at END AS asked_since
  FROM surfaces s
  JOIN provider_sessions ps ON ps.session_key = s.session_key
  JOIN launch_intents l ON l.launch_id = s.launch_id
 WHERE s.lifecycle_state = 'live' AND s.tmux_server_id = ?
   AND ({_OPEN_DIALOG} IS NOT NULL
        OR (l.created_at >= ? AND ps.last_turn_id IS NULL)
        OR EXISTS (SELECT 1 FROM control_turns c WHERE c.target_session_key = ps.session_key
                    AND c.state = 'submitted' AND c.submitted_at >= ?)
        OR ({_ASKED} AND ps.updated_at >= ?))
 ORDER BY s.created_at DESC
"""

_reads: dict[tuple[str, int], int] = {}
"""(surface:kind, since) -> checkpoints already read, in this process: a reconcile
holder reads each launch, control turn or hook's ask at most once per checkpoint."""


def _due(row: sqlite3.Row, now: int) -> bool:
    """Read this pane this turn?"""
    if row["open_dialog"] is not None:
        return True
    due = False
    for kind, since, marks in (("launch", row["fresh_since"], CHECKPOINTS_MS),
                               ("control", row["unconfirmed_since"], CHECKPOINTS_MS),
                               ("asked", row["asked_since"], ASKED_CHECKPOINTS_MS)):
        if since is None or now - since > WATCH_MS:
            continue
        key = (f"{row['surface_id']}:{kind}", since)
        done = _reads.get(key, 0)
        passed = sum(1 for mark in marks if now - since >= mark)
        if passed > done:
            _reads[key] = passed
            due = True
    return due


def _forget(now: int) -> None:
    """Checkpoints of launches and turns past the watch are not kept."""
    for key in [k for k in _reads if now - k[1] > WATCH_MS]:
        del _reads[key]


def dialog_explanation(words: str) -> str:
    return (f"the agent's pane waits on its CLI's dialog: \"{words}\"; answer it in the pane "
            "(Switchboard never types into a dialog)")[:1024]


def watch_dialogs(ctx: Context, snap: ServerSnapshot | None, server_id: str | None,
                  now: int) -> int:
    """Read the panes that may wait on a dialog; record or clear it. Returns the count
    of sessions whose dialog state changed."""
    stage = ctx.stage
    if stage is None or snap is None or server_id is None:
        return 0
    rows = ctx.conn.execute(_CANDIDATES, (server_id, now - WATCH_MS, now - WATCH_MS,
                                          now - WATCH_MS)).fetchall()
    _forget(now)
    rows = [r for r in rows if snap.pane(r["pane_id"]) is not None and _due(r, now)]
    if not rows:
        return 0
    screens = stage.read_screens(server_id, [r["pane_id"] for r in rows], DIALOG_LINES)
    changed = 0
    with write_transaction(ctx.conn) as tx:
        for row in rows:
            screen = screens.get(row["pane_id"])
            if screen is None:
                continue  # not read this turn: nothing is concluded
            changed += _apply(ctx, tx, row, find_dialog(screen), now)
    return changed


def _apply(ctx: Context, tx: sqlite3.Connection, row: sqlite3.Row,
           dialog: PaneDialog | None, now: int) -> int:
    key = row["session_key"]
    # Read again under the write lock: the screen read took a tmux process, and a typist
    # about to type (``dialog_blocks_typing``) may have recorded the dialog meanwhile.
    open_dialog = tx.execute(
        "SELECT recovery_id FROM recoveries WHERE kind = 'provider_dialog'"
        " AND subject_type = 'surface' AND subject_id = ? AND state = 'open'",
        (row["surface_id"],)).fetchone()
    open_id = None if open_dialog is None else open_dialog[0]
    if dialog is not None:
        marked = sessions_ops.mark_waiting_on_dialog(tx, key, now)
        if open_id is None:
            recoveries_ops.open_recovery(
                tx, recovery_id=ctx.ids.new_id(), host_id=ctx.host_id,
                kind=RecoveryKind.PROVIDER_DIALOG, subject_type="surface",
                subject_id=row["surface_id"], actionability=Actionability.MANUAL,
                explanation=dialog_explanation(dialog.words), now=now)
            return 1
        return int(marked)
    if open_id is None:
        return 0
    recoveries_ops.close_recovery(tx, open_id, RecoveryState.RESOLVED, now)
    sessions_ops.clear_dialog_wait(tx, key, now)
    return 1



def dialog_blocks_typing(ctx: Context, surface_id: str, pane: str) -> bool:
    """One read of a pane a control line is about to be typed into: True, recorded as a
    dialog wait, when the screen shows its CLI's dialog (the line would answer it).

    A notice can come up after a turn ended ("Enter to continue" for gateway users),
    so a trusted Stop alone does not prove the prompt is what the screen shows."""
    stage = ctx.stage
    row = ctx.conn.execute(
        f"SELECT s.surface_id, s.pane_id, s.session_key, s.tmux_server_id,"
        f" {_OPEN_DIALOG} AS open_dialog FROM surfaces s"
        " WHERE s.surface_id = ? AND s.pane_id = ?",
        (surface_id, pane)).fetchone()
    if stage is None or row is None or row["tmux_server_id"] is None:
        return False
    screen = stage.read_screens(row["tmux_server_id"], [pane], DIALOG_LINES).get(pane)
    dialog = find_dialog(screen) if screen is not None else None
    if dialog is None:
        return False
    with write_transaction(ctx.conn) as tx:
        _apply(ctx, tx, row, dialog, ctx.now())
    return True
