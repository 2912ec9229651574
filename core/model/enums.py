"""Every closed value set of the contract, as StrEnums whose values are the spec's strings.

Storage CHECK constraints and triggers are generated from these, so a value
exists in exactly one place.
"""

from __future__ import annotations

from enum import StrEnum

# The values a hook process needs live in their own module, so a plain turn's hook
# creates 7 enums instead of all of them; they are this vocabulary all the same.
from core.model.session_enums import Activity as Activity
from core.model.session_enums import ActivityReason as ActivityReason
from core.model.session_enums import LaunchAction as LaunchAction
from core.model.session_enums import MembershipReason as MembershipReason
from core.model.session_enums import Provider as Provider
from core.model.session_enums import RecoveryKind as RecoveryKind
from core.model.session_enums import RuntimePresence as RuntimePresence


class ActivationState(StrEnum):
    CUTOVER_STAGED = "cutover_staged"
    COMMITTED = "committed"


class RequestState(StrEnum):
    PREPARED = "prepared"
    COMPLETED = "completed"
    FAILED = "failed"


class Resumability(StrEnum):
    RESUMABLE = "resumable"
    MISSING = "missing"
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


class TeammateMode(StrEnum):
    """``[providers.claude] teammates``: where Claude Code's agent-team teammates run.

    ``in-process`` keeps them inside the lead's pane (every Switchboard launch passes
    ``--teammate-mode in-process``). ``frames`` (each teammate a child frame of the lead)
    is a known value the config refuses: see ``core.config.config.FRAMES_REFUSED``."""

    IN_PROCESS = "in-process"
    FRAMES = "frames"
