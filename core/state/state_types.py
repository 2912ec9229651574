"""The typed envelopes core publishes: HostState v1, NavigatorState v1, PresentationDirective v1.

These are bounded structural summaries, not database rows. HostState is what
one host tells others (over SSH, cached as projection evidence); it never
carries tmux socket/pane/process locators, capability material, argv, paths,
brief or handoff bodies, prompts, transcripts or credentials, and none of the
row types below has a field for them. NavigatorState is what frontends render:
view rows are presentation-ready (title, breadcrumb, activity, attention are
authored by core, never re-derived) and it never contains a desktop token.

Each type round-trips through ``to_json_obj``/``from_json_obj`` (camelCase
keys); ``validate()`` checks references between arrays and names the JSON path
of a dangling one. Structural arrays are written ordered by host id then stable
entity id (``sort_key``); tuples keep the order they were built or decoded in.
Use ``core.state.envelope.encode_canonical`` / ``decode_checked`` for bytes.
"""

from __future__ import annotations

from collections.abc import Container, Iterable
from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar

from core.model.enums import (
    Actionability,
    ActivationState,
    Activity,
    ActivityReason,
    BackgroundState,
    ClaimState,
    CloseReason,
    ControlKind,
    ControlState,
    ControlTransport,
    CreatedBy,
    DirectiveKind,
    FrameLifecycle,
    FrameRole,
    MembershipReason,
    PlacementState,
    Provider,
    Reachability,
    RecoveryState,
    Resumability,
    RuntimePresence,
    SurfaceState,
    TransitionKind,
    TransitionState,
    TransportPhase,
    ViewMode,
    ViewState,
)
from core.model.errors import EnvelopeError
from core.state.envelope import (
    MAX_SAFE_INT,
    ArrayKind,
    BoolKind,
    ConstKind,
    EnumKind,
    IntKind,
    PatternKind,
    Record,
    RecordKind,
    TextKind,
    UuidKind,
    duplicates,
    jfield,
)

SCHEMA_VERSION = 1
PROTOCOL_VERSION = 1
HOST_STATE_VERSION = 1
NAVIGATOR_VERSION = 1
DIRECTIVE_VERSION = 1

MAX_TITLE_CHARS = 256
MAX_NAME_CHARS = 128
MAX_EXPLANATION_CHARS = 1024
MAX_BREADCRUMB_ITEMS = 64

_UUID_PATTERN = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"

UUID = UuidKind()
TITLE = TextKind(MAX_TITLE_CHARS, allow_empty=True)
NAME = TextKind(MAX_NAME_CHARS)
EXPLANATION = TextKind(MAX_EXPLANATION_CHARS)
MS = IntKind(0, MAX_SAFE_INT)
COUNT = IntKind(0, MAX_SAFE_INT)
BOOL = BoolKind()
TOKEN = PatternKind(r"^[a-z][a-z0-9_]{0,63}$", "a lowercase identifier such as pane_vanished")
SESSION_KEY = PatternKind(
    rf"^{_UUID_PATTERN}:(?:{'|'.join(p.value for p in Provider)}):[A-Za-z0-9._-]{{1,128}}$",
    "a session key host_id:provider:provider_session_id",
)
PROVIDER_SESSION_ID = PatternKind(r"^[A-Za-z0-9._-]{1,128}$", "a provider session id")
SUBJECT_ID = PatternKind(r"^[A-Za-z0-9:._-]{1,200}$", "an entity id")
DESKTOP_TOKEN = PatternKind(r"^[A-Za-z0-9_-]{16,128}$", "an opaque desktop token")
FIELD_NAME = PatternKind(r"^[A-Za-z][A-Za-z0-9.\[\]*]{0,127}$", "an envelope field name")


def _enum(enum_type: Any) -> EnumKind:
    return EnumKind(enum_type)


def _rows(record_type: type[Record], **kwargs: Any) -> ArrayKind:
    return ArrayKind(RecordKind(record_type), **kwargs)


def _fail(path: str, message: str) -> EnvelopeError:
    return EnvelopeError(f"{path}: {message}")


def _unique(rows: tuple[Any, ...], attr: str, array_path: str, key: str) -> set[str]:
    values = [getattr(row, attr) for row in rows]
    for index, value in duplicates(values):
        raise _fail(f"{array_path}[{index}].{key}", f"duplicates an earlier {key} ({value})")
    return set(values)


def _ref(value: str | None, known: Container[str], path: str, what: str) -> None:
    if value is not None and value not in known:
        raise _fail(path, f"refers to {what} {value}, which is not in this envelope")


# --------------------------------------------------------------------------- shared rows


@dataclass(frozen=True, kw_only=True)
class StateWarning(Record):
    """A derived projection warning (no durable identity); hostId says whose it is."""

    code: str = jfield(TOKEN)
    message: str = jfield(EXPLANATION)
    host_id: str | None = jfield(UUID, default=None)
    subject_id: str | None = jfield(SUBJECT_ID, default=None)

    SORT_BY = ("host_id", "code", "subject_id", "message")


@dataclass(frozen=True, kw_only=True)
class TruncatedArray(Record):
    field_name: str = jfield(FIELD_NAME, key="field")
    omitted_count: int = jfield(IntKind(1, MAX_SAFE_INT))

    SORT_BY = ("field_name",)


@dataclass(frozen=True, kw_only=True)
class Truncation(Record):
    """Which arrays were cut to stay under the ceilings, and by how much."""

    truncated: bool = jfield(BOOL, default=False)
    omitted: tuple[TruncatedArray, ...] = jfield(_rows(TruncatedArray, max_items=64),
                                                 default=())

    def check(self, path: str) -> None:
        if self.truncated != bool(self.omitted):
            raise _fail(f"{path}.truncated", "must be true exactly when omitted lists arrays")
        for index, _ in duplicates([entry.field_name for entry in self.omitted]):
            raise _fail(f"{path}.omitted[{index}].field", "is listed twice")


# --------------------------------------------------------------------------- HostState v1 rows


@dataclass(frozen=True, kw_only=True)
class HostInfo(Record):
    host_id: str = jfield(UUID)
    display_name: str = jfield(NAME)


@dataclass(frozen=True, kw_only=True)
class HostProject(Record):
    project_id: str = jfield(UUID)
    name: str = jfield(NAME)
    checkout_id: str = jfield(UUID)
    preferred_provider: Provider | None = jfield(_enum(Provider),
                                                 default=None)

    SORT_BY = ("project_id",)


@dataclass(frozen=True, kw_only=True)
class HostRepository(Record):
    """A repository by name only: its URL may embed credentials, so it is never published."""

    repository_id: str = jfield(UUID)
    name: str = jfield(NAME)

    SORT_BY = ("repository_id",)


@dataclass(frozen=True, kw_only=True)
class HostProjectRepository(Record):
    project_id: str = jfield(UUID)
    repository_id: str = jfield(UUID)

    SORT_BY = ("project_id", "repository_id")


@dataclass(frozen=True, kw_only=True)
class HostCheckout(Record):
    """A checkout without its path."""

    checkout_id: str = jfield(UUID)
    repository_id: str | None = jfield(UUID, default=None)

    SORT_BY = ("checkout_id",)


@dataclass(frozen=True, kw_only=True)
class HostWorkContext(Record):
    work_context_id: str = jfield(UUID)
    project_id: str = jfield(UUID)
    checkout_id: str = jfield(UUID)
    claim_state: ClaimState = jfield(_enum(ClaimState))
    claim_generation: int = jfield(COUNT)
    foreground_frame_id: str | None = jfield(UUID, default=None)
    background_state: BackgroundState = jfield(_enum(BackgroundState))
    updated_at: int = jfield(MS)

    SORT_BY = ("work_context_id",)


@dataclass(frozen=True, kw_only=True)
class HostFrame(Record):
    frame_id: str = jfield(UUID)
    project_id: str = jfield(UUID)
    role: FrameRole = jfield(_enum(FrameRole))
    parent_frame_id: str | None = jfield(UUID, default=None)
    work_context_id: str = jfield(UUID)
    title: str = jfield(TITLE)
    preferred_provider: Provider | None = jfield(_enum(Provider),
                                                 default=None)
    lifecycle_state: FrameLifecycle = jfield(_enum(FrameLifecycle))
    close_reason: CloseReason | None = jfield(_enum(CloseReason), default=None)
    current_session_key: str | None = jfield(SESSION_KEY, default=None)
    created_by: CreatedBy = jfield(_enum(CreatedBy))
    created_at: int = jfield(MS)
    updated_at: int = jfield(MS)

    SORT_BY = ("frame_id",)

    def check(self, path: str) -> None:
        _check_frame_shape(self.role, self.parent_frame_id, self.lifecycle_state,
                           self.close_reason, path)


def _check_frame_shape(role: FrameRole, parent: str | None, lifecycle: FrameLifecycle,
                       close_reason: CloseReason | None, path: str) -> None:
    """Only workspace roots lack a parent; an open frame has no close reason."""
    if role is FrameRole.WORKSPACE and parent is not None:
        raise _fail(f"{path}.parentFrameId", "must be absent for a workspace frame")
    if role is FrameRole.TASK and parent is None:
        raise _fail(f"{path}.parentFrameId", "is required for a task frame")
    if lifecycle is FrameLifecycle.OPEN and close_reason is not None:
        raise _fail(f"{path}.closeReason", "must be absent while the frame is open")


@dataclass(frozen=True, kw_only=True)
class HostFrameSession(Record):
    frame_session_id: str = jfield(UUID)
    frame_id: str = jfield(UUID)
    session_key: str = jfield(SESSION_KEY)
    ordinal: int = jfield(IntKind(1, MAX_SAFE_INT))
    membership_reason: MembershipReason = jfield(_enum(MembershipReason))
    joined_at: int = jfield(MS)

    SORT_BY = ("frame_session_id",)


@dataclass(frozen=True, kw_only=True)
class HostSession(Record):
    session_key: str = jfield(SESSION_KEY)
    provider: Provider = jfield(_enum(Provider))
    provider_session_id: str = jfield(PROVIDER_SESSION_ID)
    project_id: str | None = jfield(UUID, default=None)
    checkout_id: str | None = jfield(UUID, default=None)
    name: str | None = jfield(NAME, default=None)
    pinned: bool = jfield(BOOL, default=False)
    runtime_presence: RuntimePresence = jfield(_enum(RuntimePresence))
    resumability: Resumability = jfield(_enum(Resumability))
    activity: Activity = jfield(_enum(Activity))
    activity_reason: ActivityReason | None = jfield(_enum(ActivityReason),
                                                    default=None)
    last_observed_at: int = jfield(MS)
    updated_at: int = jfield(MS)

    SORT_BY = ("session_key",)

    def check(self, path: str) -> None:
        expected_tail = f":{self.provider.value}:{self.provider_session_id}"
        if not self.session_key.endswith(expected_tail):
            raise _fail(f"{path}.providerSessionId", "must match sessionKey, which is "
                                                     "host_id:provider:provider_session_id")


@dataclass(frozen=True, kw_only=True)
class HostSurface(Record):
    """A managed surface by identity and state only; no tmux server, pane or process."""

    surface_id: str = jfield(UUID)
    provider: Provider = jfield(_enum(Provider))
    session_key: str | None = jfield(SESSION_KEY, default=None)
    lifecycle_state: SurfaceState = jfield(_enum(SurfaceState))
    updated_at: int = jfield(MS)

    SORT_BY = ("surface_id",)


@dataclass(frozen=True, kw_only=True)
class HostView(Record):
    """A user view without its desktop token or tmux server."""

    view_id: str = jfield(UUID)
    mode: ViewMode = jfield(_enum(ViewMode))
    state: ViewState = jfield(_enum(ViewState))
    revision: int = jfield(COUNT)
    active_frame_id: str | None = jfield(UUID, default=None)
    created_at: int = jfield(MS)
    last_attached_at: int | None = jfield(MS, default=None)
    updated_at: int = jfield(MS)

    SORT_BY = ("view_id",)


@dataclass(frozen=True, kw_only=True)
class HostPlacement(Record):
    placement_id: str = jfield(UUID)
    view_id: str = jfield(UUID)
    frame_id: str = jfield(UUID)
    surface_id: str | None = jfield(UUID, default=None)
    state: PlacementState = jfield(_enum(PlacementState))
    generation: int = jfield(COUNT)
    last_focused_at: int | None = jfield(MS, default=None)
    updated_at: int = jfield(MS)

    SORT_BY = ("placement_id",)


@dataclass(frozen=True, kw_only=True)
class HostTransition(Record):
    transition_id: str = jfield(UUID)
    view_id: str = jfield(UUID)
    kind: TransitionKind = jfield(_enum(TransitionKind))
    source_frame_id: str | None = jfield(UUID, default=None)
    target_frame_id: str = jfield(UUID)
    work_context_id: str | None = jfield(UUID, default=None)
    state: TransitionState = jfield(_enum(TransitionState))
    transport_phase: TransportPhase = jfield(_enum(TransportPhase))
    created_at: int = jfield(MS)
    updated_at: int = jfield(MS)

    SORT_BY = ("transition_id",)


@dataclass(frozen=True, kw_only=True)
class HostControlTurn(Record):
    """A control turn's state; the template text and any prompt id stay on the host."""

    control_turn_id: str = jfield(UUID)
    transition_id: str = jfield(UUID)
    target_frame_id: str = jfield(UUID)
    target_session_key: str = jfield(SESSION_KEY)
    kind: ControlKind = jfield(_enum(ControlKind))
    transport: ControlTransport = jfield(_enum(ControlTransport))
    state: ControlState = jfield(_enum(ControlState))
    submission_count: int = jfield(IntKind(0, 1))
    submitted_at: int | None = jfield(MS, default=None)
    claimed_at: int | None = jfield(MS, default=None)
    settled_at: int | None = jfield(MS, default=None)

    SORT_BY = ("control_turn_id",)


@dataclass(frozen=True, kw_only=True)
class HostRecovery(Record):
    recovery_id: str = jfield(UUID)
    kind: str = jfield(TOKEN)
    subject_type: str = jfield(TOKEN)
    subject_id: str = jfield(SUBJECT_ID)
    actionability: Actionability = jfield(_enum(Actionability))
    state: RecoveryState = jfield(_enum(RecoveryState))
    explanation: str = jfield(EXPLANATION)
    created_at: int = jfield(MS)
    updated_at: int = jfield(MS)

    SORT_BY = ("recovery_id",)


@dataclass(frozen=True, kw_only=True)
class HostState(Record):
    """What one host publishes about itself; projection evidence only, never authority."""

    SENSITIVE_KEY_ALLOW: ClassVar[frozenset[str]] = frozenset()
    STATE_ENVELOPE: ClassVar[bool] = True

    schema_version: int = jfield(ConstKind(SCHEMA_VERSION),
                                 default=SCHEMA_VERSION)
    protocol_version: int = jfield(ConstKind(PROTOCOL_VERSION),
                                   default=PROTOCOL_VERSION)
    host_state_version: int = jfield(ConstKind(HOST_STATE_VERSION),
                                     default=HOST_STATE_VERSION)
    generation_id: str = jfield(UUID)
    activation_state: ActivationState = jfield(_enum(ActivationState))
    generated_at: int = jfield(MS)
    host: HostInfo = jfield(RecordKind(HostInfo))
    projects: tuple[HostProject, ...] = jfield(_rows(HostProject))
    repositories: tuple[HostRepository, ...] = jfield(_rows(HostRepository))
    project_repositories: tuple[HostProjectRepository, ...] = jfield(
        _rows(HostProjectRepository))
    checkouts: tuple[HostCheckout, ...] = jfield(_rows(HostCheckout))
    work_contexts: tuple[HostWorkContext, ...] = jfield(_rows(HostWorkContext))
    frames: tuple[HostFrame, ...] = jfield(_rows(HostFrame))
    frame_sessions: tuple[HostFrameSession, ...] = jfield(_rows(HostFrameSession))
    sessions: tuple[HostSession, ...] = jfield(_rows(HostSession))
    surfaces: tuple[HostSurface, ...] = jfield(_rows(HostSurface))
    views: tuple[HostView, ...] = jfield(_rows(HostView))
    placements: tuple[HostPlacement, ...] = jfield(_rows(HostPlacement))
    transitions: tuple[HostTransition, ...] = jfield(_rows(HostTransition))
    control_turns: tuple[HostControlTurn, ...] = jfield(_rows(HostControlTurn))
    recoveries: tuple[HostRecovery, ...] = jfield(_rows(HostRecovery))
    warnings: tuple[StateWarning, ...] = jfield(_rows(StateWarning), default=())
    truncation: Truncation = jfield(RecordKind(Truncation),
                                    default=Truncation())

    def validate(self) -> None:
        """Every id a row names exists in this envelope; raises EnvelopeError with its path."""
        host_prefix = f"{self.host.host_id}:"
        projects = _unique(self.projects, "project_id", "$.projects", "projectId")
        repositories = _unique(self.repositories, "repository_id", "$.repositories",
                               "repositoryId")
        checkouts = _unique(self.checkouts, "checkout_id", "$.checkouts", "checkoutId")
        contexts = _unique(self.work_contexts, "work_context_id", "$.workContexts",
                           "workContextId")
        frames = {row.frame_id: row for row in self.frames}
        _unique(self.frames, "frame_id", "$.frames", "frameId")
        _unique(self.frame_sessions, "frame_session_id", "$.frameSessions", "frameSessionId")
        sessions = _unique(self.sessions, "session_key", "$.sessions", "sessionKey")
        for i, row in enumerate(self.sessions):
            if not row.session_key.startswith(host_prefix):
                raise _fail(f"$.sessions[{i}].sessionKey", "must start with this host's id")
        surfaces = _unique(self.surfaces, "surface_id", "$.surfaces", "surfaceId")
        views = _unique(self.views, "view_id", "$.views", "viewId")
        _unique(self.placements, "placement_id", "$.placements", "placementId")
        transitions = _unique(self.transitions, "transition_id", "$.transitions",
                              "transitionId")
        _unique(self.control_turns, "control_turn_id", "$.controlTurns", "controlTurnId")
        _unique(self.recoveries, "recovery_id", "$.recoveries", "recoveryId")

        known = {"project": projects, "repository": repositories, "checkout": checkouts,
                 "work context": contexts, "frame": frames, "session": sessions,
                 "surface": surfaces, "view": views, "transition": transitions}
        # (array attribute, JSON name, [(field, JSON key, what it names)]): one table of
        # every reference, checked in one loop.
        references = (
            ("project_repositories", "projectRepositories",
             [("project_id", "projectId", "project"),
              ("repository_id", "repositoryId", "repository")]),
            ("projects", "projects", [("checkout_id", "checkoutId", "checkout")]),
            ("checkouts", "checkouts", [("repository_id", "repositoryId", "repository")]),
            ("work_contexts", "workContexts",
             [("project_id", "projectId", "project"), ("checkout_id", "checkoutId", "checkout"),
              ("foreground_frame_id", "foregroundFrameId", "frame")]),
            ("frames", "frames",
             [("project_id", "projectId", "project"),
              ("work_context_id", "workContextId", "work context"),
              ("current_session_key", "currentSessionKey", "session"),
              ("parent_frame_id", "parentFrameId", "frame")]),
            ("frame_sessions", "frameSessions",
             [("frame_id", "frameId", "frame"), ("session_key", "sessionKey", "session")]),
            ("sessions", "sessions",
             [("project_id", "projectId", "project"), ("checkout_id", "checkoutId", "checkout")]),
            ("surfaces", "surfaces", [("session_key", "sessionKey", "session")]),
            ("views", "views", [("active_frame_id", "activeFrameId", "frame")]),
            ("placements", "placements",
             [("view_id", "viewId", "view"), ("frame_id", "frameId", "frame"),
              ("surface_id", "surfaceId", "surface")]),
            ("transitions", "transitions",
             [("view_id", "viewId", "view"), ("source_frame_id", "sourceFrameId", "frame"),
              ("target_frame_id", "targetFrameId", "frame"),
              ("work_context_id", "workContextId", "work context")]),
            ("control_turns", "controlTurns",
             [("transition_id", "transitionId", "transition"),
              ("target_frame_id", "targetFrameId", "frame"),
              ("target_session_key", "targetSessionKey", "session")]),
        )
        for attr, name, fields in references:
            for i, row in enumerate(getattr(self, attr)):
                for field_name, key, what in fields:
                    _ref(getattr(row, field_name), known[what], f"$.{name}[{i}].{key}", what)
        for i, frame in enumerate(self.frames):
            parent = frames.get(frame.parent_frame_id or "")
            if parent is not None and parent.project_id != frame.project_id:
                raise _fail(f"$.frames[{i}].parentFrameId",
                            "must name a frame of the same project")
        for i, warning in enumerate(self.warnings):
            if warning.host_id is not None and warning.host_id != self.host.host_id:
                raise _fail(f"$.warnings[{i}].hostId", "must be this host's id")


# --------------------------------------------------------------------------- NavigatorState v1


@dataclass(frozen=True, kw_only=True)
class HostRow(Record):
    """One host as the navigator sees it: local and live, or cached and maybe stale."""

    host_id: str = jfield(UUID)
    display_name: str = jfield(NAME)
    generation_id: str = jfield(UUID)
    stale: bool = jfield(BOOL)
    reachability: Reachability = jfield(_enum(Reachability))
    observed_at: int | None = jfield(MS, default=None)

    SORT_BY = ("host_id",)


@dataclass(frozen=True, kw_only=True)
class BreadcrumbItem(Record):
    frame_id: str = jfield(UUID)
    title: str = jfield(TITLE)


@dataclass(frozen=True, kw_only=True)
class ViewRow(Record):
    """A presentation-ready view summary; frontends show it as is."""

    view_id: str = jfield(UUID)
    host_id: str = jfield(UUID)
    mode: ViewMode = jfield(_enum(ViewMode))
    state: ViewState = jfield(_enum(ViewState))
    revision: int = jfield(COUNT)
    active_frame_id: str | None = jfield(UUID, default=None)
    active_project_id: str | None = jfield(UUID, default=None)
    title: str = jfield(TITLE)
    breadcrumb: tuple[BreadcrumbItem, ...] = jfield(
        _rows(BreadcrumbItem, max_items=MAX_BREADCRUMB_ITEMS, ordered=False),
        default=())
    activity: Activity = jfield(_enum(Activity))
    attention: bool = jfield(BOOL, default=False)
    transition_state: TransitionState | None = jfield(_enum(TransitionState), default=None)
    control_state: ControlState | None = jfield(_enum(ControlState),
                                                default=None)
    last_activity_at: int | None = jfield(MS, default=None)

    SORT_BY = ("host_id", "view_id")


@dataclass(frozen=True, kw_only=True)
class SessionSummary(Record):
    provider: Provider = jfield(_enum(Provider))
    runtime_presence: RuntimePresence = jfield(_enum(RuntimePresence))
    resumability: Resumability = jfield(_enum(Resumability))
    activity: Activity = jfield(_enum(Activity))
    updated_at: int = jfield(MS)
    activity_reason: ActivityReason | None = jfield(_enum(ActivityReason),
                                                    default=None)
    """Why: ``usage_limit`` makes a needs-input badge read ``limited`` (issue 26)."""
    subagents: int | None = jfield(COUNT, default=None)
    """Subagents the live session runs now (SubagentStart without its SubagentStop, issue
    39 item 4, ``core.evidence.subagents``); absent (None) when none, so the JSON of a
    session without any is as it was."""


MAX_EXTRA_PANES = 64
"""Extra panes listed per frame (a frame with more is a runaway split loop; the rest wait)."""


@dataclass(frozen=True, kw_only=True)
class ExtraPaneSummary(Record):
    """A pane someone split into the view's window, which reconcile moved out of it to
    keep the view whole; it still runs, listed under the frame the view showed. Only an
    opaque id and the process name: no pane locator, no argv."""

    extra_pane_id: str = jfield(UUID, key="extraId")
    """JSON ``extraId``: state envelopes refuse keys naming panes (locator words)."""
    command: str = jfield(TextKind(64, allow_empty=True))

    SORT_BY = ("extra_pane_id",)


@dataclass(frozen=True, kw_only=True)
class FrameSummary(Record):
    frame_id: str = jfield(UUID)
    title: str = jfield(TITLE)
    role: FrameRole = jfield(_enum(FrameRole))
    parent_frame_id: str | None = jfield(UUID, default=None)
    lifecycle_state: FrameLifecycle = jfield(_enum(FrameLifecycle))
    close_reason: CloseReason | None = jfield(_enum(CloseReason), default=None)
    activity: Activity = jfield(_enum(Activity))
    current_session: SessionSummary | None = jfield(RecordKind(SessionSummary), default=None)
    session_count: int = jfield(COUNT)
    extra_panes: tuple[ExtraPaneSummary, ...] | None = jfield(
        _rows(ExtraPaneSummary, max_items=MAX_EXTRA_PANES), key="extras", default=None)
    """Panes split into the view's window while it showed this frame (issue 39 item 3);
    JSON ``extras``, absent (None) when there are none, so other frames' JSON is as it was."""

    SORT_BY = ("frame_id",)

    def check(self, path: str) -> None:
        _check_frame_shape(self.role, self.parent_frame_id, self.lifecycle_state,
                           self.close_reason, path)


@dataclass(frozen=True, kw_only=True)
class ProjectRow(Record):
    """A project with its frames; closed frames stay for read-only History."""

    project_id: str = jfield(UUID)
    host_id: str = jfield(UUID)
    name: str = jfield(NAME)
    frames: tuple[FrameSummary, ...] = jfield(_rows(FrameSummary), default=())

    SORT_BY = ("host_id", "project_id")


@dataclass(frozen=True, kw_only=True)
class RecoveryRow(Record):
    recovery_id: str = jfield(UUID)
    host_id: str = jfield(UUID)
    kind: str = jfield(TOKEN)
    subject_type: str = jfield(TOKEN)
    subject_id: str = jfield(SUBJECT_ID)
    actionability: Actionability = jfield(_enum(Actionability))
    state: RecoveryState = jfield(_enum(RecoveryState))
    explanation: str = jfield(EXPLANATION)
    created_at: int = jfield(MS)

    SORT_BY = ("host_id", "recovery_id")


@dataclass(frozen=True, kw_only=True)
class NavigatorState(Record):
    """One live local HostState plus cached remote ones, shaped for frontends.

    The top-level generation is the local generation and the only valid
    frontend-cache provenance; remote rows never grant mutation authority.
    """

    SENSITIVE_KEY_ALLOW: ClassVar[frozenset[str]] = frozenset()
    STATE_ENVELOPE: ClassVar[bool] = True

    schema_version: int = jfield(ConstKind(SCHEMA_VERSION),
                                 default=SCHEMA_VERSION)
    protocol_version: int = jfield(ConstKind(PROTOCOL_VERSION),
                                   default=PROTOCOL_VERSION)
    navigator_version: int = jfield(ConstKind(NAVIGATOR_VERSION),
                                    default=NAVIGATOR_VERSION)
    generation_id: str = jfield(UUID)
    generated_at: int = jfield(MS)
    local_host_id: str = jfield(UUID)
    hosts: tuple[HostRow, ...] = jfield(_rows(HostRow))
    views: tuple[ViewRow, ...] = jfield(_rows(ViewRow))
    projects: tuple[ProjectRow, ...] = jfield(_rows(ProjectRow))
    recoveries: tuple[RecoveryRow, ...] = jfield(_rows(RecoveryRow))
    warnings: tuple[StateWarning, ...] = jfield(_rows(StateWarning), default=())
    truncation: Truncation = jfield(RecordKind(Truncation),
                                    default=Truncation())

    def host_row(self, host_id: str) -> HostRow | None:
        return next((row for row in self.hosts if row.host_id == host_id), None)

    def row_key(self, host_id: str, entity_id: str) -> str:
        """The one string a frontend names a row by (a widget's option id, a tree
        node's key): the bare entity id for the host that owns it here, ``HOST/ID``
        for any other host's row reusing it.

        Ids are unique per host only, so another host's row may carry an id already
        in use; it then gets a key of its own and can never collide with one. The
        owner of an id is this host whenever it has a row with it, else the first
        host (by host id) that has: this host's keys are always its bare ids (what
        saved UI state holds), and so is every remote row's key that clashes with
        nothing (a bare key resolves local-first, then by host, as ``_id_owners``)."""
        if len(self.hosts) == 1 or self._id_owners.get(entity_id, host_id) == host_id:
            return entity_id  # one host (most navigators): nothing to tell apart
        return qualified_key(host_id, entity_id)

    def resolve_key(self, key: str) -> tuple[str | None, str]:
        """(host id, entity id) of a ``row_key``: ``HOST/ID`` names that host; a bare id
        names its owner here (None: no row has it; any host's row may then match)."""
        host_id, entity_id = split_row_key(key)
        if host_id is None and len(self.hosts) == 1:
            return self.hosts[0].host_id, entity_id
        return (host_id or self._id_owners.get(entity_id)), entity_id

    @cached_property
    def _id_owners(self) -> dict[str, str]:
        """Entity id -> the host whose row is known by it bare (see ``row_key``)."""
        rank = {host.host_id: (host.host_id != self.local_host_id, host.host_id)
                for host in self.hosts}
        rows: list[tuple[str, str]] = []
        for project in self.projects:
            rows.append((project.host_id, project.project_id))
            rows.extend((project.host_id, frame.frame_id) for frame in project.frames)
        rows.extend((view.host_id, view.view_id) for view in self.views)
        rows.extend((recovery.host_id, recovery.recovery_id) for recovery in self.recoveries)
        owners: dict[str, str] = {}
        for host_id, entity_id in sorted(rows, key=lambda row: rank.get(row[0], (True, row[0]))):
            owners.setdefault(entity_id, host_id)
        return owners

    def validate(self) -> None:
        """References resolve, ids are unique per host, and the local host carries the
        top generation.

        Entity ids are unique within their owner host only: every host mints its own,
        and two hosts may hold equal ones (demo homes share a fixed project id; a
        remote may reuse this host's ids on purpose). So each row is known by
        (host id, entity id), and a reference resolves on the row's own host.
        """
        hosts = {row.host_id: row for row in self.hosts}
        _unique(self.hosts, "host_id", "$.hosts", "hostId")
        local = hosts.get(self.local_host_id)
        if local is None:
            raise _fail("$.localHostId", f"refers to host {self.local_host_id}, which is not "
                                         "in hosts")
        if local.generation_id != self.generation_id:
            index = self.hosts.index(local)
            raise _fail(f"$.hosts[{index}].generationId",
                        "must equal the top-level generationId for the local host")

        projects = {(row.host_id, row.project_id): row for row in self.projects}
        _unique_on_host(self.projects, "project_id", "$.projects", "projectId")
        frame_project: dict[tuple[str, str], str] = {}
        for i, project in enumerate(self.projects):
            p = f"$.projects[{i}]"
            _ref(project.host_id, hosts, f"{p}.hostId", "host")
            own = _unique(project.frames, "frame_id", f"{p}.frames", "frameId")
            for j, frame in enumerate(project.frames):
                key = (project.host_id, frame.frame_id)
                if key in frame_project:
                    raise _fail(f"{p}.frames[{j}].frameId",
                                f"duplicates a frame of project {frame_project[key]}")
                frame_project[key] = project.project_id
                _ref(frame.parent_frame_id, own, f"{p}.frames[{j}].parentFrameId",
                     "frame of this project")

        _unique_on_host(self.views, "view_id", "$.views", "viewId")
        for i, view in enumerate(self.views):
            p = f"$.views[{i}]"
            _ref(view.host_id, hosts, f"{p}.hostId", "host")
            _ref_on_host(view.host_id, view.active_project_id, projects,
                         f"{p}.activeProjectId", "project")
            _ref_on_host(view.host_id, view.active_frame_id, frame_project,
                         f"{p}.activeFrameId", "frame")
            if (view.active_frame_id is not None and view.active_project_id is not None
                    and frame_project[(view.host_id, view.active_frame_id)]
                    != view.active_project_id):
                raise _fail(f"{p}.activeFrameId", "must be a frame of activeProjectId")
            for j, crumb in enumerate(view.breadcrumb):
                _ref_on_host(view.host_id, crumb.frame_id, frame_project,
                             f"{p}.breadcrumb[{j}].frameId", "frame")

        _unique_on_host(self.recoveries, "recovery_id", "$.recoveries", "recoveryId")
        for i, recovery in enumerate(self.recoveries):
            _ref(recovery.host_id, hosts, f"$.recoveries[{i}].hostId", "host")
        for i, warning in enumerate(self.warnings):
            _ref(warning.host_id, hosts, f"$.warnings[{i}].hostId", "host")


ROW_KEY_SEPARATOR = "/"
"""Between the host id and the entity id of another host's row key (never in a UUID)."""


def qualified_key(host_id: str, entity_id: str) -> str:
    """``HOST/ID``: the key of a row whose bare id another host's row owns."""
    return f"{host_id}{ROW_KEY_SEPARATOR}{entity_id}"


def split_row_key(key: str) -> tuple[str | None, str]:
    """(host id or None for a bare id, entity id) of a ``row_key``."""
    host_id, separator, entity_id = key.rpartition(ROW_KEY_SEPARATOR)
    return (host_id, entity_id) if separator else (None, key)


def _unique_on_host(rows: tuple[Any, ...], attr: str, array_path: str, key: str) -> None:
    """No two rows of one host share an id (other hosts may hold the same id)."""
    seen: set[tuple[str, str]] = set()
    for index, row in enumerate(rows):
        value = (row.host_id, getattr(row, attr))
        if value in seen:
            raise _fail(f"{array_path}[{index}].{key}",
                        f"duplicates an earlier {key} of host {value[0]} ({value[1]})")
        seen.add(value)


def _ref_on_host(host_id: str, value: str | None, known: Container[tuple[str, str]],
                 path: str, what: str) -> None:
    """A reference resolves to a row of the referring row's own host."""
    if value is not None and (host_id, value) not in known:
        raise _fail(path, f"refers to {what} {value}, which is not a {what} of host "
                          f"{host_id} in this envelope")


# --------------------------------------------------------------------------- PresentationDirective


@dataclass(frozen=True, kw_only=True)
class DirectiveError(Record):
    code: str = jfield(TOKEN)
    message: str = jfield(EXPLANATION)


_DIRECTIVE_NEEDS_VIEW = (DirectiveKind.FOCUS, DirectiveKind.ATTACH)


@dataclass(frozen=True, kw_only=True)
class PresentationDirective(Record):
    """What a desktop frontend should do after core committed the semantic view action.

    focus/attach carry the view, its revision and the desktop token; attach
    also carries the lease expiry; blocked carries only an error. The token is
    kept out of ``repr`` so it never lands in a log line by accident.
    """

    SENSITIVE_KEY_ALLOW: ClassVar[frozenset[str]] = frozenset({"$.desktopToken"})
    STATE_ENVELOPE: ClassVar[bool] = False

    directive_version: int = jfield(ConstKind(DIRECTIVE_VERSION),
                                    default=DIRECTIVE_VERSION)
    request_id: str = jfield(UUID)
    host_id: str = jfield(UUID)
    kind: DirectiveKind = jfield(_enum(DirectiveKind))
    view_id: str | None = jfield(UUID, default=None)
    view_revision: int | None = jfield(COUNT, default=None)
    desktop_token: str | None = jfield(DESKTOP_TOKEN, default=None, repr=False)
    lease_expires_at: int | None = jfield(MS, default=None)
    error: DirectiveError | None = jfield(RecordKind(DirectiveError), default=None)

    def check(self, path: str) -> None:
        needs_view = self.kind in _DIRECTIVE_NEEDS_VIEW
        if needs_view:
            for key, value in (("viewId", self.view_id), ("viewRevision", self.view_revision),
                               ("desktopToken", self.desktop_token)):
                if value is None:
                    raise _fail(f"{path}.{key}", f"is required for kind {self.kind.value}")
        elif self.desktop_token is not None:
            raise _fail(f"{path}.desktopToken", "must be absent for kind blocked")
        if (self.kind is DirectiveKind.ATTACH) != (self.lease_expires_at is not None):
            raise _fail(f"{path}.leaseExpiresAt", "is required for kind attach and only for it")
        if (self.kind is DirectiveKind.BLOCKED) != (self.error is not None):
            raise _fail(f"{path}.error", "is required for kind blocked and only for it")

    def validate(self) -> None:
        self.check("$")


def sorted_rows(rows: Iterable[Any]) -> tuple[Any, ...]:
    """Rows in canonical order (host id, then stable entity id), for builders that want it."""
    return tuple(sorted(rows, key=lambda row: row.sort_key()))


__all__ = [
    "BreadcrumbItem", "DirectiveError", "ExtraPaneSummary", "FrameSummary", "HostCheckout",
    "HostControlTurn", "HostFrame", "HostFrameSession", "HostInfo", "HostPlacement", "HostProject",
    "HostProjectRepository", "HostRecovery", "HostRepository", "HostRow", "HostSession",
    "HostState", "HostSurface", "HostTransition", "HostView", "HostWorkContext",
    "NavigatorState", "PresentationDirective", "ProjectRow", "RecoveryRow", "SessionSummary",
    "StateWarning", "TruncatedArray", "Truncation", "ViewRow", "qualified_key", "sorted_rows",
    "split_row_key",
]
