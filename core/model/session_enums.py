"""The closed value sets a hook process uses (a part of ``core.model.enums``).

Kept apart so the hook path, which runs on every prompt and turn end, does not
create every enum of the contract; ``core.model.enums`` re-exports each of them,
and everything else imports them from there.
"""

from __future__ import annotations

from enum import StrEnum


class Provider(StrEnum):
    """The agent CLIs Switchboard runs. Every place that acts by provider names each
    member (``core.providers``); a member with no adapter yet is refused there by name,
    never run as another provider."""

    CODEX = "codex"
    CLAUDE = "claude"
    GEMINI = "gemini"
    OPENCODE = "opencode"


PENDING_SESSION_PREFIX = "pending-"
"""A session id not known before exec (Codex's thread id) is recorded as this prefix
plus a fresh id until the first hook names it; such a session cannot be resumed (the
adapter's ``new_session_id`` says which provider records one)."""


class RuntimePresence(StrEnum):
    LIVE = "live"
    STOPPED = "stopped"
    UNKNOWN = "unknown"


class Activity(StrEnum):
    WORKING = "working"
    NEEDS_INPUT = "needs_input"
    READY = "ready"
    COMPLETED = "completed"
    UNKNOWN = "unknown"


class ActivityReason(StrEnum):
    PERMISSION = "permission"
    QUESTION = "question"
    ELICITATION = "elicitation"
    TURN_COMPLETE = "turn_complete"
    PROVIDER_COMPLETE = "provider_complete"
    ERROR = "error"
    UNKNOWN = "unknown"
    USAGE_LIMIT = "usage_limit"
    """The turn ended on a usage or rate limit of the provider (Claude's StopFailure
    ``rate_limit``): the agent waits for its reset or for the person."""


class MembershipReason(StrEnum):
    STARTED = "started"
    RESUMED = "resumed"
    ROLLOVER = "rollover"
    RECOVERY = "recovery"
    CUTOVER = "cutover"


class LaunchAction(StrEnum):
    NEW = "new"
    RESUME = "resume"


class RecoveryKind(StrEnum):
    CONTROL_SUBMIT_UNCERTAIN = "control_submit_uncertain"
    PANE_VANISHED = "pane_vanished"
    SERVER_RESTARTED = "server_restarted"
    PLACEMENT_ORPHANED = "placement_orphaned"
    BIND_TIMEOUT = "bind_timeout"
    TRANSITION_INTERRUPTED = "transition_interrupted"
    LAUNCH_UNCERTAIN = "launch_uncertain"
    PROVIDER_DIALOG = "provider_dialog"
    """The agent's pane waits on a dialog of its CLI (start-up notice, trust, login...)."""
    USAGE_LIMIT = "usage_limit"
    """The agent's turn ended on a usage or rate limit (until it resets or is moved)."""
