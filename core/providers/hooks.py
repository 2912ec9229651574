"""Normalize one provider hook invocation into a small, content-free HookEvent.

This runs inside ``switchboard hook`` on every prompt and turn end, so it imports
only ``json``, ``dataclasses`` and the enum/error modules. The raw payload is
untrusted input: anything malformed fails closed with a specific ProviderError,
and nothing of the prompt, transcript, tool input or reply survives parsing.

Activity outcomes follow the recorded facts in ``tests/fixtures/hooks/README.md``:

==================================================  =============================
event (payload refinement)                          activity / reason / runtime
==================================================  =============================
UserPromptSubmit                                    working
PreToolUse, PostToolUse(+Failure)                   working (evidence the turn runs)
PermissionDenied (auto mode's check, 2.1.197+)      working; its tool run ends failed
PreToolUse(tool_name=AskUserQuestion)               needs_input / question
PermissionRequest                                   needs_input / permission
Notification(permission_prompt)                     needs_input / permission
Notification(worker_permission_prompt)              needs_input / permission
Notification(elicitation_dialog, _url_dialog)       needs_input / elicitation
Notification(agent_needs_input), 2.1.332            needs_input / question
Notification(idle_prompt and anything else)         no change (see below)
Stop, notify(agent-turn-complete)                   ready / turn_complete
StopFailure(error=rate_limit), recorded 2.1.332     needs_input / usage_limit
StopFailure (other API errors)                      unknown / error (never left working)
SessionStart                                        runtime live, activity unchanged
SessionEnd                                          runtime stopped, activity unchanged
SubagentStart / SubagentStop (Claude, Codex)        no change; a subagent's lifetime
anything else                                       no change
==================================================  =============================

``idle_prompt`` is deliberately *no change*: it arrives about 60 s after the
prompt goes idle, usually after a Stop that already said ``ready``, and it is
not a trusted turn end, so it must never make a pane eligible for a control
turn. It is still surfaced (``HookEvent.idle_prompt``) as reconciliation
evidence for a ``working`` that never got its Stop (interrupts, API errors).

Every ``notification_type`` Claude Code 2.1.332 sends, read from its binary and, where
marked, recorded (``tests/fixtures/hooks/claude-2.1.332.tsv``); ``docs/cli-versions.md``
keeps the list:

* ``permission_prompt`` (recorded): a tool waits for the person's yes.
  ``worker_permission_prompt``: a teammate's tool waits for it, asked in this pane.
* ``elicitation_dialog`` / ``elicitation_url_dialog``: an MCP server asks the person.
  ``elicitation_response`` and ``elicitation_complete`` say such a question was
  answered or closed: no change (they used to match a prefix and read as needs-input).
* ``agent_needs_input`` (recorded): one of the CLI's own dialogs waits for the person
  mid-turn ("Auto mode can't check actions in this session" behind a gateway, the
  classifier billing notice, a cloud session's or a background agent's question). The
  turn waits on it and no Stop comes until it is answered, so it is needs-input with
  reason ``question`` (the CLI asks), as a dialog found on screen is; the hook is what
  makes the dialog watch (``core.runtime.dialogs``) read the pane and quote it.
* ``agent_completed``: no change. The agents view (``claude agents``, the "← for
  agents" of every session) sends it when a background session finished or failed,
  under the session id of the pane that shows the view, not of the one that finished
  (whose own Stop says so). Ready here would call a pane idle on another session's
  word, mid-turn even, and idle is what lets a control line be typed into it.
* ``idle_prompt`` (recorded), ``auth_success``, ``auth_storage_failure``,
  ``computer_use_exit``, ``plugin_notification``, ``push_notification``: no change.

Codex sends no Notification event; its ``notify`` has only ``agent-turn-complete``.
"""

from __future__ import annotations

import json
from enum import StrEnum
from typing import NamedTuple

from core.model.control_line import CONTROL_TEMPLATE
from core.model.errors import ProviderError
from core.model.notice_line import notice_message_id
from core.model.session_enums import Activity, ActivityReason, Provider, RuntimePresence
from core.providers.gemini_hooks import GEMINI_NOTIFICATIONS, GEMINI_OUTCOMES

MAX_PAYLOAD_BYTES = 16 * 1024 * 1024
MAX_TOKEN_CHARS = 128
MAX_LABEL_CHARS = 256
MAX_OPAQUE_ID_CHARS = 128


class HookKind(StrEnum):
    """What happened, independent of the provider's event spelling."""

    PROMPT_SUBMITTED = "prompt_submitted"
    TOOL_STARTED = "tool_started"
    TOOL_FINISHED = "tool_finished"
    PERMISSION_REQUESTED = "permission_requested"
    NOTIFICATION = "notification"
    TURN_STOPPED = "turn_stopped"
    SESSION_STARTED = "session_started"
    SESSION_ENDED = "session_ended"
    SUBAGENT_STARTED = "subagent_started"
    SUBAGENT_STOPPED = "subagent_stopped"
    OTHER = "other"


class HookEvent(NamedTuple):
    """One hook invocation, reduced to identity and state evidence.

    ``activity``/``activity_reason``/``runtime`` of ``None`` mean "this event
    does not change that field". ``turn_id`` is Claude's ``prompt_id`` or
    Codex's ``turn_id``/``turn-id``: the key that matches a Stop to the prompt
    (and a control turn to its observation). ``tool_use_id`` (tool events) is
    the provider's opaque id that pairs a PostToolUse with its PreToolUse;
    ``model`` is the model id when the payload names one. Both are identifiers,
    not content, and are ``None`` when absent or not a short printable string.
    """

    provider: Provider
    event: str
    kind: HookKind
    provider_session_id: str
    turn_id: str | None
    activity: Activity | None
    activity_reason: ActivityReason | None
    runtime: RuntimePresence | None
    source: str | None = None
    end_reason: str | None = None
    notification_type: str | None = None
    tool_name: str | None = None
    tool_use_id: str | None = None
    model: str | None = None
    stop_hook_active: bool = False
    is_control_prompt: bool = False
    notice_message_id: int | None = None
    """The prompt was exactly a message's notification line (``core.model.notice_line``):
    the agent received it, which is what stamps it notified."""
    subagent_id: str | None = None
    """SubagentStart/SubagentStop: the CLI's ``agent_id`` of the subagent (an identifier,
    never its prompt); ``None`` when absent or not a short printable string."""
    subagent_type: str | None = None
    """Its ``agent_type`` (``general-purpose``, ``Explore``, ...), same rule."""

    @property
    def idle_prompt(self) -> bool:
        """Claude says its prompt has sat idle: evidence, not a trusted Stop."""
        return self.notification_type == "idle_prompt"

    @property
    def changes_activity(self) -> bool:
        return self.activity is not None


# event name -> (kind, activity, reason, runtime) before payload refinements.
_Outcome = tuple[HookKind, Activity | None, ActivityReason | None, RuntimePresence | None]

_WORKING: _Outcome = (HookKind.PROMPT_SUBMITTED, Activity.WORKING, None, None)
_COMMON: dict[str, _Outcome] = {
    "UserPromptSubmit": _WORKING,
    "PreToolUse": (HookKind.TOOL_STARTED, Activity.WORKING, None, None),
    "PostToolUse": (HookKind.TOOL_FINISHED, Activity.WORKING, None, None),
    "PermissionRequest": (
        HookKind.PERMISSION_REQUESTED, Activity.NEEDS_INPUT, ActivityReason.PERMISSION, None,
    ),
    "Stop": (HookKind.TURN_STOPPED, Activity.READY, ActivityReason.TURN_COMPLETE, None),
    "SessionStart": (HookKind.SESSION_STARTED, None, None, RuntimePresence.LIVE),
    # A subagent of this session starts or ends: counted (core.evidence.subagents), never
    # activity: the lead's own turn says working/ready, and a background subagent may
    # outlive it. Both CLIs send them (Claude Code; Codex 0.166 to 0.171 name both in
    # their hook schema, with ``agent_id`` and ``agent_type``).
    "SubagentStart": (HookKind.SUBAGENT_STARTED, None, None, None),
    "SubagentStop": (HookKind.SUBAGENT_STOPPED, None, None, None),
}
_CLAUDE_ONLY: dict[str, _Outcome] = {
    "PostToolUseFailure": (HookKind.TOOL_FINISHED, Activity.WORKING, None, None),
    # auto mode's check (or a rule) refused the call: its tool run ends failed, the
    # turn goes on (the model is told and may try another way)
    "PermissionDenied": (HookKind.TOOL_FINISHED, Activity.WORKING, None, None),
    "Notification": (HookKind.NOTIFICATION, None, None, None),
    "StopFailure": (HookKind.OTHER, Activity.UNKNOWN, ActivityReason.ERROR, None),
    "SessionEnd": (HookKind.SESSION_ENDED, None, None, RuntimePresence.STOPPED),
}
_TABLES: dict[Provider, dict[str, _Outcome]] = {
    Provider.CLAUDE: {**_COMMON, **_CLAUDE_ONLY},
    Provider.CODEX: dict(_COMMON),
    # Gemini CLI's own event names (core.providers.gemini_hooks); OpenCode's plugin
    # events have another shape (core.providers.opencode_events, _parse_opencode).
    Provider.GEMINI: {event: (HookKind(kind), activity, reason, runtime)
                      for event, (kind, activity, reason, runtime) in GEMINI_OUTCOMES.items()},
}
_TURN_KEYS: dict[Provider, str | None] = {
    Provider.CLAUDE: "prompt_id",
    Provider.CODEX: "turn_id",
    Provider.GEMINI: None,  # no payload of Gemini CLI 0.61.0 carries a turn id
}
_NO_CHANGE: _Outcome = (HookKind.OTHER, None, None, None)
_SUBAGENT_HOOKS = frozenset({Provider.CLAUDE, Provider.CODEX})
_LEAD_ONLY = frozenset({Activity.WORKING, Activity.READY})
"""A subagent's own hooks come under the lead's ``session_id`` with its ``agent_id``
(Codex 0.171.0: the subagent's UserPromptSubmit, measured; it has no Stop of its own, only
the lead's SubagentStop). Working or ready from them would say what the lead does: a
subagent that starts after the lead's Stop would leave the lead "working" with nothing to
end it. So they change no activity; needs-input still does (the subagent's question or
permission is shown in the lead's pane)."""
AGENT_NEEDS_INPUT = "agent_needs_input"
"""Claude Code 2.1.332's Notification for its own dialog up mid-turn (a notice)."""
LIMIT_ERRORS = frozenset({"rate_limit"})
"""Claude Code's StopFailure ``error`` for a turn that ended on a usage or rate limit."""
_NOTIFICATION_OUTCOMES: dict[str, tuple[Activity, ActivityReason]] = {
    "permission_prompt": (Activity.NEEDS_INPUT, ActivityReason.PERMISSION),
    "worker_permission_prompt": (Activity.NEEDS_INPUT, ActivityReason.PERMISSION),
    "elicitation_dialog": (Activity.NEEDS_INPUT, ActivityReason.ELICITATION),
    "elicitation_url_dialog": (Activity.NEEDS_INPUT, ActivityReason.ELICITATION),
    AGENT_NEEDS_INPUT: (Activity.NEEDS_INPUT, ActivityReason.QUESTION),
}
"""``notification_type`` -> activity; every other type changes nothing (module docstring)."""
_NOTIFICATIONS: dict[Provider, dict[str, tuple[Activity, ActivityReason]]] = {
    Provider.CLAUDE: _NOTIFICATION_OUTCOMES,
    Provider.CODEX: {},
    Provider.GEMINI: GEMINI_NOTIFICATIONS,
}
CODEX_NOTIFY_EVENT = "notify"
CODEX_TURN_COMPLETE = "agent-turn-complete"

# Events each provider's hook configuration subscribes to (order = lifecycle).
CLAUDE_HOOK_EVENTS: tuple[str, ...] = (
    "SessionStart", "UserPromptSubmit", "PreToolUse", "PermissionRequest",
    "Notification", "PostToolUse", "PostToolUseFailure", "PermissionDenied", "Stop",
    "StopFailure", "SessionEnd", "SubagentStart", "SubagentStop",
)
CODEX_HOOK_EVENTS: tuple[str, ...] = (
    "SessionStart", "UserPromptSubmit", "PreToolUse", "PermissionRequest",
    "PostToolUse", "Stop", "SubagentStart", "SubagentStop",
)


def _fail(code: str, message: str) -> ProviderError:
    return ProviderError(message, code=code)


def _invalid(message: str) -> ProviderError:
    return ProviderError(message, code="hook_payload_invalid")


def _is_uuid_shaped(value: str) -> bool:
    """8-4-4-4-12 hex, without importing ``uuid`` on the hook path."""
    if len(value) != 36:
        return False
    for index, char in enumerate(value):
        if index in (8, 13, 18, 23):
            if char != "-":
                return False
        elif char not in "0123456789abcdefABCDEF":
            return False
    return True


def _is_token(value: str) -> bool:
    return 0 < len(value) <= MAX_TOKEN_CHARS and all(
        char.isascii() and (char.isalnum() or char in "-_.:") for char in value
    )


def _decode(payload: bytes | str) -> dict[str, object]:
    if isinstance(payload, bytes | bytearray):
        if len(payload) > MAX_PAYLOAD_BYTES:
            raise _fail("hook_payload_too_large", f"hook payload exceeds {MAX_PAYLOAD_BYTES} bytes")
        try:
            text = bytes(payload).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _invalid(f"hook payload is not UTF-8: {exc.reason}") from None
    elif isinstance(payload, str):
        text = payload
        if len(text) > MAX_PAYLOAD_BYTES:
            raise _fail("hook_payload_too_large", f"hook payload exceeds {MAX_PAYLOAD_BYTES} bytes")
    else:
        raise _invalid(f"hook payload must be bytes or str, not {type(payload).__name__}")
    if not text.strip():
        raise _invalid("hook payload is empty; expected one JSON object")
    try:
        document = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise _invalid(f"hook payload is not valid JSON: {exc}") from None
    if not isinstance(document, dict):
        raise _invalid(f"hook payload must be a JSON object, not {type(document).__name__}")
    return document


def _optional_str(
    document: dict[str, object], key: str, limit: int = MAX_LABEL_CHARS
) -> str | None:
    value = document.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise _invalid(f"hook field {key!r} must be a string, not {type(value).__name__}")
    if len(value) > limit:
        raise _invalid(f"hook field {key!r} is longer than {limit} characters")
    return value


def _session_id(document: dict[str, object], key: str) -> str:
    if key not in document:
        raise _fail(
            "hook_session_missing", f"hook payload has no {key!r}; cannot tell which session it is"
        )
    value = document[key]
    if not isinstance(value, str):
        raise _fail(
            "hook_session_invalid",
            f"hook field {key!r} must be a string, not {type(value).__name__}",
        )
    if not _is_uuid_shaped(value):
        raise _fail("hook_session_invalid", f"hook field {key!r} is not a UUID: {value[:64]!r}")
    return value


def _turn_id(document: dict[str, object], key: str) -> str | None:
    value = _optional_str(document, key, MAX_TOKEN_CHARS)
    if value is not None and not _is_token(value):
        raise _invalid(f"hook field {key!r} is not an identifier: {value[:64]!r}")
    return value


def _opaque_id(document: dict[str, object], key: str) -> str | None:
    """A short printable id (tool-use id, model id), or ``None``: these only enrich
    evidence, so a strange value is dropped rather than failing the hook."""
    value = document.get(key)
    if not isinstance(value, str) or not 0 < len(value) <= MAX_OPAQUE_ID_CHARS:
        return None
    if not all(char.isascii() and char.isprintable() and not char.isspace() for char in value):
        return None
    return value


def _check_event_name(event: str) -> None:
    if not isinstance(event, str) or not _is_token(event):
        raise _fail(
            "hook_event_invalid", f"hook event name is not an identifier: {str(event)[:64]!r}"
        )


def parse_hook(provider: Provider | str, event: str, payload: bytes | str) -> HookEvent:
    """Parse one hook call; raise ProviderError (never anything else) on bad input.

    ``event`` is the name the hook command was installed with (the last CLI
    word); for Codex ``notify`` the payload is the JSON argv element.
    """
    return parse_hook_document(provider, event, payload)[0]


def parse_hook_document(provider: Provider | str, event: str,
                        payload: bytes | str) -> tuple[HookEvent, dict[str, object]]:
    """``parse_hook`` and the decoded payload, for the hook's own evidence write: a
    tool event's output can be megabytes, and decoding it twice was most of its cost.
    The document stays with the caller; the HookEvent still carries no content."""
    try:
        provider = Provider(provider)
    except ValueError:
        raise _fail("hook_provider_invalid", f"unknown provider {str(provider)[:32]!r}") from None
    if provider is Provider.OPENCODE:  # plugin events, their own shape
        _check_event_name(event)
        document = _decode(payload)
        return _parse_opencode(event, document), document
    table = _TABLES.get(provider)
    if table is None:
        raise _fail("hook_provider_unsupported",
                    f"hooks of {provider.value} are not read yet; its agents cannot report")
    _check_event_name(event)
    document = _decode(payload)
    if provider is Provider.CODEX and event == CODEX_NOTIFY_EVENT:
        return _parse_codex_notify(document), document

    declared = document.get("hook_event_name")
    if declared is not None and declared != event:
        raise _fail(
            "hook_event_mismatch",
            f"hook was installed for {event!r} but the payload says {str(declared)[:64]!r}",
        )
    session_id = _session_id(document, "session_id")
    turn_key = _TURN_KEYS[provider]
    turn_id = _turn_id(document, turn_key) if turn_key is not None else None
    kind, activity, reason, runtime = table.get(event, _NO_CHANGE)

    tool_name = None
    tool_use_id = None
    notification_type = None
    source = None
    end_reason = None
    stop_hook_active = False
    is_control_prompt = False
    notice: int | None = None
    subagent_id = subagent_type = None
    if kind is HookKind.PROMPT_SUBMITTED:
        prompt = document.get("prompt")
        if prompt is not None and not isinstance(prompt, str):
            raise _invalid("hook field 'prompt' must be a string")
        # Only the fact that this was the fixed control template is kept.
        is_control_prompt = isinstance(prompt, str) and prompt.strip() == CONTROL_TEMPLATE
        notice = notice_message_id(prompt) if isinstance(prompt, str) else None
    elif kind in (HookKind.TOOL_STARTED, HookKind.TOOL_FINISHED, HookKind.PERMISSION_REQUESTED):
        tool_name = _optional_str(document, "tool_name")
        tool_use_id = _opaque_id(document, "tool_use_id")
        if kind is HookKind.TOOL_STARTED and tool_name == "AskUserQuestion":
            activity, reason = Activity.NEEDS_INPUT, ActivityReason.QUESTION
    elif kind is HookKind.NOTIFICATION:
        notification_type = _optional_str(document, "notification_type")
        found = _NOTIFICATIONS[provider].get(notification_type or "")
        if found is not None:
            activity, reason = found
    elif kind is HookKind.TURN_STOPPED:
        flag = document.get("stop_hook_active", False)
        if not isinstance(flag, bool):
            raise _invalid("hook field 'stop_hook_active' must be a boolean")
        stop_hook_active = flag
    elif event == "StopFailure" and provider is Provider.CLAUDE:
        # The turn ended on the service's rate or usage limit: the agent waits for its
        # reset or for the person, like a question (core.usage reads the reset time).
        if document.get("error") in LIMIT_ERRORS:
            activity, reason = Activity.NEEDS_INPUT, ActivityReason.USAGE_LIMIT
    elif kind is HookKind.SESSION_STARTED:
        source = _optional_str(document, "source")
    elif kind is HookKind.SESSION_ENDED:
        end_reason = _optional_str(document, "reason")
    elif kind in (HookKind.SUBAGENT_STARTED, HookKind.SUBAGENT_STOPPED):
        subagent_id = _opaque_id(document, "agent_id")
        subagent_type = _opaque_id(document, "agent_type")
    if (activity in _LEAD_ONLY and provider in _SUBAGENT_HOOKS
            and document.get("agent_id") not in (None, "")):
        activity, reason = None, None

    return HookEvent(
        provider=provider,
        event=event,
        kind=kind,
        provider_session_id=session_id,
        turn_id=turn_id,
        activity=activity,
        activity_reason=reason,
        runtime=runtime,
        source=source,
        end_reason=end_reason,
        notification_type=notification_type,
        tool_name=tool_name,
        tool_use_id=tool_use_id,
        model=_opaque_id(document, "model"),
        stop_hook_active=stop_hook_active,
        is_control_prompt=is_control_prompt,
        notice_message_id=notice,
        subagent_id=subagent_id,
        subagent_type=subagent_type,
    ), document


def _parse_codex_notify(document: dict[str, object]) -> HookEvent:
    """Codex ``notify``: kebab-case keys; only agent-turn-complete moves activity.

    The thread id is reported as-is; the caller must ignore foreign threads
    (Codex also notifies for its internal title-generation turn).
    """
    notify_type = _optional_str(document, "type")
    if notify_type is None:
        raise _invalid("codex notify payload has no 'type'")
    session_id = _session_id(document, "thread-id")
    turn_id = _turn_id(document, "turn-id")
    if notify_type == CODEX_TURN_COMPLETE:
        kind, activity, reason = HookKind.TURN_STOPPED, Activity.READY, ActivityReason.TURN_COMPLETE
    else:
        kind, activity, reason = HookKind.OTHER, None, None
    return HookEvent(
        provider=Provider.CODEX,
        event=CODEX_NOTIFY_EVENT,
        kind=kind,
        provider_session_id=session_id,
        turn_id=turn_id,
        activity=activity,
        activity_reason=reason,
        runtime=None,
        notification_type=notify_type,
    )


def _parse_opencode(event: str, document: dict[str, object]) -> HookEvent:
    """An OpenCode plugin event (``core.providers.opencode_events``): it states no turn
    id, so its turn end is matched to the prompt by order; of the prompt only whether
    it was a fixed line is kept."""
    from core.providers.opencode_events import opencode_fields

    found = opencode_fields(event, document)
    kind, activity, reason, runtime = found.outcome
    prompt = found.prompt
    return HookEvent(
        provider=Provider.OPENCODE, event=event, kind=HookKind(kind),
        provider_session_id=found.session_id, turn_id=None, activity=activity,
        activity_reason=reason, runtime=runtime, tool_name=found.tool_name,
        tool_use_id=found.tool_use_id, model=found.model,
        is_control_prompt=prompt is not None and prompt.strip() == CONTROL_TEMPLATE,
        notice_message_id=notice_message_id(prompt) if prompt is not None else None,
    )
