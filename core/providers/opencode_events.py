"""What each OpenCode plugin event says about the agent, as data (issue 41).

OpenCode has no hook commands: a plugin (an ES module named in the launch's config)
receives every event of its bus, ``{"id", "type", "properties"}``, plus named hooks
such as ``chat.message`` and ``tool.execute.before``/``after``. Recorded from
OpenCode 1.18.33 (``tests/fixtures/hooks/opencode-1.18.33-first.jsonl`` and
``-resumed.jsonl``, ``python -m tests.realcli.opencode_record``). The hook path
(``core.providers.hooks``) reads each event through :func:`opencode_fields`.

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
turn end is seen once; an Esc Esc interrupt also ends in ``session.idle`` (measured:
the turn shows "interrupted"), so it reads ready. No event at all for: the TUI process
ending, and (not recorded; OpenCode retries a 429 itself) a refused API request: the
activity is unknown then, never guessed. 1.18.33 shows no start-up or trust screen. Its
``question.asked`` event (the question tool) is in the binary but not recorded, so it is
not in the table yet.
Same imports as the hook path: stdlib and the vocabulary only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple, TypeGuard

from core.model.errors import ProviderError
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


_HOOKS = ("chat.message", "tool.execute.before", "tool.execute.after")
"""Named hooks: their payload is ``{"input", "output"}``, not a bus event."""
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


MAX_PROMPT_PARTS = 64
MAX_ID_CHARS = 128


class OpencodeFields(NamedTuple):
    """What the hook path keeps of one OpenCode event: identifiers and the outcome.
    ``prompt`` (``chat.message`` only) is there to be compared with Switchboard's fixed
    lines and dropped: ``core.providers.hooks`` keeps only the answer."""

    session_id: str
    outcome: Outcome
    tool_name: str | None = None
    tool_use_id: str | None = None
    model: str | None = None
    prompt: str | None = None


def _mapping(value: object) -> Mapping[str, object]:
    return value if isinstance(value, Mapping) else {}


def _short_id(holder: Mapping[str, object], key: str) -> str | None:
    """A short printable identifier, or None (it only enriches evidence)."""
    value = holder.get(key)
    if not isinstance(value, str) or not 0 < len(value) <= MAX_ID_CHARS:
        return None
    if not all(c.isascii() and c.isprintable() and not c.isspace() for c in value):
        return None
    return value


def _prompt(document: Mapping[str, object]) -> str | None:
    """The typed text of a ``chat.message``: its text parts that OpenCode did not add
    itself (``synthetic``), joined."""
    parts = _mapping(document.get("output")).get("parts")
    if not isinstance(parts, list):
        return None
    texts = [str(part["text"]) for part in parts[:MAX_PROMPT_PARTS]
             if isinstance(part, Mapping) and part.get("type") == "text"
             and isinstance(part.get("text"), str) and not part.get("synthetic")]
    return "\n".join(texts) if texts else None


def opencode_fields(name: str, document: Mapping[str, object]) -> OpencodeFields:
    """The session, outcome and identifiers of one event as the plugin handed it on;
    an event that names no OpenCode session is refused by name."""
    holder = _mapping(document.get("input" if name in _HOOKS else "properties"))
    session_id = holder.get("sessionID")
    if session_id is None:
        raise ProviderError(f"opencode {name} names no sessionID; cannot tell which session"
                            " it is", code="hook_session_missing")
    if not is_session_id(session_id):
        raise ProviderError(f"opencode {name}: sessionID is not an OpenCode session id: "
                            f"{str(session_id)[:64]!r}", code="hook_session_invalid")
    outcome = opencode_outcome(name, document)
    if name == "chat.message":
        return OpencodeFields(session_id, outcome,
                              model=_short_id(_mapping(holder.get("model")), "modelID"),
                              prompt=_prompt(document))
    if name in ("tool.execute.before", "tool.execute.after"):
        return OpencodeFields(session_id, outcome, _short_id(holder, "tool"),
                              _short_id(holder, "callID"))
    if name == "permission.asked":
        return OpencodeFields(session_id, outcome, _short_id(holder, "permission"),
                              _short_id(_mapping(holder.get("tool")), "callID"))
    return OpencodeFields(session_id, outcome)
