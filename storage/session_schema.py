"""The session.db schema, transcribed from the spec (session-db-schema.txt, V1), plus V2.

Tables, columns and indexes of ``TABLES``/``INDEXES`` are exactly the spec's. V2
adds ``USAGE_TABLES``/``USAGE_INDEXES`` (issue 26): the tokens each turn used, as
the CLI's own transcript or rollout file states them, and where the incremental
reader of that file stopped. A V1 file gets them in place at its first open
(``storage.session_db``); nothing of V1 changes. Of V1, the only additions are
CHECK constraints for the spec's closed enums (named ``<table>_<column>_closed``
so a refusal names the rule) and the file identity in the SQLite header
(application_id, user_version), which is not schema. Imported only when a
file is created, so the hook path never parses this text.
"""

from __future__ import annotations

from core.model.evidence_enums import CLOSED_COLUMNS

#: table -> column definitions, verbatim from the spec (order matters: it is the file's).
TABLES: dict[str, str] = {
    "schema_meta": """
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL""",
    "sessions": """
  id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL,
  project_root TEXT NOT NULL,
  title TEXT,
  status TEXT NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  exited_at TEXT,
  model_provider_id TEXT,
  model_id TEXT,
  metadata_json TEXT""",
    "messages": """
  id TEXT PRIMARY KEY,
  session_id TEXT NOT NULL,
  role TEXT NOT NULL,
  canonical_format TEXT NOT NULL,
  content_json TEXT NOT NULL,
  parent_message_id TEXT,
  route_json TEXT,
  created_at TEXT NOT NULL,
  token_estimate INTEGER,
  metadata_json TEXT""",
    "message_drafts": """
  message_id TEXT PRIMARY KEY,
  session_id TEXT NOT NULL,
  role TEXT NOT NULL,
  canonical_format TEXT NOT NULL,
  partial_content_json TEXT NOT NULL,
  status TEXT NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  metadata_json TEXT""",
    "events": """
  id TEXT PRIMARY KEY,
  session_id TEXT NOT NULL,
  type TEXT NOT NULL,
  version INTEGER NOT NULL,
  timestamp TEXT NOT NULL,
  source_kind TEXT NOT NULL,
  source_id TEXT,
  agent_type TEXT,
  task_id TEXT,
  agent_id TEXT,
  tool_run_id TEXT,
  command_run_id TEXT,
  route_json TEXT NOT NULL,
  route_text TEXT NOT NULL,
  payload_json TEXT NOT NULL""",
    "tasks": """
  id TEXT PRIMARY KEY,
  session_id TEXT NOT NULL,
  type TEXT NOT NULL,
  status TEXT NOT NULL,
  title TEXT NOT NULL,
  task_spec_json TEXT NOT NULL,
  worker_result_json TEXT,
  assigned_agent_id TEXT,
  workspace_id TEXT,
  retry_count INTEGER NOT NULL DEFAULT 0,
  created_at TEXT NOT NULL,
  started_at TEXT,
  completed_at TEXT,
  heartbeat_at TEXT,
  metadata_json TEXT""",
    "task_dependencies": """
  id TEXT PRIMARY KEY,
  session_id TEXT NOT NULL,
  task_id TEXT NOT NULL,
  depends_on_task_id TEXT NOT NULL,
  dependency_type TEXT NOT NULL,
  reason TEXT,
  created_at TEXT NOT NULL""",
    "task_attempts": """
  id TEXT PRIMARY KEY,
  session_id TEXT NOT NULL,
  task_id TEXT NOT NULL,
  attempt_index INTEGER NOT NULL,
  agent_id TEXT,
  status TEXT NOT NULL,
  failure_signature TEXT,
  failure_summary TEXT,
  started_at TEXT NOT NULL,
  completed_at TEXT,
  worker_result_json TEXT,
  metadata_json TEXT""",
    "agents": """
  id TEXT PRIMARY KEY,
  session_id TEXT NOT NULL,
  type TEXT NOT NULL,
  status TEXT NOT NULL,
  pid INTEGER,
  task_id TEXT,
  model_provider_id TEXT,
  model_id TEXT,
  started_at TEXT NOT NULL,
  completed_at TEXT,
  last_heartbeat_at TEXT,
  metadata_json TEXT""",
    "tool_runs": """
  id TEXT PRIMARY KEY,
  session_id TEXT NOT NULL,
  task_id TEXT,
  agent_id TEXT,
  origin_message_id TEXT,
  tool_name TEXT NOT NULL,
  status TEXT NOT NULL,
  input_json TEXT NOT NULL,
  output_json TEXT,
  error_json TEXT,
  started_at TEXT NOT NULL,
  completed_at TEXT,
  duration_ms INTEGER,
  artifacts_json TEXT,
  evidence_refs_json TEXT,
  metadata_json TEXT""",
    "command_runs": """
  id TEXT PRIMARY KEY,
  session_id TEXT NOT NULL,
  task_id TEXT,
  agent_id TEXT,
  origin_message_id TEXT,
  tool_run_id TEXT,
  command TEXT NOT NULL,
  cwd TEXT NOT NULL,
  exit_code INTEGER,
  stdout_artifact_id TEXT,
  stderr_artifact_id TEXT,
  combined_artifact_id TEXT,
  started_at TEXT NOT NULL,
  completed_at TEXT,
  duration_ms INTEGER,
  parsed_diagnostics_json TEXT,
  metadata_json TEXT""",
    "artifacts": """
  id TEXT PRIMARY KEY,
  session_id TEXT NOT NULL,
  type TEXT NOT NULL,
  uri TEXT NOT NULL,
  path TEXT NOT NULL,
  original_name TEXT,
  size_bytes INTEGER,
  sha256 TEXT,
  task_id TEXT,
  agent_id TEXT,
  tool_run_id TEXT,
  command_run_id TEXT,
  associated_entity_type TEXT,
  associated_entity_id TEXT,
  created_at TEXT NOT NULL,
  metadata_json TEXT""",
    "diagnostics": """
  id TEXT PRIMARY KEY,
  session_id TEXT NOT NULL,
  task_id TEXT,
  agent_id TEXT,
  command_run_id TEXT,
  artifact_id TEXT,
  language TEXT,
  toolchain TEXT,
  severity TEXT,
  file TEXT,
  line INTEGER,
  column INTEGER,
  code TEXT,
  message TEXT NOT NULL,
  semantic_signature TEXT NOT NULL,
  created_at TEXT NOT NULL,
  metadata_json TEXT""",
    "evidence_refs": """
  id TEXT PRIMARY KEY,
  session_id TEXT NOT NULL,
  task_id TEXT,
  agent_id TEXT,
  tool_run_id TEXT,
  command_run_id TEXT,
  artifact_id TEXT,
  diagnostic_id TEXT,
  message_id TEXT,
  kind TEXT NOT NULL,
  ref TEXT NOT NULL,
  location_json TEXT,
  claim TEXT NOT NULL,
  created_at TEXT NOT NULL""",
    "workspaces": """
  id TEXT PRIMARY KEY,
  session_id TEXT NOT NULL,
  task_id TEXT,
  agent_id TEXT,
  path TEXT NOT NULL,
  strategy TEXT NOT NULL,
  status TEXT NOT NULL,
  base_ref TEXT,
  branch_name TEXT,
  created_at TEXT NOT NULL,
  merged_at TEXT,
  metadata_json TEXT""",
    "summaries": """
  id TEXT PRIMARY KEY,
  session_id TEXT NOT NULL,
  type TEXT NOT NULL,
  range_start_message_id TEXT,
  range_end_message_id TEXT,
  content_json TEXT NOT NULL,
  created_at TEXT NOT NULL,
  metadata_json TEXT""",
    "ui_state": """
  id TEXT PRIMARY KEY,
  session_id TEXT NOT NULL,
  scope TEXT NOT NULL,
  key TEXT NOT NULL,
  value_json TEXT NOT NULL,
  updated_at TEXT NOT NULL""",
}

#: index name -> (table, columns, unique), verbatim from the spec.
INDEXES: dict[str, tuple[str, str, bool]] = {
    "idx_messages_session_created": ("messages", "session_id, created_at", False),
    "idx_drafts_session_status": ("message_drafts", "session_id, status", False),
    "idx_events_session_type_time": ("events", "session_id, type, timestamp", False),
    "idx_events_task_time": ("events", "task_id, timestamp", False),
    "idx_events_agent_time": ("events", "agent_id, timestamp", False),
    "idx_events_route_text": ("events", "route_text", False),
    "idx_tasks_session_status": ("tasks", "session_id, status", False),
    "idx_task_deps_task": ("task_dependencies", "task_id", False),
    "idx_task_deps_depends_on": ("task_dependencies", "depends_on_task_id", False),
    "idx_task_deps_session_type": ("task_dependencies", "session_id, dependency_type", False),
    "idx_task_attempts_task": ("task_attempts", "task_id, attempt_index", False),
    "idx_task_attempts_failure_signature": ("task_attempts", "failure_signature", False),
    "idx_agents_session_status": ("agents", "session_id, status", False),
    "idx_agents_task": ("agents", "task_id", False),
    "idx_tool_runs_origin_message": ("tool_runs", "origin_message_id", False),
    "idx_tool_runs_session_time": ("tool_runs", "session_id, started_at", False),
    "idx_tool_runs_task_time": ("tool_runs", "task_id, started_at", False),
    "idx_tool_runs_agent_time": ("tool_runs", "agent_id, started_at", False),
    "idx_command_runs_origin_message": ("command_runs", "origin_message_id", False),
    "idx_command_runs_session_time": ("command_runs", "session_id, started_at", False),
    "idx_command_runs_task_time": ("command_runs", "task_id, started_at", False),
    "idx_command_runs_agent_time": ("command_runs", "agent_id, started_at", False),
    "idx_artifacts_session_type_time": ("artifacts", "session_id, type, created_at", False),
    "idx_artifacts_task": ("artifacts", "task_id", False),
    "idx_artifacts_agent": ("artifacts", "agent_id", False),
    "idx_artifacts_tool_run": ("artifacts", "tool_run_id", False),
    "idx_artifacts_command_run": ("artifacts", "command_run_id", False),
    "idx_diagnostics_signature": ("diagnostics", "semantic_signature", False),
    "idx_diagnostics_file": ("diagnostics", "file", False),
    "idx_diagnostics_command": ("diagnostics", "command_run_id", False),
    "idx_diagnostics_task": ("diagnostics", "task_id", False),
    "idx_evidence_task": ("evidence_refs", "task_id", False),
    "idx_evidence_artifact": ("evidence_refs", "artifact_id", False),
    "idx_evidence_diagnostic": ("evidence_refs", "diagnostic_id", False),
    "idx_workspaces_task": ("workspaces", "task_id", False),
    "idx_workspaces_status": ("workspaces", "session_id, status", False),
    "idx_ui_state_session_scope_key": ("ui_state", "session_id, scope, key", True),
}


#: V2: usage per turn and model, and the reader's cursor per source file.
USAGE_TABLES: dict[str, str] = {
    "turn_usage": """
  id TEXT PRIMARY KEY,
  session_id TEXT NOT NULL,
  turn_id TEXT,
  provider TEXT NOT NULL,
  model_id TEXT,
  input_tokens INTEGER NOT NULL,
  output_tokens INTEGER NOT NULL,
  cache_read_tokens INTEGER NOT NULL,
  cache_write_tokens INTEGER NOT NULL,
  reasoning_tokens INTEGER NOT NULL,
  requests INTEGER NOT NULL,
  limit_kind TEXT,
  limit_message TEXT,
  limit_reset_at TEXT,
  ended_at TEXT NOT NULL,
  metadata_json TEXT""",
    "usage_cursors": """
  session_id TEXT NOT NULL,
  source_path TEXT NOT NULL,
  byte_offset INTEGER NOT NULL,
  state_json TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  PRIMARY KEY (session_id, source_path)""",
}

USAGE_INDEXES: dict[str, tuple[str, str, bool]] = {
    "idx_turn_usage_session_time": ("turn_usage", "session_id, ended_at", False),
}


def usage_ddl() -> list[str]:
    """The V2 additions, for a new file and for the in-place upgrade of a V1 one."""
    statements = [f"CREATE TABLE {name} ({body}\n)" for name, body in USAGE_TABLES.items()]
    statements += [
        f"CREATE {'UNIQUE ' if unique else ''}INDEX {name} ON {table}({columns})"
        for name, (table, columns, unique) in USAGE_INDEXES.items()]
    return statements


def _closed_checks(table: str) -> str:
    checks = []
    for (owner, column), values in CLOSED_COLUMNS.items():
        if owner == table:
            allowed = ", ".join(f"'{v.value}'" for v in values)
            checks.append(
                f",\n  CONSTRAINT {table}_{column}_closed CHECK ({column} IN ({allowed}))")
    return "".join(checks)


def ddl() -> list[str]:
    """Every CREATE statement for a new session.db, tables first."""
    statements = [f"CREATE TABLE {name} ({body}{_closed_checks(name)}\n)"
                  for name, body in TABLES.items()]
    statements += [
        f"CREATE {'UNIQUE ' if unique else ''}INDEX {name} ON {table}({columns})"
        for name, (table, columns, unique) in INDEXES.items()]
    return statements + usage_ddl()
