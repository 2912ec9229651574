"""Every closed value set of the contract, as StrEnums whose values are the spec's strings.

Storage CHECK constraints and triggers are generated from these, so a value
exists in exactly one place.
"""

from __future__ import annotations

from enum import StrEnum


class ActivationState(StrEnum):
    CUTOVER_STAGED = "cutover_staged"
    COMMITTED = "committed"


class RequestState(StrEnum):
    PREPARED = "prepared"
    COMPLETED = "completed"
    FAILED = "failed"


class Provider(StrEnum):
    CODEX = "codex"
    CLAUDE = "claude"


class RuntimePresence(StrEnum):
    LIVE = "live"
    STOPPED = "stopped"
    UNKNOWN = "unknown"


class Resumability(StrEnum):
    RESUMABLE = "resumable"
    MISSING = "missing"
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


class HandoffSource(StrEnum):
    USER = "user"
    AGENT = "agent"
    IMPORTED = "imported"


class FrameRole(StrEnum):
    WORKSPACE = "workspace"
    TASK = "task"


class FrameLifecycle(StrEnum):
    OPEN = "open"
    CLOSING = "closing"
    CLOSED = "closed"


class CloseReason(StrEnum):
    COMPLETED = "completed"
    DISMISSED = "dismissed"


class CreatedBy(StrEnum):
    USER = "user"
    AGENT = "agent"
    CUTOVER = "cutover"


class MembershipReason(StrEnum):
    STARTED = "started"
    RESUMED = "resumed"
    ROLLOVER = "rollover"
    RECOVERY = "recovery"
    CUTOVER = "cutover"


class ClaimState(StrEnum):
    RELEASED = "released"
    HELD = "held"
    BLOCKED = "blocked"


class BackgroundState(StrEnum):
    SAFE = "safe"
    KNOWN = "known"
    UNCERTAIN = "uncertain"


class ViewMode(StrEnum):
    NAVIGATOR = "navigator"
    DIRECT = "direct"


class ViewState(StrEnum):
    READY = "ready"
    TRANSITIONING = "transitioning"
    DEGRADED = "degraded"
    RETIRED = "retired"


class PlacementState(StrEnum):
    ACTIVE = "active"
    PARKED = "parked"
    STAGED = "staged"
    STOPPED_AFFINITY = "stopped_affinity"
    ORPHANED = "orphaned"


class SurfaceState(StrEnum):
    PLANNED = "planned"
    LIVE = "live"
    DEAD = "dead"
    ORPHANED = "orphaned"
    RETIRED = "retired"


class LaunchAction(StrEnum):
    NEW = "new"
    RESUME = "resume"


class LaunchState(StrEnum):
    PLANNED = "planned"
    AUTHORIZED = "authorized"
    STARTED = "started"
    BOUND = "bound"
    FAILED = "failed"
    SUPERSEDED = "superseded"


class TransitionKind(StrEnum):
    FOCUS = "focus"
    PUSH = "push"
    BACK = "back"
    COMPLETE_RETURN = "complete_return"
    HUMAN_CLOSE = "human_close"
    MODE = "mode"
    RECOVER = "recover"


class TransitionState(StrEnum):
    PREPARED = "prepared"
    EXECUTING = "executing"
    PRESENTED = "presented"
    AWAITING_CLAIM = "awaiting_claim"
    SETTLING = "settling"
    COMPLETED = "completed"
    CANCELLED = "cancelled"
    SUPERSEDED = "superseded"
    FAILED = "failed"


class TransportPhase(StrEnum):
    INTENT = "intent"
    MOVED = "moved"
    INSPECTED = "inspected"
    COMMITTED = "committed"
    ROLLED_BACK = "rolled_back"


class ControlKind(StrEnum):
    CLAIM_BRIEF = "claim_brief"
    CLAIM_HANDOFF = "claim_handoff"


class ControlTransport(StrEnum):
    LIVE_INPUT = "live_input"
    RESUME_INITIAL = "resume_initial"


class ControlState(StrEnum):
    PREPARED = "prepared"
    SUBMITTED = "submitted"
    OBSERVED = "observed"
    CLAIMED = "claimed"
    SETTLED = "settled"
    UNCERTAIN = "uncertain"
    FAILED = "failed"
    SUPERSEDED = "superseded"


class Actionability(StrEnum):
    SAFE_AUTO = "safe_auto"
    OPEN_VIEW = "open_view"
    MANUAL = "manual"


class RecoveryState(StrEnum):
    OPEN = "open"
    RESOLVED = "resolved"
    DISMISSED = "dismissed"


class RecoveryKind(StrEnum):
    CONTROL_SUBMIT_UNCERTAIN = "control_submit_uncertain"
    PANE_VANISHED = "pane_vanished"
    SERVER_RESTARTED = "server_restarted"
    PLACEMENT_ORPHANED = "placement_orphaned"
    BIND_TIMEOUT = "bind_timeout"
    TRANSITION_INTERRUPTED = "transition_interrupted"
    LAUNCH_UNCERTAIN = "launch_uncertain"


class LeaseState(StrEnum):
    OFFERED = "offered"
    CLAIMED = "claimed"
    EXPIRED = "expired"


class Reachability(StrEnum):
    ONLINE = "online"
    OFFLINE = "offline"
    UNKNOWN = "unknown"


class DirectiveKind(StrEnum):
    FOCUS = "focus"
    ATTACH = "attach"
    BLOCKED = "blocked"


class TaskPushPolicy(StrEnum):
    CONSERVATIVE = "conservative"


class CompleteReturnPolicy(StrEnum):
    SYNTHESIZE = "synthesize"
    HANDOFF = "handoff"


class TransportPolicy(StrEnum):
    LIVE_FIRST = "live_first"
    RESUME_ONLY = "resume_only"
