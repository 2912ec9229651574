"""Read the bottom lines of several panes in one guarded tmux process.

Used where a screen is the only evidence (a CLI's own dialog: see
``core.providers.dialogs``): the reconcile turn reads every pane it needs in
one batch, never one tmux process per pane. Each capture is preceded by a
marker line naming its pane; a pane that vanished between the snapshot and
this read ends the batch (tmux stops a sequence at the first failure), and the
panes after it are simply not in the result, to be read next turn.
"""

from __future__ import annotations

from collections.abc import Sequence

from core.tmux.identity import ServerIdentity, run_guarded
from core.tmux.runner import TmuxRunner

_MARK = "@@sb-screen "
MAX_PANES_PER_READ = 8


def read_screens(runner: TmuxRunner, expected: ServerIdentity, pane_ids: Sequence[str],
                 lines: int) -> dict[str, list[str]]:
    """pane id -> the last ``lines`` lines of its visible screen (wrapped lines joined),
    for up to
    MAX_PANES_PER_READ panes, in one tmux process behind the identity guard."""
    panes = list(dict.fromkeys(pane_ids))[:MAX_PANES_PER_READ]
    if not panes:
        return {}
    commands: list[tuple[str, ...]] = []
    for pane in panes:
        commands.append(("display-message", "-p", "-t", pane, _MARK + "#{pane_id}"))
        # the visible screen only: a dialog is drawn there, and scrollback may still
        # hold one the person has answered
        commands.append(("capture-pane", "-p", "-J", "-t", pane))
    try:
        output = run_guarded(runner, expected, commands)
    except Exception:  # noqa: BLE001 - a failed read is "nothing seen", never an action
        return {}
    screens: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in output.stdout:
        if line.startswith(_MARK):
            current = screens.setdefault(line[len(_MARK):].strip(), [])
            continue
        if current is not None:
            current.append(line)
    found = {}
    for pane, text in screens.items():
        while text and not text[-1].strip():
            text.pop()  # a screen's blank bottom rows are not its last lines
        if pane in panes:
            found[pane] = text[-lines:]
    return found
