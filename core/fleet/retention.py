"""`switchboard prune`: closed frames' session evidence and artifacts older than N days.

Evidence (``$SWITCHBOARD_HOME/sessions/<key>/``: the hooks' session DB and the
command outputs kept as artifacts) grows with every session and is read only
while someone looks into a frame; a frame closed weeks ago is rarely looked at.
A session's evidence may go when every frame it belongs to is closed, the last
of them closed more than N days ago, the session was last observed more than N
days ago and it has no live runtime. Its per-launch run folder (the provider
settings and MCP files written for its launches) goes with it.

The registry keeps every row: the closed frame can still be reopened and its
session resumed by exact id; only what was recorded about it is gone. N comes
from ``--older-than`` or the config's ``[retention] evidence_days``; a dry run
lists what would go and changes nothing.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from typing import TYPE_CHECKING

from core.model.errors import ConfigError
from storage.session_retention import evidence_folder, folder_bytes, remove_session_evidence

if TYPE_CHECKING:
    from core.engine.engine import Engine

DAY_MS = 86_400_000


@dataclass(frozen=True)
class PrunedSession:
    session_key: str
    frame_title: str
    closed_days_ago: int
    evidence_bytes: int
    run_bytes: int


@dataclass(frozen=True)
class PruneReport:
    older_than_days: int
    dry_run: bool
    sessions: tuple[PrunedSession, ...]

    @property
    def total_bytes(self) -> int:
        return sum(s.evidence_bytes + s.run_bytes for s in self.sessions)


def retention_days(engine: Engine, older_than: int | None) -> int:
    """The age limit: the command's, else the config's; refused by name without either."""
    if older_than is not None:
        return older_than
    configured = engine.config.retention.evidence_days
    if configured is None:
        raise ConfigError("say how old evidence must be to go: `switchboard prune "
                          "--older-than DAYS`, or set evidence_days under [retention] in the "
                          "config (nothing was removed)", code="retention_unset")
    return configured


def prune(engine: Engine, older_than_days: int, *, dry_run: bool) -> PruneReport:
    """Remove (or, dry, list) the evidence of sessions only closed frames held long enough."""
    home = engine.require_home()
    now = engine.now()
    cutoff = now - older_than_days * DAY_MS
    found: list[PrunedSession] = []
    for row in engine.conn.execute(
            "SELECT s.session_key, MAX(f.updated_at) AS closed_at, MIN(f.title) AS title"
            " FROM provider_sessions s JOIN frame_sessions m ON m.session_key = s.session_key"
            " JOIN frames f ON f.frame_id = m.frame_id"
            " WHERE s.host_id = ? AND s.runtime_presence <> 'live'"
            " AND s.last_observed_at <= ?"
            " GROUP BY s.session_key"
            " HAVING SUM(f.lifecycle_state <> 'closed') = 0 AND MAX(f.updated_at) <= ?"
            " ORDER BY closed_at, s.session_key",
            (engine.host_id, cutoff, cutoff)):
        key = row["session_key"]
        run_folder = home.run_dir / key.replace(":", "_")
        evidence = folder_bytes(evidence_folder(home.root, key))
        run = folder_bytes(run_folder)
        if not evidence and not run_folder.is_dir():
            continue  # nothing left to prune (an earlier prune, or no hook ever wrote)
        if not dry_run:
            evidence = remove_session_evidence(home.root, key)
            if run_folder.is_dir() and not run_folder.is_symlink():
                shutil.rmtree(run_folder)
        found.append(PrunedSession(key, row["title"], int((now - row["closed_at"]) // DAY_MS),
                                   evidence, run))
    return PruneReport(older_than_days, dry_run, tuple(found))


def summary_lines(report: PruneReport) -> list[str]:
    verb = "would remove" if report.dry_run else "removed"
    lines = [f"{verb}: “{s.frame_title}” session {s.session_key} (closed {s.closed_days_ago} "
             f"days ago, {_size(s.evidence_bytes + s.run_bytes)})" for s in report.sessions]
    if not report.sessions:
        lines.append(f"nothing to prune: no closed frame's evidence is older than "
                     f"{report.older_than_days} days")
    else:
        lines.append(f"{verb} {len(report.sessions)} session(s), "
                     f"{_size(report.total_bytes)}" +
                     (" (dry run: nothing was removed)" if report.dry_run else ""))
    return lines


def _size(count: int) -> str:
    if count < 1024:
        return f"{count} B"
    if count < 1024 * 1024:
        return f"{count / 1024:.1f} KB"
    return f"{count / (1024 * 1024):.1f} MB"
