"""Closed value sets of the per-session evidence database (spec section 21).

Values are the spec's strings; storage turns each into a CHECK constraint, so
the code and the file refuse the same values. Stdlib only: the hook path
imports this on every provider event.
"""

from __future__ import annotations

from enum import StrEnum


class SessionStatus(StrEnum):
    ACTIVE = "active"
    ARCHIVED = "archived"
    DELETED = "deleted"


class MessageRole(StrEnum):
    USER = "user"
    ASSISTANT = "assistant"
    SYSTEM = "system"
    TOOL = "tool"


class CanonicalFormat(StrEnum):
    ANTHROPIC = "anthropic"


class TaskType(StrEnum):
    EXECUTE = "execute"
    REVIEW = "review"
    DEBUG = "debug"
    COMPACT = "compact"
    MINE_EXPERIENCE = "mine_experience"
    DOCS = "docs"


class TaskStatus(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    BLOCKED = "blocked"
    CANCELLED = "cancelled"
    INTERRUPTED = "interrupted"


class DependencyType(StrEnum):
    HARD = "hard"
    SOFT = "soft"
    CONFLICT = "conflict"
    SERIALIZATION = "serialization"


class AttemptStatus(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


class AgentStatus(StrEnum):
    STARTING = "starting"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    LOST = "lost"
    CANCELLED = "cancelled"


class ToolRunStatus(StrEnum):
    RUNNING = "running"
    OK = "ok"
    ERROR = "error"
    CANCELLED = "cancelled"


class ArtifactType(StrEnum):
    LOG = "log"
    DIFF = "diff"
    SCREENSHOT = "screenshot"
    PCAP = "pcap"
    REPORT = "report"
    DIAGNOSTIC = "diagnostic"
    BUNDLE = "bundle"
    OTHER = "other"


class DiagnosticSeverity(StrEnum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"
    HINT = "hint"


class EvidenceKind(StrEnum):
    BUILD_OUTPUT = "build_output"
    TEST_OUTPUT = "test_output"
    LOG = "log"
    SCREENSHOT = "screenshot"
    DIFF = "diff"
    METRIC = "metric"
    OTHER = "other"


class WorkspaceStrategy(StrEnum):
    MAIN = "main"
    WORKTREE = "worktree"
    ISOLATED_COPY = "isolated_copy"


class WorkspaceStatus(StrEnum):
    ACTIVE = "active"
    MERGED = "merged"
    CONFLICTED = "conflicted"
    ABANDONED = "abandoned"
    CLEANED = "cleaned"


class SummaryType(StrEnum):
    COMPACTION = "compaction"
    CHECKPOINT = "checkpoint"
    REVIEW = "review"
    OTHER = "other"


class DraftStatus(StrEnum):
    STREAMING = "streaming"
    INTERRUPTED = "interrupted"
    ERROR = "error"


class EventSourceKind(StrEnum):
    """Where an event came from. Not in the spec's closed inventory (so no CHECK);
    a StrEnum so writers cannot misspell it."""

    HOOK = "hook"
    ENGINE = "engine"  # task lineage written after an engine request (push, complete, claim)


#: (table, column) -> its closed set, exactly the spec's inventory for session.db.
CLOSED_COLUMNS: dict[tuple[str, str], type[StrEnum]] = {
    ("sessions", "status"): SessionStatus,
    ("messages", "role"): MessageRole,
    ("messages", "canonical_format"): CanonicalFormat,
    ("tasks", "type"): TaskType,
    ("tasks", "status"): TaskStatus,
    ("task_dependencies", "dependency_type"): DependencyType,
    ("task_attempts", "status"): AttemptStatus,
    ("agents", "status"): AgentStatus,
    ("tool_runs", "status"): ToolRunStatus,
    ("artifacts", "type"): ArtifactType,
    ("diagnostics", "severity"): DiagnosticSeverity,
    ("evidence_refs", "kind"): EvidenceKind,
    ("workspaces", "strategy"): WorkspaceStrategy,
    ("workspaces", "status"): WorkspaceStatus,
    ("summaries", "type"): SummaryType,
    ("message_drafts", "status"): DraftStatus,
}
