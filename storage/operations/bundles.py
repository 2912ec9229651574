"""The start bundle's exact rollback, before its provider could run.

A start bundle (core.engine.engine.Engine.start_bundle) is: the provider session and its
membership (a new start), the frame's current-session pointer, a planned
launch and surface, the placement moved to ``staged``, and the WorkContext
claim taken when it was released. When the provider is refused before any
pane exists (missing executable, refused version, no tmux server), the
contract asks for an exact rollback: the frame is empty again, its pointer is
what it was, the claim is released if the bundle took it, and ``n`` works at
once. Rows are retained for audit (launch failed, surface retired, a never-run
session marked missing), never deleted.
"""

from __future__ import annotations

import sqlite3

from core.model.enums import PlacementState
from storage.operations import frames as frames_ops
from storage.operations import sessions as sessions_ops
from storage.operations import views as views_ops


def roll_back_start_bundle(conn: sqlite3.Connection, launch_id: str, *,
                           new_placement_id: str, failure: str, now: int) -> bool:
    """Undo one start bundle whose provider never ran; False (nothing changed) when a
    pane was already recorded or the bundle is not in place any more."""
    launch = conn.execute("SELECT * FROM launch_intents WHERE launch_id = ?",
                          (launch_id,)).fetchone()
    surface = conn.execute("SELECT * FROM surfaces WHERE launch_id = ?",
                           (launch_id,)).fetchone()
    if launch is None or surface is None or surface["lifecycle_state"] != "planned" or \
            launch["state"] not in ("planned", "authorized", "failed"):
        return False
    placement = conn.execute(
        "SELECT * FROM frame_placements WHERE surface_id = ? AND state = 'staged'",
        (surface["surface_id"],)).fetchone()
    if placement is None:
        return False
    if launch["state"] != "failed":
        sessions_ops.move_launch(conn, launch_id, launch["state"], "failed", now,
                                 failure=failure[:1024])
    sessions_ops.move_surface(conn, surface["surface_id"], "retired", now)
    sessions_ops.revoke_capabilities(conn, surface["surface_id"], now)
    views_ops.move_placement(conn, placement["placement_id"], placement["generation"],
                             PlacementState.ORPHANED, now)
    views_ops.insert_placement(conn, placement_id=new_placement_id,
                               host_id=placement["host_id"], view_id=placement["view_id"],
                               frame_id=placement["frame_id"],
                               state=PlacementState.STOPPED_AFFINITY, surface_id=None, now=now)
    frame = frames_ops.get_frame(conn, launch["frame_id"])
    if launch["action"] == "new" and launch["session_key"]:
        # The new session never ran: the pointer goes back to the one before (if any),
        # and the row says it cannot be resumed.
        # The one before that ever ran (had a pane): an earlier rolled-back start did not.
        previous = conn.execute(
            "SELECT fs.session_key FROM frame_sessions fs WHERE fs.frame_id = ?"
            " AND fs.session_key <> ? AND EXISTS (SELECT 1 FROM surfaces s"
            " WHERE s.session_key = fs.session_key AND s.pane_id IS NOT NULL)"
            " ORDER BY fs.ordinal DESC LIMIT 1", (frame["frame_id"], launch["session_key"])
        ).fetchone()
        frames_ops.set_current_session(conn, frame["frame_id"],
                                       previous["session_key"] if previous else None, now)
        conn.execute("UPDATE provider_sessions SET runtime_presence = 'stopped',"
                     " resumability = 'missing', updated_at = ? WHERE session_key = ?",
                     (now, launch["session_key"]))
    _release_if_taken(conn, frame["work_context_id"], frame["frame_id"], now)
    return True


def _release_if_taken(conn: sqlite3.Connection, work_context_id: str, frame_id: str,
                      now: int) -> None:
    """Release the claim the bundle took: held for this frame, and nothing else in the
    context can still change the checkout (the release preconditions)."""
    context = frames_ops.get_context(conn, work_context_id)
    if context["claim_state"] != "held" or context["foreground_frame_id"] != frame_id or \
            context["background_state"] != "safe":
        return
    busy = conn.execute(
        "SELECT (SELECT COUNT(*) FROM surfaces s JOIN frame_placements p"
        "        ON p.surface_id = s.surface_id JOIN frames f ON f.frame_id = p.frame_id"
        "        WHERE f.work_context_id = ? AND s.lifecycle_state IN ('live', 'planned'))"
        " + (SELECT COUNT(*) FROM view_transitions WHERE work_context_id = ? AND state IN"
        "    ('prepared', 'executing', 'presented', 'awaiting_claim', 'settling'))",
        (work_context_id, work_context_id)).fetchone()[0]
    if busy == 0:
        frames_ops.release_claim(conn, work_context_id, context["claim_generation"], now)
