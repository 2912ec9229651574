"""What a view's navigator pane runs, the key that brings it back, and bringing it back.

The navigator pane's argv and environment, and the `prefix + S` binding's
shell line, are built from the home's child environment; the key binding is
a shell command expanded by tmux as a format, so its quoting (shell words,
then `#` doubled for tmux) lives here, next to the argv it mirrors, rather
than in the stage. So does the policy for a navigator found not running when
a view opens (respawn in place, or split anew), which only needs the adapter.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Mapping, Sequence

from core.model.enums import ViewMode
from core.model.errors import TmuxError
from core.tmux.adapter import TmuxAdapter
from core.tmux.errors import ServerIdentityMismatch, TmuxUnavailable
from core.tmux.panes import (  # ASLEEP_STATUS: importers find it here too
    ASLEEP_STATUS,
    OPT_VIEW,
    PaneRole,
    ServerSnapshot,
    ViewLayout,
)
from core.tmux.topology import KeyBinding, NavigatorSpawn

ENV_VIEW_ID = "SWITCHBOARD_VIEW_ID"
"""Set in the navigator pane's environment: the view that pane belongs to."""
NAVIGATOR_KEY = "S"
"""`prefix + S` in a view window brings the navigator back (direct -> navigator)."""
KEY_MARKER = "navigator.cli view mode"
"""Part of our binding's command: a binding containing it is ours to replace."""
MALLOC_ARENAS = "MALLOC_ARENA_MAX"
"""glibc gives each thread that allocates its own malloc arena; a navigator's load and
reconcile threads are idle almost always, and their arenas only held fragments
(~0.4 MB of every navigator after a hook storm). Navigator panes get one arena
unless the environment that opens them names a count; other C libraries ignore it."""


def default_navigator_argv(view_id: str) -> list[str]:
    """`switchboard ui --view VIEW` in this interpreter, bound to its view, with ``-OO``.

    A navigator lives as long as its view, one per view. ``-OO`` leaves out the
    docstrings of the ~500 modules it loads (Textual's document its whole API):
    1.7 MB of every navigator. Nothing a navigator runs reads a docstring, and the
    asserts it also drops only restate types. ``make setup`` compiles the
    optimized bytecode; elsewhere the first navigator writes it where the install is
    writable (a read-only install compiles the modules at each start instead)."""
    return [sys.executable, "-OO", "-m", "navigator.cli", "ui", "--view", view_id]


def navigator_spawn(view_id: str, argv: Sequence[str],
                    home_env: Mapping[str, str]) -> NavigatorSpawn:
    """The navigator pane of ``view_id``: ``argv`` with the home's env and its view id."""
    return NavigatorSpawn(view_id=view_id, command=tuple(argv),
                          env={MALLOC_ARENAS: os.environ.get(MALLOC_ARENAS, "1"), **home_env,
                               ENV_VIEW_ID: view_id})


def navigator_key_binding(home_env: Mapping[str, str]) -> KeyBinding:
    """`prefix + S` in any view window: bring the navigator pane back.

    Direct mode parks the navigator (fenced), so its own keys cannot undo
    it; this binding runs `switchboard view mode <view> navigator` for the
    view of the window the key was pressed in (`#{@sb_view}`, quoted by
    tmux), with this home's SWITCHBOARD_HOME/CONFIG. Outside a view window
    it does nothing; a failure is shown by tmux in the pane.
    """
    env = " ".join(f"{name}={shlex.quote(value)}" for name, value in home_env.items())
    literal = (f"exec env {env} {shlex.quote(sys.executable)} -m navigator.cli view mode "
               '"$view" navigator >/dev/null').replace("#", "##")
    shell = f'view=#{{q:{OPT_VIEW}}}; [ -n "$view" ] || exit 0; {literal}'
    return KeyBinding(table="prefix", key=NAVIGATOR_KEY, shell_command=shell,
                      marker=KEY_MARKER)


def dead_navigators(snap: ServerSnapshot, view_ids: set[str]) -> list[tuple[str, str]]:
    """(pane id, view id) of every dead navigator pane of ``view_ids`` in ``snap``; a
    parked one (``ASLEEP_STATUS``) is not dead in this sense: it waits to be shown."""
    return [(pane.pane_id, pane.serves_view) for pane in snap
            if pane.role is PaneRole.NAVIGATOR and pane.dead and pane.serves_view is not None
            and pane.serves_view in view_ids and pane.dead_status != ASLEEP_STATUS]


def restore_navigator(adapter: TmuxAdapter, layout: ViewLayout, mode: ViewMode,
                      spawn: NavigatorSpawn) -> ViewLayout:
    """Bring back a navigator that is not running, where it belongs.

    Dead (crashed or quit; the pane keeps remain-on-exit): respawned in
    place, in the view window or parked (one tmux process). Gone (killed)
    while the view is in navigator mode: a new one is split next to main
    (two). A refusal (someone else got there first) or any other tmux
    failure leaves the layout as it is, so the view still opens; reconcile
    and prefix + S try again.
    """
    try:
        if layout.navigator is not None and layout.navigator.dead:
            adapter.respawn_navigators([(layout.navigator.pane_id, spawn)])
        elif layout.navigator is None and mode == ViewMode.NAVIGATOR and \
                layout.main is not None:
            return adapter.set_mode(view_id=spawn.view_id, mode=ViewMode.NAVIGATOR,
                                    navigator=spawn)
    except (ServerIdentityMismatch, TmuxUnavailable):
        raise  # not the view's server any more: the caller decides
    except TmuxError:
        pass
    return layout
