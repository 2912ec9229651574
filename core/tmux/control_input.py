"""The fenced control turn: one line typed into one exact, fenced pane.

Live input goes only to a managed pane whose client input is disabled
(`select-pane -d`), so nothing a person types can interleave with it, and it
is fenced again in the same tmux queue right after the Enter. The text is one
of the fixed templates (control.claim.v1, control.continue.v1); nothing is ever
interpolated into them, and any other text is refused before tmux runs.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from core.model.control_line import CONTROL_TEMPLATE, FIXED_LINES
from core.tmux.commands import Check, both, equals, guarded, outcome
from core.tmux.errors import PaneNotFenced, TmuxCommandFailed, UnmanagedPane
from core.tmux.identity import ServerIdentity, run_guarded
from core.tmux.panes import (
    OPT_SURFACE,
    PaneSnapshot,
    check_tag_value,
    checked_snapshot,
    pane_lines,
    pane_state_command,
)
from core.tmux.runner import TmuxRunner

CONTROL_CLAIM_TEXT = CONTROL_TEMPLATE
"""control.claim.v1: the claim line (``FIXED_LINES`` are all Switchboard ever types)."""

_ALIVE = "#{?pane_dead,0,1}"

ENTER_AFTER_PASTE_S = 0.2
"""Pause between the pasted line and its Enter. Claude Code ignores an Enter that
arrives in the same read as a bracketed paste (the line stays in its input box,
unsent); it types into other terminals the same way, Enter ~10 ms after the
paste. The pane stays fenced (input off) during the pause, and `run-shell`
blocks only this command queue, so the step is still one tmux process."""


@dataclass(frozen=True)
class ControlSubmission:
    """What tmux reported after the one submission: the pane is fenced again."""

    pane: PaneSnapshot
    buffer_name: str


def _managed(surface_id: str) -> str:
    return both(equals(f"#{{{OPT_SURFACE}}}", check_tag_value(surface_id)), _ALIVE)


def submit_control_line(
    runner: TmuxRunner,
    expected: ServerIdentity,
    *,
    pane_id: str,
    surface_id: str,
    text: str = CONTROL_CLAIM_TEXT,
) -> ControlSubmission:
    """Type ``text`` (CONTROL_CLAIM_TEXT unless another of ``FIXED_LINES``) + Enter once
    into the fenced pane of `surface_id`.

    One tmux process, one queue: identity guard; refuse unless the pane is
    alive, tagged `@sb_surface == surface_id` and input-disabled; then
    set-buffer (unique name), select-pane -e, paste-buffer -p -d (bracketed,
    buffer deleted), select-pane -d, a short pause (ENTER_AFTER_PASTE_S),
    select-pane -e, send-keys Enter, select-pane -d; then re-read the pane.
    A refusal types nothing and creates no buffer. The caller counts the
    submission before calling: any exception after that means `uncertain`.
    """
    if text not in FIXED_LINES:
        raise ValueError("only the fixed control lines are ever typed into an agent")
    buffer_name = f"sb-ctl-{uuid.uuid4().hex}"
    output = run_guarded(runner, expected, [
        guarded([
            Check(pane_id, _managed(surface_id), "unmanaged"),
            Check(pane_id, "#{pane_input_off}", "not_fenced"),
        ], [
            ("set-buffer", "-b", buffer_name, "--", text),
            ("select-pane", "-e", "-t", pane_id),
            ("paste-buffer", "-p", "-d", "-b", buffer_name, "-t", pane_id),
            ("select-pane", "-d", "-t", pane_id),
            ("run-shell", f"sleep {ENTER_AFTER_PASTE_S}"),
            ("select-pane", "-e", "-t", pane_id),
            ("send-keys", "-t", pane_id, "Enter"),
            ("select-pane", "-d", "-t", pane_id),
        ]),
        pane_state_command(pane_id),
    ])
    result = outcome(output.stdout)
    if result == "unmanaged":
        raise UnmanagedPane(
            f"pane {pane_id} is not the live launch-owned pane of surface {surface_id}; "
            "nothing was typed."
        )
    if result == "not_fenced":
        raise PaneNotFenced(
            f"pane {pane_id} accepts client input; control text is only typed into a fenced "
            "(input-disabled) pane. Nothing was typed."
        )
    panes = pane_lines(output.stdout)
    if result != "ok" or not panes:
        raise TmuxCommandFailed(
            f"tmux did not confirm the control line for pane {pane_id}; treat it as uncertain."
        )
    return ControlSubmission(pane=panes[-1], buffer_name=buffer_name)


def set_input(
    runner: TmuxRunner,
    expected: ServerIdentity,
    *,
    pane_id: str,
    surface_id: str,
    enabled: bool,
) -> PaneSnapshot:
    """Enable (watchdog / UserPromptSubmit) or disable (fence) client input of a managed pane."""
    output = run_guarded(runner, expected, [
        guarded(
            [Check(pane_id, equals(f"#{{{OPT_SURFACE}}}", check_tag_value(surface_id)),
                   "unmanaged")],
            [("select-pane", "-e" if enabled else "-d", "-t", pane_id)],
        ),
        pane_state_command(pane_id),
    ])
    result = outcome(output.stdout)
    if result == "unmanaged":
        raise UnmanagedPane(
            f"pane {pane_id} is not the launch-owned pane of surface {surface_id}; "
            "its input was left as it is."
        )
    panes = pane_lines(output.stdout)
    if result != "ok" or not panes:
        raise TmuxCommandFailed(f"tmux did not confirm the input change of pane {pane_id}")
    return panes[-1]


def enable_input(
    runner: TmuxRunner, expected: ServerIdentity, *, pane_id: str, surface_id: str
) -> PaneSnapshot:
    """Lift the fence after UserPromptSubmit evidence or the watchdog timeout."""
    return set_input(runner, expected, pane_id=pane_id, surface_id=surface_id, enabled=True)


def disable_input(
    runner: TmuxRunner, expected: ServerIdentity, *, pane_id: str, surface_id: str
) -> PaneSnapshot:
    """Fence a managed pane so no client keystroke reaches it."""
    return set_input(runner, expected, pane_id=pane_id, surface_id=surface_id, enabled=False)


def lift_fence(
    runner: TmuxRunner, expected: ServerIdentity, *, pane_id: str, surface_id: str
) -> bool:
    """Re-enable input of a managed pane shown in main; True if its input is on afterwards.

    Never a parked one: every holding pane stays fenced. One snapshot, then
    (only while the pane is still fenced) the guarded enable.
    """
    pane = checked_snapshot(runner, expected).pane(pane_id)
    if pane is None or pane.parked or pane.surface_id != surface_id:
        return False
    if not pane.input_off:
        return True
    return not enable_input(runner, expected, pane_id=pane_id, surface_id=surface_id).input_off
