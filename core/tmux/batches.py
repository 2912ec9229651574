"""The view's main position when no provider pane is swapped in: placeholders and re-reads.

`topology` moves provider panes (present, park, set_mode); these are the
smaller batches around them that the stage used to build inline: re-read the
pane already in main, show a parked placeholder as an empty frame (creating
one if the view has none parked), and split a placeholder back into a window
left with only its navigator. Each batch is one identity-guarded tmux process
(a step never costs one process per pane), and each step reports what tmux
observed so the stage records the post-state, not what it asked for.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

import core.tmux.topology as topology
from core.tmux.commands import Check, both, equals, gated, guarded, outcome, outcomes
from core.tmux.errors import PlacementRefused, TmuxCommandFailed
from core.tmux.gates import open_gate_command
from core.tmux.identity import ServerIdentity, run_guarded
from core.tmux.panes import (
    OPT_FRAME,
    OPT_HOLDING,
    OPT_ROLE,
    OPT_SERVES,
    OPT_SURFACE,
    OPT_VIEW,
    PaneRole,
    PaneSnapshot,
    check_tag_value,
    checked_snapshot,
    pane_lines,
    pane_state_command,
)
from core.tmux.runner import TmuxCommand, TmuxRunner


def reread_pane(runner: TmuxRunner, expected: ServerIdentity, pane_id: str, *,
                open_gate: str | None = None) -> PaneSnapshot | None:
    """Re-read ``pane_id`` behind the identity guard, opening ``open_gate`` in the same process.

    A recorded locator is only evidence on its own server, so even "nothing to
    swap" is a guarded re-read (and a still pending launch gate opens with it).
    None when tmux no longer reports the pane.
    """
    output = run_guarded(runner, expected, [
        pane_state_command(pane_id), *([open_gate_command(open_gate)] if open_gate else [])])
    shown = pane_lines(output.stdout)
    return shown[0] if shown else None


def present_placeholder(runner: TmuxRunner, expected: ServerIdentity, *, view_id: str,
                        holding_session: str, placeholder_command: Sequence[str]) -> str:
    """Show the view's placeholder in main (an empty frame); park what was there.

    A snapshot, then (only if the view has no parked placeholder) a new one,
    then the guarded swap. Returns the placeholder pane, now in main.
    """
    snap = checked_snapshot(runner, expected)
    layout = snap.view(view_id)
    if layout is None or layout.main is None:
        raise PlacementRefused(f"view {view_id} has no single main pane; reconcile it.")
    if layout.main.role is PaneRole.PLACEHOLDER:
        return layout.main.pane_id
    # (a placeholder is a dead pane once it has printed: see core.model.placeholder)
    placeholder = next((p for p in snap if p.role is PaneRole.PLACEHOLDER and p.parked
                        and p.serves_view == view_id), None)
    if placeholder is None:
        placeholder = new_parked_placeholder(runner, expected, holding_session=holding_session,
                                             view_id=view_id,
                                             placeholder_command=placeholder_command)
    show_parked_placeholder(runner, expected, view_id=view_id, main=layout.main.pane_id,
                            held=placeholder.pane_id)
    return placeholder.pane_id


def restore_main(runner: TmuxRunner, expected: ServerIdentity, *, view_id: str,
                 placeholder_command: Sequence[str]) -> str | None:
    """A view window left with only its navigator gets a placeholder as main.

    Read, split (gated, see ``split_placeholder_main``), re-read. Returns the
    new main pane, or None when nothing needed or was done.
    """
    layout = checked_snapshot(runner, expected).view(view_id)
    if layout is None or layout.main is not None or layout.extra_panes or \
            layout.navigator is None or layout.navigator.parked:
        return None
    if not split_placeholder_main(runner, expected, view_id=view_id,
                                  navigator=layout.navigator.pane_id, window=layout.window_id,
                                  placeholder_command=placeholder_command):
        return None
    layout = checked_snapshot(runner, expected).view(view_id)
    if layout is None or layout.main is None:
        return None
    return layout.main.pane_id


def show_parked_placeholder(runner: TmuxRunner, expected: ServerIdentity, *, view_id: str,
                            main: str, held: str) -> None:
    """Swap the parked placeholder ``held`` into main (``main`` is parked, fenced).

    Guarded in tmux: ``held`` is still a placeholder in holding and ``main`` is
    this view's, not its navigator. A refusal raises PlacementRefused (a vanished
    pane PaneNotFound); either way nothing moved.
    """
    is_placeholder = equals(f"#{{{OPT_ROLE}}}", PaneRole.PLACEHOLDER)
    output = run_guarded(runner, expected, [
        guarded([
            Check(held, both(is_placeholder, f"#{{{OPT_HOLDING}}}"), "placeholder_moved"),
            Check(main, both(equals(f"#{{{OPT_VIEW}}}", view_id),
                             f"#{{!=:#{{{OPT_ROLE}}},{PaneRole.NAVIGATOR}}}"),
                  "main_not_in_view"),
        ], [("swap-pane", "-d", "-Z", "-s", held, "-t", main),
            ("select-pane", "-d", "-t", main),
            ("select-pane", "-e", "-t", held)]),
        pane_state_command(held),
    ])
    result = outcome(output.stdout)
    if result != "ok":
        raise PlacementRefused(f"showing the placeholder of view {view_id} was refused "
                               f"({result}); nothing moved. Reconcile the view.")


def split_placeholder_main(runner: TmuxRunner, expected: ServerIdentity, *, view_id: str,
                           navigator: str, window: str,
                           placeholder_command: Sequence[str]) -> bool:
    """Split a placeholder in as main, right of the view's lone ``navigator``.

    Gated on the navigator being this view's and alone in ``window``, so a
    window that has a main again (someone else repaired it) is left alone.
    True when the split ran.
    """
    output = run_guarded(runner, expected, [
        *gated([Check(navigator, both(equals("#{window_id}", window),
                                      equals("#{window_panes}", "1"),
                                      equals(f"#{{{OPT_SERVES}}}", view_id)),
                      "main_present")], [
            ("split-window", "-h", "-t", navigator, "--", *placeholder_command),
            ("set-option", "-p", "-t", window, OPT_ROLE, PaneRole.PLACEHOLDER),
            ("set-option", "-p", "-t", window, OPT_SERVES, view_id),
            *topology.kept_after_exit(window),
            ("resize-pane", "-t", navigator, "-x", str(topology.DEFAULT_NAVIGATOR_WIDTH)),
            ("select-pane", "-t", navigator),
        ]),
    ], refusal_stops=True)
    return outcomes(output.stdout, missing_raises=False) == ["ok"]


def new_parked_placeholder(runner: TmuxRunner, expected: ServerIdentity, *,
                           holding_session: str, view_id: str,
                           placeholder_command: Sequence[str]) -> PaneSnapshot:
    """A new placeholder pane of ``view_id`` in its own holding window, re-read."""
    name = f"sbp-{uuid.uuid4().hex[:12]}"
    window = f"={holding_session}:={name}"
    output = run_guarded(runner, expected, [
        ("new-window", "-d", "-t", f"={holding_session}:", "-n", name, "--",
         *placeholder_command),
        ("set-option", "-p", "-t", window, OPT_ROLE, PaneRole.PLACEHOLDER),
        ("set-option", "-p", "-t", window, OPT_SERVES, view_id),
        *topology.kept_after_exit(window),
        ("select-pane", "-d", "-t", window),
        pane_state_command(window),
    ])
    panes = pane_lines(output.stdout)
    if not panes:
        raise TmuxCommandFailed("the new placeholder pane was not reported")
    return panes[-1]


def evict_foreign(runner: TmuxRunner, expected: ServerIdentity, *, holding_session: str,
                  moves: Sequence[tuple[str, str, str]],
                  refit_windows: Sequence[str] = ()) -> dict[str, PaneSnapshot | None]:
    """Move foreign panes out of view windows into the holding session, still running.

    ``moves`` are (pane, view, frame): a pane someone split into ``view``'s window,
    to be listed under ``frame``. One tmux process for all of them: per pane a
    gate (still in that view's window, outside holding, and carrying no
    Switchboard tag, so a pane Switchboard made or already moved is never
    touched), then ``break-pane -d`` into its own holding window, the tags that
    make it an extra pane of the frame (``@sb_role extra``, ``@sb_serves``,
    ``@sb_frame``), ``remain-on-exit off`` (its exit removes it, so its record
    goes with it) and a re-read. A refusal stops the batch (see ``gated``); the
    panes not moved are read again by the next pass. Returns each pane re-read
    after its move, or None when it was not moved.

    Then each window of ``refit_windows`` (the view windows the panes left) runs its
    navigator's own fit hook once (``window-resized``, set by
    ``topology.navigator_fit_commands``): whoever split the window may have laid it
    out again (Claude Code's tmux teammates shrink or widen its first pane to 30%),
    and the navigator gets its configured width back. A window without the hook
    (direct mode) is left as it is.
    """
    commands: list[TmuxCommand] = []
    for pane_id, view_id, frame_id in moves:
        name = f"sbx-{uuid.uuid4().hex[:12]}"
        commands += [
            *gated([Check(pane_id, both(equals(f"#{{{OPT_VIEW}}}", check_tag_value(view_id)),
                                        f"#{{?#{{{OPT_HOLDING}}},0,1}}",
                                        equals(f"#{{{OPT_ROLE}}}", ""),
                                        equals(f"#{{{OPT_SURFACE}}}", "")),
                          "not_foreign")], [
                ("break-pane", "-d", "-s", pane_id, "-t", f"={holding_session}:", "-n", name),
                ("set-option", "-p", "-t", pane_id, OPT_ROLE, PaneRole.EXTRA),
                ("set-option", "-p", "-t", pane_id, OPT_SERVES, view_id),
                ("set-option", "-p", "-t", pane_id, OPT_FRAME, check_tag_value(frame_id)),
                ("set-option", "-p", "-t", pane_id, "remain-on-exit", "off"),
            ]),
            pane_state_command(pane_id),
        ]
    commands += [("set-hook", "-R", "-w", "-t", window, "window-resized")
                 for window in dict.fromkeys(refit_windows)]
    output = run_guarded(runner, expected, commands, refusal_stops=True)
    labels = outcomes(output.stdout, missing_raises=False)
    moved = {p.pane_id: p for p in pane_lines(output.stdout)}
    return {pane_id: moved.get(pane_id) if index < len(labels) and labels[index] == "ok"
            else None for index, (pane_id, _view, _frame) in enumerate(moves)}


def show_extra(runner: TmuxRunner, expected: ServerIdentity, *, view_id: str, frame_id: str,
               extra_pane: str, main_pane: str) -> PaneSnapshot | None:
    """Swap the extra pane ``extra_pane`` of ``frame_id`` into main; park and fence main.

    One guarded process: the extra pane is still tagged as that frame's and parked,
    alive; main sits in ``view_id``'s window and is not its navigator. The extra
    pane takes input (it is the person's own). Returns it re-read, in main, or
    None when a guard refused (nothing moved).
    """
    is_extra = both(equals(f"#{{{OPT_ROLE}}}", PaneRole.EXTRA),
                    equals(f"#{{{OPT_FRAME}}}", check_tag_value(frame_id)))
    output = run_guarded(runner, expected, [
        guarded([
            Check(extra_pane, both(is_extra, f"#{{{OPT_HOLDING}}}", "#{?pane_dead,0,1}"),
                  "extra_moved"),
            Check(main_pane, both(equals(f"#{{{OPT_VIEW}}}", check_tag_value(view_id)),
                                  f"#{{!=:#{{{OPT_ROLE}}},{PaneRole.NAVIGATOR}}}",
                                  f"#{{!=:#{{pane_id}},{extra_pane}}}"),
                  "main_not_in_view"),
        ], [("swap-pane", "-d", "-Z", "-s", extra_pane, "-t", main_pane),
            ("select-pane", "-d", "-t", main_pane),
            ("select-pane", "-e", "-t", extra_pane)]),
        pane_state_command(extra_pane),
    ])
    if outcome(output.stdout) != "ok":
        return None
    shown = pane_lines(output.stdout)
    return shown[0] if shown else None


def kill_extra(runner: TmuxRunner, expected: ServerIdentity, *, frame_id: str,
               extra_pane: str) -> bool:
    """Kill the parked extra pane ``extra_pane`` of ``frame_id``, and nothing else.

    Gated in the same tmux queue: tagged as that frame's extra pane, in the holding
    session and alone in its window (never a view, a navigator or an agent). True
    when it was killed.
    """
    output = run_guarded(runner, expected, [
        guarded([Check(extra_pane, both(equals(f"#{{{OPT_ROLE}}}", PaneRole.EXTRA),
                                        equals(f"#{{{OPT_FRAME}}}", check_tag_value(frame_id)),
                                        f"#{{{OPT_HOLDING}}}",
                                        equals("#{window_panes}", "1")), "not_extra")],
                [("kill-pane", "-t", extra_pane)]),
    ])
    return outcome(output.stdout) == "ok"
