"""What each Gemini CLI hook event says about the agent, as data (issue 41).

Recorded from Gemini CLI 0.61.0 (``tests/fixtures/hooks/gemini-0.61.0.tsv``); this table
is ``core.providers.hooks._TABLES``' entry for ``gemini``. Every payload carries ``session_id``,
``transcript_path``, ``cwd``, ``hook_event_name`` and ``timestamp``; none carries a turn
id, so a turn end is matched to its prompt by order, not by key.

==========================================  ==========================================
event (payload refinement)                  activity / reason / runtime
==========================================  ==========================================
BeforeAgent (the person's prompt)           working
BeforeTool, AfterTool                       working (evidence the turn runs)
Notification(notification_type=             needs_input / permission (its "Allow
ToolPermission)                             execution of [Shell]?" dialog)
Notification (any other type)               no change
AfterAgent                                  ready / turn_complete
SessionStart (source startup|resume)        runtime live, activity unchanged
SessionEnd (reason exit; sent twice)        runtime stopped, activity unchanged
anything else                               no change
==========================================  ==========================================

No event at all for: the start-up "Do you trust the files in this folder?" dialog
(SessionStart comes only once it is answered), an interrupted turn (Esc) and a turn
the service refused (429): the activity is unknown then, never guessed; the dialog
watch reads the screen. Same imports as the hook path: stdlib and the vocabulary only.
"""

from __future__ import annotations

from core.model.session_enums import Activity, ActivityReason, RuntimePresence

GEMINI_TOOL_PERMISSION = "ToolPermission"
"""``notification_type`` of the permission dialog (0.61.0, recorded)."""

# event -> (kind, activity, reason, runtime); kind is a ``HookKind`` value.
Outcome = tuple[str, Activity | None, ActivityReason | None, RuntimePresence | None]
GEMINI_OUTCOMES: dict[str, Outcome] = {
    "SessionStart": ("session_started", None, None, RuntimePresence.LIVE),
    "BeforeAgent": ("prompt_submitted", Activity.WORKING, None, None),
    "BeforeTool": ("tool_started", Activity.WORKING, None, None),
    "AfterTool": ("tool_finished", Activity.WORKING, None, None),
    "Notification": ("notification", None, None, None),
    "AfterAgent": ("turn_stopped", Activity.READY, ActivityReason.TURN_COMPLETE, None),
    "SessionEnd": ("session_ended", None, None, RuntimePresence.STOPPED),
}
GEMINI_NOTIFICATIONS: dict[str, tuple[Activity, ActivityReason]] = {
    GEMINI_TOOL_PERMISSION: (Activity.NEEDS_INPUT, ActivityReason.PERMISSION),
}
