"""Registry schema v5: tables, constraints, partial unique indexes and edge triggers.

A v1, v2, v3 or v4 file upgrades in place at its first open (storage.migrations); v4
added ``extra_panes`` (panes someone split into a view's window, moved out by
reconcile and listed under their frame); v5 lets ``gemini`` and ``opencode`` be a
frame's, launch's, session's and surface's provider (the provider CHECKs widen).

The DDL is text, but every closed value set and every state machine is taken
from ``core.model.enums`` / ``core.model.machines`` so storage refuses exactly what the
engine refuses. Constraint and trigger names say the invariant they guard;
``storage.connection`` maps them to domain errors.
"""

from __future__ import annotations

from enum import StrEnum

import core.model.enums as e
import core.model.machines as machines

SCHEMA_VERSION = 5
PROTOCOL_VERSION = 1
# 'SWBR' as a big-endian int: marks a file as a Switchboard registry.
APPLICATION_ID = 0x53574252


def _in(column: str, values: type[StrEnum], *, nullable: bool = False) -> str:
    allowed = ", ".join(f"'{v.value}'" for v in values)
    check = f"{column} IN ({allowed})"
    return f"({column} IS NULL OR {check})" if nullable else check


TABLES = f"""
CREATE TABLE registry_metadata (
    singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
    schema_version INTEGER NOT NULL CHECK (schema_version = {SCHEMA_VERSION}),
    protocol_version INTEGER NOT NULL CHECK (protocol_version = {PROTOCOL_VERSION}),
    generation_id TEXT NOT NULL,
    local_host_id TEXT NOT NULL,
    activation_state TEXT NOT NULL CHECK ({_in("activation_state", e.ActivationState)}),
    created_at INTEGER NOT NULL,
    committed_at INTEGER
);

CREATE TABLE request_records (
    host_id TEXT NOT NULL,
    request_id TEXT NOT NULL,
    operation TEXT NOT NULL,
    semantic_fingerprint TEXT NOT NULL,
    state TEXT NOT NULL CHECK ({_in("state", e.RequestState)}),
    result_type TEXT,
    result_id TEXT,
    created_at INTEGER NOT NULL,
    completed_at INTEGER,
    CONSTRAINT one_fingerprint_per_request PRIMARY KEY (host_id, request_id)
);

CREATE TABLE repositories (
    repository_id TEXT PRIMARY KEY,
    host_id TEXT NOT NULL,
    name TEXT NOT NULL
);

CREATE TABLE checkouts (
    checkout_id TEXT PRIMARY KEY,
    host_id TEXT NOT NULL,
    repository_id TEXT REFERENCES repositories(repository_id),
    path TEXT NOT NULL
);

CREATE TABLE projects (
    project_id TEXT PRIMARY KEY,
    host_id TEXT NOT NULL,
    name TEXT NOT NULL,
    checkout_id TEXT NOT NULL REFERENCES checkouts(checkout_id),
    created_at INTEGER NOT NULL
);

CREATE TABLE project_repositories (
    project_id TEXT NOT NULL REFERENCES projects(project_id),
    repository_id TEXT NOT NULL REFERENCES repositories(repository_id),
    PRIMARY KEY (project_id, repository_id)
);

CREATE TABLE provider_sessions (
    session_key TEXT PRIMARY KEY,
    host_id TEXT NOT NULL,
    provider TEXT NOT NULL CHECK ({_in("provider", e.Provider)}),
    provider_session_id TEXT NOT NULL,
    project_id TEXT REFERENCES projects(project_id),
    checkout_id TEXT REFERENCES checkouts(checkout_id),
    name TEXT CHECK (name IS NULL OR length(name) <= 200),
    purpose TEXT CHECK (purpose IS NULL OR length(purpose) <= 500),
    pinned INTEGER NOT NULL DEFAULT 0 CHECK (pinned IN (0, 1)),
    runtime_presence TEXT NOT NULL CHECK ({_in("runtime_presence", e.RuntimePresence)}),
    resumability TEXT NOT NULL CHECK ({_in("resumability", e.Resumability)}),
    activity TEXT NOT NULL CHECK ({_in("activity", e.Activity)}),
    activity_reason TEXT NOT NULL CHECK ({_in("activity_reason", e.ActivityReason)}),
    provider_version TEXT,
    last_turn_id TEXT,
    created_at INTEGER,
    provider_updated_at INTEGER,
    last_observed_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    CONSTRAINT session_key_shape CHECK (
        session_key = host_id || ':' || provider || ':' || provider_session_id),
    CONSTRAINT one_session_per_provider_id UNIQUE (host_id, provider, provider_session_id)
);

CREATE TABLE session_handoffs (
    handoff_id TEXT PRIMARY KEY,
    session_key TEXT NOT NULL REFERENCES provider_sessions(session_key) ON UPDATE CASCADE,
    sequence INTEGER NOT NULL,
    summary TEXT NOT NULL,
    next_action TEXT NOT NULL,
    source TEXT NOT NULL CHECK ({_in("source", e.HandoffSource)}),
    source_host_id TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    UNIQUE (session_key, sequence)
);

CREATE TABLE work_contexts (
    work_context_id TEXT PRIMARY KEY,
    host_id TEXT NOT NULL,
    project_id TEXT NOT NULL REFERENCES projects(project_id),
    checkout_id TEXT NOT NULL REFERENCES checkouts(checkout_id),
    claim_state TEXT NOT NULL CHECK ({_in("claim_state", e.ClaimState)}),
    claim_generation INTEGER NOT NULL DEFAULT 0,
    foreground_frame_id TEXT REFERENCES frames(frame_id) DEFERRABLE INITIALLY DEFERRED,
    background_state TEXT NOT NULL CHECK ({_in("background_state", e.BackgroundState)}),
    acquired_at INTEGER,
    released_at INTEGER,
    updated_at INTEGER NOT NULL,
    CONSTRAINT held_context_has_foreground CHECK (
        claim_state <> 'held' OR foreground_frame_id IS NOT NULL)
);

CREATE TABLE frames (
    frame_id TEXT PRIMARY KEY,
    host_id TEXT NOT NULL,
    project_id TEXT NOT NULL REFERENCES projects(project_id),
    role TEXT NOT NULL CHECK ({_in("role", e.FrameRole)}),
    parent_frame_id TEXT REFERENCES frames(frame_id),
    work_context_id TEXT NOT NULL REFERENCES work_contexts(work_context_id)
        DEFERRABLE INITIALLY DEFERRED,
    title TEXT NOT NULL CHECK (length(title) BETWEEN 1 AND 200),
    purpose TEXT CHECK (purpose IS NULL OR length(purpose) <= 500),
    preferred_provider TEXT CHECK ({_in("preferred_provider", e.Provider, nullable=True)}),
    lifecycle_state TEXT NOT NULL CHECK ({_in("lifecycle_state", e.FrameLifecycle)}),
    close_reason TEXT CHECK ({_in("close_reason", e.CloseReason, nullable=True)}),
    current_session_key TEXT REFERENCES provider_sessions(session_key) ON UPDATE CASCADE,
    created_by TEXT NOT NULL CHECK ({_in("created_by", e.CreatedBy)}),
    depth INTEGER NOT NULL CHECK (depth >= 0),
    last_focused_at INTEGER,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    CONSTRAINT workspace_is_root CHECK ((role = 'workspace') = (parent_frame_id IS NULL)),
    CONSTRAINT workspace_depth_zero CHECK ((role = 'workspace') = (depth = 0)),
    CONSTRAINT open_frame_has_no_close_reason CHECK (
        lifecycle_state = 'open' OR close_reason IS NOT NULL),
    CONSTRAINT close_reason_only_when_closing CHECK (
        lifecycle_state <> 'open' OR close_reason IS NULL)
);
CREATE UNIQUE INDEX one_workspace_per_project ON frames(host_id, project_id)
    WHERE role = 'workspace';
CREATE INDEX frames_by_parent ON frames(parent_frame_id);
CREATE INDEX frames_by_project ON frames(project_id, lifecycle_state);

CREATE UNIQUE INDEX one_held_context_per_checkout ON work_contexts(checkout_id)
    WHERE claim_state = 'held';

CREATE TABLE frame_sessions (
    frame_session_id TEXT PRIMARY KEY,
    frame_id TEXT NOT NULL REFERENCES frames(frame_id),
    session_key TEXT NOT NULL REFERENCES provider_sessions(session_key) ON UPDATE CASCADE,
    ordinal INTEGER NOT NULL CHECK (ordinal >= 1),
    membership_reason TEXT NOT NULL CHECK ({_in("membership_reason", e.MembershipReason)}),
    joined_at INTEGER NOT NULL,
    CONSTRAINT one_frame_per_session UNIQUE (session_key),
    CONSTRAINT one_membership_per_ordinal UNIQUE (frame_id, ordinal)
);

CREATE TABLE tmux_servers (
    tmux_server_id TEXT PRIMARY KEY,
    host_id TEXT NOT NULL,
    socket_path TEXT NOT NULL,
    server_pid INTEGER NOT NULL,
    server_start_time INTEGER NOT NULL,
    observed_at INTEGER NOT NULL,
    CONSTRAINT one_row_per_server_identity UNIQUE (socket_path, server_pid, server_start_time)
);

CREATE TABLE user_views (
    view_id TEXT PRIMARY KEY,
    host_id TEXT NOT NULL,
    project_id TEXT REFERENCES projects(project_id),
    mode TEXT NOT NULL CHECK ({_in("mode", e.ViewMode)}),
    active_frame_id TEXT REFERENCES frames(frame_id),
    state TEXT NOT NULL CHECK ({_in("state", e.ViewState)}),
    revision INTEGER NOT NULL DEFAULT 0,
    desktop_token TEXT NOT NULL,
    tmux_server_id TEXT REFERENCES tmux_servers(tmux_server_id),
    tmux_window_id TEXT,
    main_pane_id TEXT,
    navigator_pane_id TEXT,
    zoomed INTEGER NOT NULL DEFAULT 0 CHECK (zoomed IN (0, 1)),
    created_at INTEGER NOT NULL,
    last_attached_at INTEGER,
    updated_at INTEGER NOT NULL
);
CREATE UNIQUE INDEX one_live_view_per_project ON user_views(host_id, project_id)
    WHERE state <> 'retired' AND project_id IS NOT NULL;

CREATE TABLE launch_intents (
    launch_id TEXT PRIMARY KEY,
    request_id TEXT NOT NULL,
    host_id TEXT NOT NULL,
    frame_id TEXT NOT NULL REFERENCES frames(frame_id),
    provider TEXT NOT NULL CHECK ({_in("provider", e.Provider)}),
    action TEXT NOT NULL CHECK ({_in("action", e.LaunchAction)}),
    target_session_key TEXT REFERENCES provider_sessions(session_key) ON UPDATE CASCADE,
    session_key TEXT REFERENCES provider_sessions(session_key) ON UPDATE CASCADE,
    state TEXT NOT NULL CHECK ({_in("state", e.LaunchState)}),
    failure TEXT CHECK (failure IS NULL OR length(failure) <= 1024),
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    CONSTRAINT resume_names_its_session CHECK (
        (action = 'resume') = (target_session_key IS NOT NULL))
);
CREATE UNIQUE INDEX one_pending_launch_per_session ON launch_intents(session_key)
    WHERE state IN ('planned', 'authorized', 'started') AND session_key IS NOT NULL;

CREATE TABLE surfaces (
    surface_id TEXT PRIMARY KEY,
    host_id TEXT NOT NULL,
    provider TEXT NOT NULL CHECK ({_in("provider", e.Provider)}),
    session_key TEXT REFERENCES provider_sessions(session_key) ON UPDATE CASCADE,
    launch_id TEXT NOT NULL REFERENCES launch_intents(launch_id),
    lifecycle_state TEXT NOT NULL CHECK ({_in("lifecycle_state", e.SurfaceState)}),
    tmux_server_id TEXT REFERENCES tmux_servers(tmux_server_id),
    pane_id TEXT,
    process_id INTEGER,
    process_birth_id TEXT,
    metadata_generation INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    retired_at INTEGER,
    CONSTRAINT live_surface_has_pane CHECK (
        lifecycle_state <> 'live' OR (pane_id IS NOT NULL AND tmux_server_id IS NOT NULL))
);
CREATE UNIQUE INDEX one_live_surface_per_session ON surfaces(session_key)
    WHERE lifecycle_state = 'live' AND session_key IS NOT NULL;
CREATE UNIQUE INDEX one_live_surface_per_pane ON surfaces(tmux_server_id, pane_id)
    WHERE lifecycle_state = 'live';

CREATE TABLE frame_placements (
    placement_id TEXT PRIMARY KEY,
    host_id TEXT NOT NULL,
    view_id TEXT NOT NULL REFERENCES user_views(view_id),
    frame_id TEXT NOT NULL REFERENCES frames(frame_id),
    surface_id TEXT REFERENCES surfaces(surface_id),
    state TEXT NOT NULL CHECK ({_in("state", e.PlacementState)}),
    generation INTEGER NOT NULL DEFAULT 0,
    last_focused_at INTEGER,
    updated_at INTEGER NOT NULL
);
CREATE UNIQUE INDEX one_active_placement_per_view ON frame_placements(view_id)
    WHERE state = 'active';
CREATE UNIQUE INDEX one_owning_placement_per_frame ON frame_placements(frame_id)
    WHERE state <> 'orphaned';
CREATE UNIQUE INDEX one_placement_per_surface ON frame_placements(surface_id)
    WHERE state <> 'orphaned' AND surface_id IS NOT NULL;

CREATE TABLE agent_capabilities (
    capability_id TEXT PRIMARY KEY,
    capability_digest TEXT NOT NULL UNIQUE CHECK (length(capability_digest) = 64),
    host_id TEXT NOT NULL,
    view_id TEXT NOT NULL REFERENCES user_views(view_id),
    frame_id TEXT NOT NULL REFERENCES frames(frame_id),
    session_key TEXT REFERENCES provider_sessions(session_key) ON UPDATE CASCADE,
    surface_id TEXT NOT NULL REFERENCES surfaces(surface_id),
    launch_id TEXT NOT NULL REFERENCES launch_intents(launch_id),
    tmux_server_id TEXT REFERENCES tmux_servers(tmux_server_id),
    pane_id TEXT,
    placement_generation INTEGER NOT NULL,
    issued_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    revoked_at INTEGER
);

CREATE TABLE view_transitions (
    transition_id TEXT PRIMARY KEY,
    request_id TEXT NOT NULL,
    request_fingerprint TEXT NOT NULL,
    host_id TEXT NOT NULL,
    view_id TEXT NOT NULL REFERENCES user_views(view_id),
    kind TEXT NOT NULL CHECK ({_in("kind", e.TransitionKind)}),
    source_frame_id TEXT REFERENCES frames(frame_id),
    target_frame_id TEXT NOT NULL REFERENCES frames(frame_id),
    work_context_id TEXT REFERENCES work_contexts(work_context_id),
    expected_view_revision INTEGER NOT NULL,
    expected_claim_generation INTEGER,
    state TEXT NOT NULL CHECK ({_in("state", e.TransitionState)}),
    execution_owner TEXT,
    lease_expires_at INTEGER,
    transport_phase TEXT NOT NULL CHECK ({_in("transport_phase", e.TransportPhase)}),
    target_mode TEXT CHECK ({_in("target_mode", e.ViewMode, nullable=True)}),
    failure TEXT CHECK (failure IS NULL OR length(failure) <= 1024),
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    CONSTRAINT mode_transition_names_its_mode CHECK ((kind = 'mode') = (target_mode IS NOT NULL))
);
CREATE UNIQUE INDEX one_nonterminal_transition_per_view ON view_transitions(view_id)
    WHERE state IN ('prepared', 'executing', 'presented', 'awaiting_claim', 'settling');

CREATE TABLE transition_briefs (
    brief_id TEXT PRIMARY KEY,
    transition_id TEXT NOT NULL REFERENCES view_transitions(transition_id),
    source_frame_id TEXT NOT NULL REFERENCES frames(frame_id),
    source_session_key TEXT REFERENCES provider_sessions(session_key) ON UPDATE CASCADE,
    target_frame_id TEXT NOT NULL REFERENCES frames(frame_id),
    brief TEXT NOT NULL CHECK (length(brief) BETWEEN 1 AND 65536),
    content_hash TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    first_claimed_at INTEGER,
    CONSTRAINT one_brief_per_push UNIQUE (transition_id)
);

CREATE TABLE completion_handoffs (
    handoff_id TEXT PRIMARY KEY,
    transition_id TEXT NOT NULL REFERENCES view_transitions(transition_id),
    source_frame_id TEXT NOT NULL REFERENCES frames(frame_id),
    source_session_key TEXT REFERENCES provider_sessions(session_key) ON UPDATE CASCADE,
    target_frame_id TEXT NOT NULL REFERENCES frames(frame_id),
    summary TEXT NOT NULL CHECK (length(summary) BETWEEN 1 AND 65536),
    next_action TEXT NOT NULL CHECK (length(next_action) <= 65536),
    content_hash TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    first_claimed_at INTEGER,
    CONSTRAINT one_handoff_per_completion UNIQUE (transition_id)
);

CREATE TABLE control_turns (
    control_turn_id TEXT PRIMARY KEY,
    transition_id TEXT NOT NULL REFERENCES view_transitions(transition_id),
    target_frame_id TEXT NOT NULL REFERENCES frames(frame_id),
    target_session_key TEXT REFERENCES provider_sessions(session_key) ON UPDATE CASCADE,
    kind TEXT NOT NULL CHECK ({_in("kind", e.ControlKind)}),
    template_version TEXT NOT NULL CHECK (template_version = 'control.claim.v1'),
    transport TEXT NOT NULL CHECK ({_in("transport", e.ControlTransport)}),
    state TEXT NOT NULL CHECK ({_in("state", e.ControlState)}),
    submission_count INTEGER NOT NULL DEFAULT 0 CHECK (submission_count BETWEEN 0 AND 1),
    submitted_at INTEGER,
    observed_prompt_id TEXT,
    claimed_at INTEGER,
    settled_at INTEGER,
    failure TEXT CHECK (failure IS NULL OR length(failure) <= 1024),
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    CONSTRAINT one_control_turn_per_transition UNIQUE (transition_id)
);

CREATE TABLE recoveries (
    recovery_id TEXT PRIMARY KEY,
    host_id TEXT NOT NULL,
    kind TEXT NOT NULL CHECK ({_in("kind", e.RecoveryKind)}),
    subject_type TEXT NOT NULL,
    subject_id TEXT NOT NULL,
    actionability TEXT NOT NULL CHECK ({_in("actionability", e.Actionability)}),
    state TEXT NOT NULL CHECK ({_in("state", e.RecoveryState)}),
    bounded_explanation TEXT NOT NULL CHECK (length(bounded_explanation) <= 1024),
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE UNIQUE INDEX one_open_recovery_per_subject
    ON recoveries(host_id, kind, subject_type, subject_id) WHERE state = 'open';

CREATE TABLE extra_panes (
    extra_pane_id TEXT PRIMARY KEY,
    host_id TEXT NOT NULL,
    view_id TEXT NOT NULL REFERENCES user_views(view_id),
    frame_id TEXT NOT NULL REFERENCES frames(frame_id),
    tmux_server_id TEXT NOT NULL REFERENCES tmux_servers(tmux_server_id),
    pane_id TEXT NOT NULL,
    command TEXT NOT NULL CHECK (length(command) <= 64),
    created_at INTEGER NOT NULL,
    CONSTRAINT one_record_per_pane UNIQUE (tmux_server_id, pane_id)
);

CREATE TABLE desktop_attachment_leases (
    lease_id TEXT PRIMARY KEY,
    view_id TEXT NOT NULL REFERENCES user_views(view_id),
    request_id TEXT NOT NULL,
    state TEXT NOT NULL CHECK ({_in("state", e.LeaseState)}),
    expires_at INTEGER NOT NULL
);
CREATE UNIQUE INDEX one_active_lease_per_view ON desktop_attachment_leases(view_id)
    WHERE state = 'offered';

CREATE TABLE host_state_cache (
    remote_name TEXT PRIMARY KEY,
    host_id TEXT NOT NULL,
    state_json TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    observed_at INTEGER NOT NULL,
    received_at INTEGER NOT NULL,
    last_attempt_at INTEGER NOT NULL,
    reachability TEXT NOT NULL CHECK ({_in("reachability", e.Reachability)}),
    bounded_error TEXT CHECK (bounded_error IS NULL OR length(bounded_error) <= 1024)
);
"""


def _edge_trigger(m: machines.Machine) -> str:
    def clause(old: str, new: frozenset[str]) -> str:
        targets = ", ".join(f"'{n}'" for n in sorted(new))
        return f"(OLD.{m.column} = '{old}' AND NEW.{m.column} IN ({targets}))"

    legal = " OR ".join(clause(old, new) for old, new in sorted(m.edges.items()) if new)
    return f"""
CREATE TRIGGER {m.name}_legal_edges BEFORE UPDATE OF {m.column} ON {m.table}
WHEN OLD.{m.column} IS NOT NEW.{m.column} AND NOT ({legal})
BEGIN
    SELECT RAISE(ABORT, 'illegal_edge:{m.name}');
END;
"""


def _insert_state_trigger(m: machines.Machine, initial: tuple[str, ...]) -> str:
    allowed = ", ".join(f"'{s}'" for s in initial)
    return f"""
CREATE TRIGGER {m.name}_initial_state BEFORE INSERT ON {m.table}
WHEN NEW.{m.column} NOT IN ({allowed})
BEGIN
    SELECT RAISE(ABORT, 'illegal_initial_state:{m.name}');
END;
"""


# Rows are born only in these states; everything else is reached by edges.
INITIAL_STATES: dict[str, tuple[str, ...]] = {
    "frame": ("open",),
    "work_context": ("released", "held"),
    "user_view": ("ready", "degraded"),
    "placement": ("staged", "active", "parked", "stopped_affinity"),
    "surface": ("planned",),
    "launch": ("planned",),
    "transition": ("prepared",),
    "transport": ("intent",),
    "control_turn": ("prepared",),
    "recovery": ("open",),
    "lease": ("offered",),
    "request": ("prepared",),
}

COUNTERS = """
CREATE TRIGGER claim_edge_bumps_generation BEFORE UPDATE ON work_contexts
WHEN (OLD.claim_state IS NOT NEW.claim_state
       OR OLD.foreground_frame_id IS NOT NEW.foreground_frame_id)
     AND NEW.claim_generation IS NOT OLD.claim_generation + 1
BEGIN
    SELECT RAISE(ABORT, 'invariant:claim_edge_bumps_generation');
END;

CREATE TRIGGER claim_generation_only_moves_on_edges BEFORE UPDATE OF claim_generation
ON work_contexts
WHEN OLD.claim_state IS NEW.claim_state
     AND OLD.foreground_frame_id IS NEW.foreground_frame_id
     AND NEW.claim_generation IS NOT OLD.claim_generation
BEGIN
    SELECT RAISE(ABORT, 'invariant:claim_generation_only_moves_on_edges');
END;

CREATE TRIGGER placement_edge_bumps_generation BEFORE UPDATE ON frame_placements
WHEN (OLD.state IS NOT NEW.state OR OLD.surface_id IS NOT NEW.surface_id)
     AND NEW.generation IS NOT OLD.generation + 1
BEGIN
    SELECT RAISE(ABORT, 'invariant:placement_edge_bumps_generation');
END;

CREATE TRIGGER view_mutation_bumps_revision BEFORE UPDATE ON user_views
WHEN (OLD.mode IS NOT NEW.mode OR OLD.active_frame_id IS NOT NEW.active_frame_id
       OR OLD.state IS NOT NEW.state)
     AND NEW.revision IS NOT OLD.revision + 1
BEGIN
    SELECT RAISE(ABORT, 'invariant:view_mutation_bumps_revision');
END;

CREATE TRIGGER submission_count_never_decreases BEFORE UPDATE OF submission_count
ON control_turns
WHEN NEW.submission_count < OLD.submission_count
BEGIN
    SELECT RAISE(ABORT, 'invariant:submission_count_never_decreases');
END;
"""

IMMUTABILITY = """
CREATE TRIGGER brief_content_immutable BEFORE UPDATE ON transition_briefs
WHEN NEW.brief IS NOT OLD.brief OR NEW.content_hash IS NOT OLD.content_hash
     OR NEW.transition_id IS NOT OLD.transition_id
     OR NEW.target_frame_id IS NOT OLD.target_frame_id
     OR (OLD.first_claimed_at IS NOT NULL AND NEW.first_claimed_at IS NOT OLD.first_claimed_at)
BEGIN
    SELECT RAISE(ABORT, 'invariant:brief_content_immutable');
END;

CREATE TRIGGER handoff_content_immutable BEFORE UPDATE ON completion_handoffs
WHEN NEW.summary IS NOT OLD.summary OR NEW.next_action IS NOT OLD.next_action
     OR NEW.content_hash IS NOT OLD.content_hash
     OR NEW.transition_id IS NOT OLD.transition_id
     OR NEW.target_frame_id IS NOT OLD.target_frame_id
     OR (OLD.first_claimed_at IS NOT NULL AND NEW.first_claimed_at IS NOT OLD.first_claimed_at)
BEGIN
    SELECT RAISE(ABORT, 'invariant:handoff_content_immutable');
END;

CREATE TRIGGER session_handoff_immutable BEFORE UPDATE OF summary, next_action, sequence,
    content_hash ON session_handoffs
BEGIN
    SELECT RAISE(ABORT, 'invariant:session_handoff_immutable');
END;

CREATE TRIGGER semantic_records_never_deleted_brief BEFORE DELETE ON transition_briefs
BEGIN
    SELECT RAISE(ABORT, 'invariant:semantic_records_never_deleted');
END;

CREATE TRIGGER semantic_records_never_deleted_handoff BEFORE DELETE ON completion_handoffs
BEGIN
    SELECT RAISE(ABORT, 'invariant:semantic_records_never_deleted');
END;

CREATE TRIGGER frame_lineage_immutable BEFORE UPDATE OF parent_frame_id, project_id, role,
    work_context_id, host_id ON frames
WHEN NEW.parent_frame_id IS NOT OLD.parent_frame_id OR NEW.project_id IS NOT OLD.project_id
     OR NEW.role IS NOT OLD.role OR NEW.work_context_id IS NOT OLD.work_context_id
     OR NEW.host_id IS NOT OLD.host_id
BEGIN
    SELECT RAISE(ABORT, 'invariant:frame_lineage_immutable');
END;

CREATE TRIGGER request_fingerprint_immutable BEFORE UPDATE OF semantic_fingerprint, operation
ON request_records
WHEN NEW.semantic_fingerprint IS NOT OLD.semantic_fingerprint
     OR NEW.operation IS NOT OLD.operation
BEGIN
    SELECT RAISE(ABORT, 'invariant:request_fingerprint_immutable');
END;

CREATE TRIGGER transport_terminal_never_runs_again BEFORE UPDATE OF transport_phase
ON view_transitions
WHEN OLD.transport_phase IN ('committed', 'rolled_back')
     AND NEW.transport_phase IS NOT OLD.transport_phase
BEGIN
    SELECT RAISE(ABORT, 'illegal_edge:transport');
END;
"""

FRAME_RULES = """
CREATE TRIGGER task_parent_same_project_and_context BEFORE INSERT ON frames
WHEN NEW.role = 'task' AND NOT EXISTS (
    SELECT 1 FROM frames p
    WHERE p.frame_id = NEW.parent_frame_id AND p.host_id = NEW.host_id
      AND p.project_id = NEW.project_id AND p.work_context_id = NEW.work_context_id
      AND p.depth + 1 = NEW.depth)
BEGIN
    SELECT RAISE(ABORT, 'invariant:task_parent_same_project_and_context');
END;

CREATE TRIGGER current_session_is_member BEFORE UPDATE OF current_session_key ON frames
WHEN NEW.current_session_key IS NOT NULL AND NOT EXISTS (
    SELECT 1 FROM frame_sessions fs
    WHERE fs.frame_id = NEW.frame_id AND fs.session_key = NEW.current_session_key)
BEGIN
    SELECT RAISE(ABORT, 'invariant:current_session_is_member');
END;

CREATE TRIGGER completed_requires_claimed_handoff BEFORE UPDATE OF lifecycle_state ON frames
WHEN NEW.lifecycle_state = 'closed' AND NEW.close_reason = 'completed' AND NOT EXISTS (
    SELECT 1 FROM completion_handoffs h WHERE h.source_frame_id = NEW.frame_id
      AND h.first_claimed_at IS NOT NULL)
BEGIN
    SELECT RAISE(ABORT, 'invariant:completed_requires_claimed_handoff');
END;

CREATE TRIGGER dismissed_forbids_handoff BEFORE UPDATE OF close_reason ON frames
WHEN NEW.close_reason = 'dismissed' AND OLD.close_reason IS NOT 'dismissed' AND EXISTS (
    SELECT 1 FROM completion_handoffs h WHERE h.source_frame_id = NEW.frame_id
      AND h.first_claimed_at IS NULL)
BEGIN
    SELECT RAISE(ABORT, 'invariant:dismissed_forbids_handoff');
END;

CREATE TRIGGER no_open_child_under_closing_parent BEFORE UPDATE OF lifecycle_state ON frames
WHEN OLD.lifecycle_state = 'open' AND NEW.lifecycle_state <> 'open' AND EXISTS (
    SELECT 1 FROM frames c WHERE c.parent_frame_id = NEW.frame_id
      AND c.lifecycle_state = 'open')
BEGIN
    SELECT RAISE(ABORT, 'invariant:no_open_child_under_closing_parent');
END;

CREATE TRIGGER reopen_needs_open_parent BEFORE UPDATE OF lifecycle_state ON frames
WHEN NEW.lifecycle_state = 'open' AND OLD.lifecycle_state <> 'open'
     AND NEW.parent_frame_id IS NOT NULL AND NOT EXISTS (
    SELECT 1 FROM frames p WHERE p.frame_id = NEW.parent_frame_id
      AND p.lifecycle_state = 'open')
BEGIN
    SELECT RAISE(ABORT, 'invariant:reopen_needs_open_parent');
END;

CREATE TRIGGER foreground_is_open_member BEFORE UPDATE OF foreground_frame_id ON work_contexts
WHEN NEW.foreground_frame_id IS NOT NULL AND NOT EXISTS (
    SELECT 1 FROM frames f WHERE f.frame_id = NEW.foreground_frame_id
      AND f.work_context_id = NEW.work_context_id AND f.lifecycle_state = 'open')
BEGIN
    SELECT RAISE(ABORT, 'invariant:foreground_is_open_member');
END;

CREATE TRIGGER terminal_surface_never_reused BEFORE UPDATE OF pane_id, tmux_server_id ON surfaces
WHEN OLD.pane_id IS NOT NULL AND (NEW.pane_id IS NOT OLD.pane_id
     OR NEW.tmux_server_id IS NOT OLD.tmux_server_id)
BEGIN
    SELECT RAISE(ABORT, 'invariant:surface_locator_fixed_once_set');
END;
"""


def ddl() -> str:
    """The whole current schema as one script."""
    parts = [TABLES, COUNTERS, IMMUTABILITY, FRAME_RULES]
    for m in machines.ALL:
        parts.append(_edge_trigger(m))
        if m.name in INITIAL_STATES:
            parts.append(_insert_state_trigger(m, INITIAL_STATES[m.name]))
    return "\n".join(parts)


REQUIRED_TABLES = (
    "registry_metadata", "request_records", "repositories", "checkouts", "projects",
    "project_repositories", "provider_sessions", "session_handoffs", "work_contexts",
    "frames", "frame_sessions", "tmux_servers", "user_views", "launch_intents", "surfaces",
    "frame_placements", "agent_capabilities", "view_transitions", "transition_briefs",
    "completion_handoffs", "control_turns", "recoveries", "desktop_attachment_leases",
    "host_state_cache", "extra_panes",
)
