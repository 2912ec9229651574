"""What each OpenCode plugin event says about the agent, as data (issue 41).

OpenCode has no hook commands: a plugin (an ES module named in the launch's config)
receives every event of its bus, ``{"id", "type", "properties"}``, plus named hooks
such as ``chat.message`` and ``tool.execute.before``/``after``. Recorded from
OpenCode 1.18.33 (``tests/fixtures/hooks/opencode-1.18.33-first.jsonl`` and
``-resumed.jsonl``, ``python -m tests.realcli.opencode_record``). Not registered yet:
``Provider`` has no ``opencode`` member, so nothing routes an event here.

==========================================  ==========================================
event / hook (payload refinement)           activity / reason / runtime
==========================================  ==========================================
chat.message (hook: the person's prompt)    working
session.status (status.type = busy)         working
tool.execute.before, tool.execute.after     working (evidence the turn runs)
permission.asked                            needs_input / permission ("Permission
                                            required" in the TUI)
permission.replied                          working (the tool runs or the turn ends
                                            in a session.idle that follows)
session.idle                                ready / turn_complete
session.created                             runtime live, activity unchanged
anything else (session.status idle, the     no change
~90 plugin.added, message.part.*, ...)
==========================================  ==========================================

``session.status`` idle always comes with ``session.idle``; only the latter counts, so a
turn end is seen once. No event at all for: the TUI process ending, and (not yet tried
on 1.18.33) an interrupted turn or a refused API request: the activity is unknown then,
never guessed. 1.18.33 shows no start-up or trust screen. Its ``question.asked`` event
(the question tool) is in the binary but not recorded, so it is not in the table yet.
Same imports as the hook path: stdlib and the vocabulary only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeGuard

from core.model.session_enums import Activity, ActivityReason, RuntimePresence

# event -> (kind, activity, reason, runtime); kind is a ``HookKind`` value.
Outcome = tuple[str, Activity | None, ActivityReason | None, RuntimePresence | None]
OPENCODE_OUTCOMES: dict[str, Outcome] = {
    "session.created": ("session_started", None, None, RuntimePresence.LIVE),
    "chat.message": ("prompt_submitted", Activity.WORKING, None, None),
    "tool.execute.before": ("tool_started", Activity.WORKING, None, None),
    "tool.execute.after": ("tool_finished", Activity.WORKING, None, None),
    "permission.asked": ("permission_requested", Activity.NEEDS_INPUT,
                         ActivityReason.PERMISSION, None),
    "permission.replied": ("other", Activity.WORKING, None, None),
    "session.idle": ("turn_stopped", Activity.READY, ActivityReason.TURN_COMPLETE, None),
}
OPENCODE_BUSY = "busy"
"""``session.status``'s ``status.type`` while a turn runs (1.18.33, recorded)."""
_NO_CHANGE: Outcome = ("other", None, None, None)
OPENCODE_EVENTS: tuple[str, ...] = (*OPENCODE_OUTCOMES, "session.status")
"""The event and hook names the plugin passes on; every other one is dropped in the
plugin itself (a launch emits ~90 ``plugin.added`` and one event per streamed chunk)."""


SESSION_PREFIX = "ses_"
SESSION_ID_CHARS = 26
"""An OpenCode 1.18.33 session id: ``ses_`` and 26 letters or digits
(``ses_db3705247ffeaxo2gytFH4CNh9``, recorded)."""


def is_session_id(value: object) -> TypeGuard[str]:
    """Exactly an OpenCode session id (no ``re`` on the hook path)."""
    if not isinstance(value, str) or len(value) != len(SESSION_PREFIX) + SESSION_ID_CHARS:
        return False
    rest = value[len(SESSION_PREFIX):]
    return value.startswith(SESSION_PREFIX) and rest.isascii() and rest.isalnum()


def opencode_outcome(name: str, payload: Mapping[str, object]) -> Outcome:
    """The outcome of one OpenCode event (``payload`` the event, or a hook's
    ``{"input", "output"}``)."""
    if name == "session.status":
        properties = payload.get("properties")
        status = properties.get("status") if isinstance(properties, Mapping) else None
        busy = isinstance(status, Mapping) and status.get("type") == OPENCODE_BUSY
        return ("other", Activity.WORKING, None, None) if busy else _NO_CHANGE
    return OPENCODE_OUTCOMES.get(name, _NO_CHANGE)


def opencode_session_id(name: str, payload: Mapping[str, object]) -> str | None:
    """The OpenCode session an event is about (``ses_...``), or None when it names none:
    events carry it in ``properties.sessionID``, hooks in ``input.sessionID``."""
    holder = payload.get("input" if name in ("chat.message", "tool.execute.before",
                                             "tool.execute.after") else "properties")
    value = holder.get("sessionID") if isinstance(holder, Mapping) else None
    return value if is_session_id(value) else None
