"""Build HostState v1 and NavigatorState v1 from the registry.

Core authors every presentation field (title, breadcrumb, activity,
attention, transition/control state) so frontends never re-derive them. Each
table is read once per build, HostState's in one read transaction; arrays are
ordered by host id then entity id.
"""

from __future__ import annotations

import dataclasses
import gc
import sqlite3
from collections import deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from itertools import repeat
from operator import itemgetter
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from core.model.enums import ActivationState, Activity, ActivityReason, Reachability
from core.model.text import shown
from core.providers.checks import (
    STALE_WORKING_AFTER_MS,
    effective_activity,
)
from core.state.remotes import CACHED_HOSTS_SQL, configured_hosts, hosts_from_rows
from core.state.state_types import (
    MAX_EXTRA_PANES,
    BreadcrumbItem,
    ExtraPaneSummary,
    FrameSummary,
    HostCheckout,
    HostControlTurn,
    HostFrame,
    HostFrameSession,
    HostInfo,
    HostPlacement,
    HostProject,
    HostProjectRepository,
    HostRecovery,
    HostRepository,
    HostRow,
    HostSession,
    HostState,
    HostSurface,
    HostTransition,
    HostView,
    HostWorkContext,
    NavigatorState,
    ProjectRow,
    RecoveryRow,
    SessionSummary,
    ViewRow,
)

if TYPE_CHECKING:
    from core.context.reader import RegistryReader
    from core.state.remotes import CachedHost

_R = TypeVar("_R")


class _Sorted(Protocol):
    """A navigator row: every one sorts by its own ``sort_key``."""

    def sort_key(self) -> tuple[str, ...]: ...

NONTERMINAL = ("prepared", "executing", "presented", "awaiting_claim", "settling")


def _rows(conn: sqlite3.Connection, sql: str) -> list[sqlite3.Row]:
    return conn.execute(sql).fetchall()


@cache
def _select(cls: type, source: str, columns: tuple[tuple[str, str], ...]
            ) -> tuple[str, tuple[str, ...]]:
    """The SELECT that reads one column per field of ``cls``, and the field names."""
    names = tuple(f.name for f in dataclasses.fields(cls))
    exprs = dict(columns)
    return f"SELECT {', '.join(exprs.get(n, n) for n in names)} FROM {source}", names


def _tuples(conn: sqlite3.Connection, sql: str) -> list[tuple]:
    cursor = conn.cursor()
    cursor.row_factory = None
    return cursor.execute(sql).fetchall()


def _rows_as(conn: sqlite3.Connection, cls: type[_R], source: str, order: tuple[str, ...],
             columns: dict[str, str] | None = None) -> tuple[_R, ...]:
    """Rows of ``source`` as ``cls`` records, one SELECT with one column per field.

    Records are filled straight from tuple rows by C-level ``map`` (no
    sqlite3.Row, no per-field keyword init, no Python loop per row): at 1,000
    frames and 5,000 sessions this conversion is a third of the build, the
    SELECTs the rest. Values are stored as read (enum fields hold the stored
    string; ``EnumKind.dump`` checks it on encode, and decode validates).
    """
    # A class is hashable; mypy does not see it through @cache (python/mypy#11470).
    sql, names = _select(cls, source, tuple((columns or {}).items()))  # type: ignore[arg-type]
    rows = _tuples(conn, sql)
    rows.sort(key=itemgetter(*(names.index(name) for name in order)))
    records = tuple(map(object.__new__, repeat(cls, len(rows))))
    # fill each record's __dict__ from its row; deque(maxlen=0) only drains the map
    deque(map(dict.update, map(vars, records), map(zip, repeat(names), rows)), maxlen=0)
    return records


_SESSION_SQL = (
    "SELECT session_key, provider, provider_session_id, project_id, checkout_id, name,"
    " pinned, runtime_presence, resumability, activity, activity_reason,"
    " last_observed_at, updated_at FROM provider_sessions")


def _sessions(conn: sqlite3.Connection, now: int) -> tuple[HostSession, ...]:
    """Sessions with stale working aged to unknown (``effective_activity``) and pinned a bool.

    The hottest table gets its own loop so both fix-ups happen while the record
    is built; a SQL CASE per row and a second pass cost more than the loop.
    """
    rows = _tuples(conn, _SESSION_SQL)
    rows.sort(key=itemgetter(0))
    new = object.__new__
    records: list[HostSession] = []
    append = records.append
    for (session_key, provider, provider_session_id, project_id, checkout_id, name, pinned,
         runtime_presence, resumability, activity, activity_reason, last_observed_at,
         updated_at) in rows:
        if activity == "working" and effective_activity(
                activity, last_observed_at, now, STALE_WORKING_AFTER_MS) != activity:
            activity = activity_reason = "unknown"
        record = new(HostSession)
        record.__dict__.update({
            "session_key": session_key, "provider": provider,
            "provider_session_id": provider_session_id, "project_id": project_id,
            "checkout_id": checkout_id, "name": name, "pinned": pinned != 0,
            "runtime_presence": runtime_presence, "resumability": resumability,
            "activity": activity, "activity_reason": activity_reason,
            "last_observed_at": last_observed_at, "updated_at": updated_at})
        append(record)
    return tuple(records)


@contextmanager
def _snapshot(conn: sqlite3.Connection) -> Iterator[None]:
    """One read transaction, so every array comes from the same commit.

    Autocommit would give each SELECT its own snapshot, and a writer landing
    between two of them could leave a row naming one the envelope lacks. In
    WAL a reader never blocks writers. Inside a caller's transaction, use it.
    """
    if conn.in_transaction:
        yield
        return
    conn.execute("BEGIN")
    try:
        yield
    finally:
        conn.execute("COMMIT")


@contextmanager
def _gc_paused() -> Iterator[None]:
    """No cyclic collections while the build allocates ~30k rows and records (none cyclic).

    At 1,000 frames / 5,000 sessions the collector would run ~50 young and,
    every few builds, a full collection mid-build: ~5 ms of the median and
    most of the p95. Reference counting still frees everything; a caller that
    keeps allocating pays one young collection afterwards instead.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def build_host_state(engine: RegistryReader) -> HostState:
    conn = engine.conn
    with _gc_paused(), _snapshot(conn):
        return _host_state(engine, conn)


def _host_state(engine: RegistryReader, conn: sqlite3.Connection) -> HostState:
    now = engine.now()
    meta = conn.execute("SELECT activation_state FROM registry_metadata").fetchone()
    checkout_repo = {c.checkout_id: c.repository_id for c in engine.config.checkouts}
    preferred = {p.project_id: p.preferred_provider for p in engine.config.projects}
    projects = tuple(
        HostProject(project_id=r["project_id"], name=r["name"], checkout_id=r["checkout_id"],
                    preferred_provider=preferred.get(r["project_id"]))
        for r in _rows(conn, "SELECT * FROM projects ORDER BY host_id, project_id"))
    checkouts = tuple(
        HostCheckout(checkout_id=r["checkout_id"],
                     repository_id=r["repository_id"] or checkout_repo.get(r["checkout_id"]))
        for r in _rows(conn, "SELECT * FROM checkouts ORDER BY host_id, checkout_id"))
    return HostState(
        generation_id=engine.generation_id,
        activation_state=ActivationState(meta["activation_state"]),
        generated_at=now,
        host=HostInfo(host_id=engine.host_id, display_name=engine.config.host.display_name),
        projects=projects,
        repositories=_rows_as(conn, HostRepository,
                              "repositories", ("repository_id",)),
        project_repositories=_rows_as(conn, HostProjectRepository,
                                      "project_repositories",
                                      ("project_id", "repository_id")),
        checkouts=checkouts,
        work_contexts=_rows_as(conn, HostWorkContext,
                               "work_contexts", ("work_context_id",)),
        frames=_rows_as(conn, HostFrame, "frames", ("frame_id",)),
        frame_sessions=_rows_as(conn, HostFrameSession,
                                "frame_sessions", ("frame_session_id",)),
        sessions=_sessions(conn, now),
        surfaces=_rows_as(conn, HostSurface, "surfaces", ("surface_id",)),
        views=_rows_as(conn, HostView, "user_views", ("view_id",)),
        placements=_rows_as(conn, HostPlacement,
                            "frame_placements", ("placement_id",)),
        transitions=_rows_as(conn, HostTransition,
                             "view_transitions", ("transition_id",)),
        control_turns=_rows_as(conn, HostControlTurn,
                               "control_turns WHERE target_session_key IS NOT NULL",
                               ("control_turn_id",)),
        recoveries=_rows_as(conn, HostRecovery, "recoveries", ("recovery_id",),
                            {"explanation": "bounded_explanation"}),
    )


def read_navigator_rows(conn: sqlite3.Connection) -> NavigatorRows:
    """Every navigator read, on ``conn``, in one snapshot."""
    with _snapshot(conn):
        return rows_from({name: (_tuples(conn, sql) if name in TUPLE_READS
                                 else [dict(row) for row in _rows(conn, sql)])
                          for name, sql in NAVIGATOR_READS})


def rows_from(read: Mapping[str, Sequence[Any]]) -> NavigatorRows:
    """The rows of each named read (``NAVIGATOR_READS``), whoever ran them."""
    return NavigatorRows(frames=read["frames"], pending=read["pending"],
                         projects=read["projects"], views=read["views"],
                         recoveries=read["recoveries"], remote_hosts=read["remote_hosts"],
                         extra_panes=read.get("extra_panes", ()))


def build_navigator_state(engine: RegistryReader, *, include_closed: bool = True) -> NavigatorState:
    """The frontend envelope: presentation-ready views, project trees, recoveries."""
    return assemble_navigator_state(engine, read_navigator_rows(engine.conn),
                                    include_closed=include_closed)


def assemble_navigator_state(engine: RegistryReader, rows: NavigatorRows, *,
                             include_closed: bool = True) -> NavigatorState:
    """The envelope from the rows of ``NAVIGATOR_READS`` (no SQL here)."""
    host_id = engine.host_id
    now = engine.now()
    frames = _navigator_frames(rows.frames, now)
    subagents = _live_subagents(engine, frames.values())
    pending = {r["view_id"]: r for r in rows.pending}
    extras = _extra_panes_by_frame(rows.extra_panes)
    by_project: dict[str, list[FrameSummary]] = {}
    for frame_id, f in frames.items():  # keyed by frame id: one read fewer per frame
        if not include_closed and f["lifecycle_state"] == "closed":
            continue
        summary = None
        if f["provider"] is not None:
            summary = SessionSummary(provider=f["provider"],
                                     runtime_presence=f["runtime_presence"],
                                     resumability=f["resumability"], activity=f["activity"],
                                     updated_at=f["s_updated"],
                                     activity_reason=_limit_reason(f),
                                     subagents=subagents.get(f["current_session_key"]))
        by_project.setdefault(f["project_id"], []).append(FrameSummary(
            frame_id=frame_id, title=shown(f["title"]), role=f["role"],
            parent_frame_id=f["parent_frame_id"], lifecycle_state=f["lifecycle_state"],
            close_reason=f["close_reason"], activity=f["activity"] or Activity.UNKNOWN,
            current_session=summary, session_count=f["n_sessions"],
            extra_panes=extras.get(frame_id)))
    projects = [
        ProjectRow(project_id=r["project_id"], host_id=r["host_id"], name=r["name"],
                   frames=tuple(by_project.get(r["project_id"], ())))
        for r in rows.projects]
    # Configured but never entered: listed so a person can enter it (no rows exist yet).
    known = {p.project_id for p in projects}
    projects.extend(ProjectRow(project_id=p.project_id, host_id=host_id, name=p.name)
                    for p in engine.config.projects if p.project_id not in known)
    sorted_projects = tuple(sorted(projects, key=_sort_key))
    open_by_project = _open_frames_by_project(frames.values())
    views = []
    for v in rows.views:
        active = frames.get(v["active_frame_id"])
        crumbs: list[BreadcrumbItem] = []
        cursor = active
        while cursor is not None and len(crumbs) < 32:
            crumbs.append(BreadcrumbItem(frame_id=cursor["frame_id"],
                                        title=shown(cursor["title"])))
            cursor = frames.get(cursor["parent_frame_id"])
        crumbs.reverse()
        needs_input, last = (open_by_project.get(active["project_id"], _NO_OPEN_FRAMES)
                             if active is not None else _NO_OPEN_FRAMES)
        activity = active["activity"] if active is not None and active["activity"] \
            else Activity.UNKNOWN
        flight = pending.get(v["view_id"])
        views.append(ViewRow(
            view_id=v["view_id"], host_id=v["host_id"], mode=v["mode"], state=v["state"],
            revision=v["revision"], active_frame_id=v["active_frame_id"],
            active_project_id=active["project_id"] if active is not None else v["project_id"],
            title=shown(active["title"]) if active is not None else "(empty view)",
            breadcrumb=tuple(crumbs), activity=activity,
            attention=needs_input or v["state"] == "degraded",
            transition_state=flight["state"] if flight else None,
            control_state=flight["control_state"] if flight else None,
            last_activity_at=last))
    recoveries = tuple(
        RecoveryRow(recovery_id=r["recovery_id"], host_id=r["host_id"], kind=r["kind"],
                    subject_type=r["subject_type"], subject_id=r["subject_id"],
                    actionability=r["actionability"], state=r["state"],
                    explanation=shown(r["bounded_explanation"]), created_at=r["created_at"])
        for r in rows.recoveries)
    hosts = [HostRow(host_id=host_id, display_name=engine.config.host.display_name,
                     generation_id=engine.generation_id, stale=False,
                     reachability=Reachability.ONLINE, observed_at=now)]
    all_views, all_projects, all_recoveries = (list(views), list(sorted_projects),
                                               list(recoveries))
    for cached in configured_hosts(hosts_from_rows(rows.remote_hosts), engine.config.remotes,
                                   host_id):
        host_row, r_views, r_projects, r_recoveries = _remote_rows(cached, now)
        hosts.append(host_row)
        all_views.extend(r_views)
        all_projects.extend(r_projects)
        all_recoveries.extend(r_recoveries)
    return NavigatorState(generation_id=engine.generation_id, generated_at=now,
                          local_host_id=host_id, hosts=tuple(sorted(hosts, key=_sort_key)),
                          views=tuple(sorted(all_views, key=_sort_key)),
                          projects=tuple(sorted(all_projects, key=_sort_key)),
                          recoveries=tuple(sorted(all_recoveries, key=_sort_key)))


def _live_subagents(engine: RegistryReader, frames: Iterable[Mapping[str, Any]]
                    ) -> dict[str, int]:
    """Running subagents of the frames' live sessions, from their evidence files (read
    again only when changed); none without a home (a bare engine has no files)."""
    home = getattr(engine, "home", None)
    if home is None:
        return {}
    live = [f["current_session_key"] for f in frames
            if f["current_session_key"] and f["runtime_presence"] == "live"]
    if not live:
        return {}
    from core.evidence.subagents import running_counts

    return running_counts(home.root, live)


_FRAME_COLUMNS = ("frame_id", "project_id", "title", "role", "parent_frame_id",
                  "lifecycle_state", "close_reason", "current_session_key", "provider",
                  "runtime_presence", "resumability", "activity", "s_updated",
                  "last_observed_at", "n_sessions", "activity_reason")
_FRAME_SQL = (
    "SELECT f.frame_id, f.project_id, f.title, f.role, f.parent_frame_id,"
    " f.lifecycle_state, f.close_reason, f.current_session_key,"
    " s.provider, s.runtime_presence, s.resumability, s.activity, s.updated_at AS s_updated,"
    " s.last_observed_at,"
    " (SELECT COUNT(*) FROM frame_sessions fs WHERE fs.frame_id = f.frame_id) AS n_sessions,"
    " s.activity_reason"
    " FROM frames f LEFT JOIN provider_sessions s ON s.session_key = f.current_session_key"
    " ORDER BY f.host_id, f.frame_id")
#: The record type of one frame row (a seam: tests count the builder's reads through it).
_FrameRecord: type[dict[str, Any]] = dict
_ACTIVITY = _FRAME_COLUMNS.index("activity")
_OBSERVED = _FRAME_COLUMNS.index("last_observed_at")

_PENDING_SQL = (
    "SELECT t.view_id, t.state, c.state AS control_state FROM view_transitions t"
    " LEFT JOIN control_turns c ON c.transition_id = t.transition_id"
    f" WHERE t.state IN {NONTERMINAL}")
_PROJECTS_SQL = "SELECT * FROM projects ORDER BY host_id, project_id"
_VIEWS_SQL = "SELECT * FROM user_views ORDER BY host_id, view_id"
_EXTRA_PANES_SQL = ("SELECT extra_pane_id, frame_id, command FROM extra_panes"
                    " ORDER BY frame_id, extra_pane_id")
_OPEN_RECOVERIES_SQL = ("SELECT * FROM recoveries WHERE state = 'open'"
                        " ORDER BY host_id, recovery_id")


@dataclass(frozen=True)
class NavigatorRows:
    """The rows one navigator state is assembled from, read in one snapshot: frames as
    tuples in ``_FRAME_COLUMNS`` order, the rest as mappings by column name."""

    frames: Sequence[Sequence[Any]]
    pending: Sequence[Mapping[str, Any]]
    projects: Sequence[Mapping[str, Any]]
    views: Sequence[Mapping[str, Any]]
    recoveries: Sequence[Mapping[str, Any]]
    remote_hosts: Sequence[Mapping[str, Any]]
    extra_panes: Sequence[Mapping[str, Any]] = ()


NAVIGATOR_READS: tuple[tuple[str, str], ...] = (
    ("frames", _FRAME_SQL), ("pending", _PENDING_SQL), ("projects", _PROJECTS_SQL),
    ("views", _VIEWS_SQL), ("recoveries", _OPEN_RECOVERIES_SQL),
    ("remote_hosts", CACHED_HOSTS_SQL), ("extra_panes", _EXTRA_PANES_SQL))
"""The named reads of a navigator state, in order: the CLI runs them on its sqlite3
connection (``read_navigator_rows``), a navigator awaits them through aiosqlite
(``core.state.async_reads``); both assemble with ``assemble_navigator_state``."""
TUPLE_READS = frozenset({"frames"})
"""Reads kept as plain tuples: the hottest table, zipped into dicts (see ``_navigator_frames``)."""


def _extra_panes_by_frame(rows: Iterable[Mapping[str, Any]]
                          ) -> dict[str, tuple[ExtraPaneSummary, ...]]:
    """The extra panes under each frame (``core.reconcile.foreign`` records them), at most
    ``MAX_EXTRA_PANES`` each; the command is shown as one printable line."""
    by_frame: dict[str, list[ExtraPaneSummary]] = {}
    for row in rows:
        listed = by_frame.setdefault(row["frame_id"], [])
        if len(listed) < MAX_EXTRA_PANES:
            listed.append(ExtraPaneSummary(extra_pane_id=row["extra_pane_id"],
                                           command=shown(row["command"])[:64]))
    return {frame_id: tuple(panes) for frame_id, panes in by_frame.items()}


def _limit_reason(frame: Mapping[str, Any]) -> ActivityReason | None:
    """Only the reason a badge shows (a limit), so other reasons change no envelope."""
    if frame["activity"] == "needs_input" and frame["activity_reason"] == "usage_limit":
        return ActivityReason.USAGE_LIMIT
    return None


def _navigator_frames(rows: Iterable[Sequence[Any]], now: int) -> dict[str, dict[str, Any]]:
    """Every frame joined with its current session, activity aged as
    ``effective_session`` does, keyed by frame id in id order.

    Tuple rows zipped into dicts: every navigator builds this on each registry
    change, and a ``sqlite3.Row`` per frame through ``effective_session`` was a
    third of the build at 200 frames.
    """
    frames: dict[str, dict[str, Any]] = {}
    for row in rows:
        frame = _FrameRecord(zip(_FRAME_COLUMNS, row, strict=True))
        if row[_ACTIVITY] == "working" and effective_activity(
                "working", row[_OBSERVED], now, STALE_WORKING_AFTER_MS) != "working":
            frame["activity"] = Activity.UNKNOWN.value
        frames[row[0]] = frame
    return frames


STALE_AFTER_MS = 5 * 60 * 1000

#: A project without open frames: no attention, no last activity.
_NO_OPEN_FRAMES: tuple[bool, int | None] = (False, None)


def _open_frames_by_project(frames: Iterable[Mapping[str, Any]]
                            ) -> dict[str, tuple[bool, int | None]]:
    """Per project, whether an open frame needs input and its latest observation.

    One pass over the frames, so the views loop looks its project up instead of
    scanning every frame per view: 20 navigators each build this envelope on
    every hook, and O(views x frames) was a third of a busy navigator's CPU.
    """
    needs: dict[str, bool] = {}
    latest: dict[str, int] = {}
    for f in frames:
        if f["lifecycle_state"] != "open":
            continue
        project = f["project_id"]
        needs[project] = needs.get(project, False) or f["activity"] == "needs_input"
        latest[project] = max(latest.get(project, 0), f["last_observed_at"] or 0)
    return {project: (needs[project], latest[project] or None) for project in needs}


def _sort_key(row: _Sorted) -> tuple[str, ...]:
    return row.sort_key()


def _remote_rows(cached: CachedHost, now: int
                 ) -> tuple[HostRow, list[ViewRow], list[ProjectRow], list[RecoveryRow]]:
    """Project a cached remote HostState into navigator rows (read-only evidence)."""
    state = cached.state
    host_id = state.host.host_id
    sessions = {s.session_key: s for s in state.sessions}
    counts: dict[str, int] = {}
    for membership in state.frame_sessions:
        counts[membership.frame_id] = counts.get(membership.frame_id, 0) + 1
    frames = {f.frame_id: f for f in state.frames}
    by_project: dict[str, list[FrameSummary]] = {}
    for f in state.frames:
        session = sessions.get(f.current_session_key) if f.current_session_key else None
        summary = None if session is None else SessionSummary(
            provider=session.provider, runtime_presence=session.runtime_presence,
            resumability=session.resumability, activity=session.activity,
            updated_at=session.updated_at,
            activity_reason=ActivityReason.USAGE_LIMIT
            if session.activity_reason is ActivityReason.USAGE_LIMIT else None)
        by_project.setdefault(f.project_id, []).append(FrameSummary(
            frame_id=f.frame_id, title=shown(f.title), role=f.role,
            parent_frame_id=f.parent_frame_id,
            lifecycle_state=f.lifecycle_state, close_reason=f.close_reason,
            activity=session.activity if session else Activity.UNKNOWN,
            current_session=summary, session_count=counts.get(f.frame_id, 0)))
    projects = [ProjectRow(project_id=p.project_id, host_id=host_id, name=p.name,
                           frames=tuple(by_project.get(p.project_id, ())))
                for p in state.projects]
    views = []
    for v in state.views:
        active = frames.get(v.active_frame_id) if v.active_frame_id else None
        crumbs: list[BreadcrumbItem] = []
        cursor = active
        while cursor is not None and len(crumbs) < 32:
            crumbs.append(BreadcrumbItem(frame_id=cursor.frame_id, title=shown(cursor.title)))
            cursor = frames.get(cursor.parent_frame_id) if cursor.parent_frame_id else None
        crumbs.reverse()
        session = sessions.get(active.current_session_key) \
            if active is not None and active.current_session_key else None
        views.append(ViewRow(
            view_id=v.view_id, host_id=host_id, mode=v.mode, state=v.state,
            revision=v.revision, active_frame_id=v.active_frame_id,
            active_project_id=active.project_id if active is not None else None,
            title=shown(active.title) if active is not None else "(empty view)",
            breadcrumb=tuple(crumbs),
            activity=session.activity if session else Activity.UNKNOWN,
            attention=session is not None and session.activity == "needs_input",
            last_activity_at=session.last_observed_at if session else None))
    recoveries = [RecoveryRow(recovery_id=r.recovery_id, host_id=host_id, kind=r.kind,
                              subject_type=r.subject_type, subject_id=r.subject_id,
                              actionability=r.actionability, state=r.state,
                              explanation=shown(r.explanation), created_at=r.created_at)
                  for r in state.recoveries if r.state == "open"]
    stale = cached.reachability != "online" or now - cached.observed_at > STALE_AFTER_MS
    host_row = HostRow(host_id=host_id, display_name=state.host.display_name,
                       generation_id=state.generation_id, stale=stale,
                       reachability=Reachability(cached.reachability),
                       observed_at=cached.observed_at)
    return host_row, views, projects, recoveries


__all__ = ["build_host_state", "build_navigator_state"]
