"""Zoom a view's main again after its window was rebuilt (`switchboard restore`).

A rebuilt window starts unzoomed, and reconcile only ever commits the zoom tmux
shows: restore read the person's zoom from the registry before the rebuild and
puts it back here. In navigator mode that is tmux's own zoom of main; in direct
mode (one pane, which tmux cannot zoom) it is the window's ``@sb_zoomed`` memo,
which the way back to navigator mode re-applies (``core.tmux.topology.set_mode``).
One identity-guarded tmux process; the toggle is conditional, so running it on a
window already zoomed changes nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.model.enums import ViewMode
from core.tmux.identity import run_guarded
from core.tmux.panes import OPT_ZOOMED
from storage.connection import write_transaction
from storage.operations import views as views_ops

if TYPE_CHECKING:
    from core.engine.engine import Engine


def zoom_main(engine: Engine, view_id: str) -> bool:
    """Zoom the view's main (or remember the zoom in direct mode); True when it is zoomed."""
    view = views_ops.get_view(engine.conn, view_id)
    if not view["tmux_window_id"]:
        return False
    adapter = engine.require_stage().adapter_for(view["tmux_server_id"])
    layout = adapter.checked_snapshot().view(view_id)
    if layout is None or layout.main is None:
        return False
    if not layout.zoomed:
        main = layout.main.pane_id
        if layout.mode is ViewMode.NAVIGATOR:
            command = ("if-shell", "-F", "-t", main, "#{?window_zoomed_flag,,1}",
                       f"resize-pane -Z -t {main}")
        else:
            command = ("set-option", "-w", "-t", layout.window_id, OPT_ZOOMED, "1")
        run_guarded(adapter.runner, adapter.expected, [command])
    with write_transaction(engine.conn) as conn:
        views_ops.set_zoom(conn, view_id, True)
    return True
