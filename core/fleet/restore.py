"""`switchboard restore`: the fleet back after every tmux server is gone (reboot, kill-server).

What a person would otherwise do view by view, through the same engine requests:

1. **Read the plan first.** Every view that was open (not retired, a window
   recorded) whose window is on a server that no longer answers, with the mode
   and zoom the registry holds for it. Read before anything runs, because
   rebuilding one view reconciles the others and reconcile commits the zoom tmux
   shows (a rebuilt window is unzoomed).
2. **Reopen each view** with ``Engine.project_enter`` (the explicit entry
   rebuilds a view whose server restarted: its ``server_restarted`` recovery
   runs), so the window, placeholder and navigator are exactly what `switchboard
   open` builds.
3. **Resume each agent that was live.** Reconcile opened a ``server_restarted``
   recovery for every agent pane the old server took with it; those (still open)
   are the agents to resume. Each is started with ``Engine.frame_start``, which
   resumes the frame's session by its exact id; a session that cannot be resumed
   by exact id is not started at all (a start would open a new session), so no
   duplicate session ever comes from a restore. Parked agents start first, the
   view's main agent last, then the view is focused on the frame it showed: every
   agent ends where it was, main or parked.
4. **Mode and zoom** as read in step 1 (``Engine.view_mode``, ``core.fleet.zoom``).

An agent that cannot be resumed keeps its recovery open, its sentence rewritten
to say why (``storage.operations.fleet``); `n` on the frame, or a later restore
once the cause is fixed, runs it and closes the recovery.

One restore at a time per home: ``restore_fleet`` holds an ``flock`` on
``run/restore.lock`` for the whole run. A second restore started meanwhile (two
terminals, bare `switchboard` typed twice) waits for the first, up to
``RESTORE_WAIT_S``, and only then reads its plan, so it finds the fleet the first
one rebuilt and changes nothing. Run side by side, the two would each rebuild and
resume the same views and agents: a different frame ended in main and a false
"could not resume" recovery stayed open for a live agent (issue 37.7).

Idempotent by construction: a second run finds every view on the live server and
no open ``server_restarted`` agent recovery, so it changes nothing and types
nothing (a restore never types into an agent: a resumed agent gets no prompt).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import TYPE_CHECKING

from core.model.enums import (
    FrameLifecycle,
    PlacementState,
    RecoveryKind,
    RecoveryState,
    ViewMode,
)
from core.model.errors import SwitchboardError
from core.model.files import PRIVATE_FILE_MODE, own_dir
from storage.connection import write_transaction
from storage.operations import fleet as fleet_ops
from storage.operations import servers as servers_ops
from storage.operations import views as views_ops

if TYPE_CHECKING:
    from core.config.home import Home
    from core.engine.engine import Engine

RESTORE_LOCK = "restore.lock"
"""In the home's run folder: held (``flock``) by the one restore running; it names its pid."""
RESTORE_WAIT_S = 300.0
"""How long a second restore waits for the first. A restore resumes agents one after
another (a few seconds each), so a large fleet takes minutes, not hours."""
_LOCK_POLL_S = 0.1


class RestoreRunning(SwitchboardError):
    """Another restore of this home held the lock for longer than the wait; nothing ran."""

    code = "restore_running"


class ViewOutcome(StrEnum):
    REBUILT = "rebuilt"
    """The view's window was built again on the running server."""
    OPEN = "open"
    """The view's window was on the running server already; left as it is."""
    FAILED = "failed"
    """The rebuild was refused; its server_restarted recovery says what to do."""


class AgentOutcome(StrEnum):
    RESUMED = "resumed"
    """Started again on its own session, by exact id, where it was."""
    FAILED = "failed"
    """Not started; its recovery says why."""


class Place(StrEnum):
    MAIN = "main"
    PARKED = "parked"


@dataclass(frozen=True)
class ViewReport:
    project: str
    view_id: str
    outcome: ViewOutcome
    mode: ViewMode
    zoomed: bool
    detail: str = ""


@dataclass(frozen=True)
class AgentReport:
    project: str
    frame_id: str
    title: str
    place: Place
    session_key: str
    outcome: AgentOutcome
    detail: str = ""
    launch_id: str | None = None


@dataclass(frozen=True)
class RestoreReport:
    views: tuple[ViewReport, ...]
    agents: tuple[AgentReport, ...]
    waited: bool = False
    """Another restore of this home was running: this one waited for it to end, then
    read the fleet afresh (so it finds the views and agents that one brought back)."""

    @property
    def changed(self) -> bool:
        """Whether this run rebuilt or resumed anything (a second run: False)."""
        return any(v.outcome is ViewOutcome.REBUILT for v in self.views) or \
            any(a.outcome is AgentOutcome.RESUMED for a in self.agents)

    @property
    def failed(self) -> bool:
        return any(v.outcome is ViewOutcome.FAILED for v in self.views) or \
            any(a.outcome is AgentOutcome.FAILED for a in self.agents)


@dataclass(frozen=True)
class _ViewPlan:
    view_id: str
    project_id: str
    mode: ViewMode
    zoomed: bool
    stale: bool
    """Recorded on a server that no longer answers (or another one answers)."""


@dataclass(frozen=True)
class _Lost:
    """An agent the old server took down: its frame and the recoveries that say so."""

    frame_id: str
    view_id: str
    recovery_ids: tuple[str, ...]


# --------------------------------------------------------------------------- reading


def stale_views(engine: Engine) -> list[str]:
    """Ids of the views that were open but whose tmux server is gone (bare `switchboard`
    restores the fleet when this is not empty). One tmux process; never starts a server."""
    return [plan.view_id for plan in _view_plans(engine) if plan.stale]


def _live_server_id(engine: Engine) -> str | None:
    snap = engine.require_stage().snapshot()
    if snap is None:
        return None
    identity = snap.identity
    return servers_ops.tmux_server_id_of(
        engine.conn, socket_path=identity.socket_path, server_pid=identity.server_pid,
        server_start_time=identity.server_start_time)


def _view_plans(engine: Engine) -> list[_ViewPlan]:
    live = _live_server_id(engine)
    return [_ViewPlan(row["view_id"], row["project_id"], ViewMode(row["mode"]),
                      bool(row["zoomed"]), live is None or row["tmux_server_id"] != live)
            for row in engine.conn.execute(
                "SELECT view_id, project_id, mode, zoomed, tmux_server_id FROM user_views"
                " WHERE host_id = ? AND state <> 'retired' AND tmux_window_id IS NOT NULL"
                " AND project_id IS NOT NULL ORDER BY created_at, view_id",
                (engine.host_id,))]


def _lost_agents(conn: sqlite3.Connection) -> list[_Lost]:
    """Open frames whose agent pane a restarted server took (an open server_restarted
    recovery about one of its surfaces), in their view's order."""
    found: dict[str, tuple[str, list[str]]] = {}
    for row in conn.execute(
            "SELECT r.recovery_id, l.frame_id, p.view_id FROM recoveries r"
            " JOIN surfaces s ON s.surface_id = r.subject_id"
            " JOIN launch_intents l ON l.launch_id = s.launch_id"
            " JOIN frames f ON f.frame_id = l.frame_id"
            " JOIN frame_placements p ON p.frame_id = f.frame_id AND p.state <> 'orphaned'"
            " JOIN user_views v ON v.view_id = p.view_id AND v.state <> 'retired'"
            " WHERE r.kind = ? AND r.subject_type = 'surface' AND r.state = 'open'"
            " AND f.lifecycle_state = ? ORDER BY f.depth, f.created_at, r.created_at",
            (RecoveryKind.SERVER_RESTARTED.value, FrameLifecycle.OPEN.value)):
        entry = found.setdefault(row["frame_id"], (row["view_id"], []))
        entry[1].append(row["recovery_id"])
    return [_Lost(frame, view, tuple(ids)) for frame, (view, ids) in found.items()]


def _project_name(engine: Engine, project_id: str) -> str:
    try:
        return engine.config.project(project_id).name
    except SwitchboardError:
        return project_id


# --------------------------------------------------------------------------- restoring


@contextlib.contextmanager
def one_restore(home: Home, *, wait_s: float = RESTORE_WAIT_S,
                on_wait: Callable[[], None] | None = None) -> Iterator[bool]:
    """Hold this home's restore lock for the block; yields whether it had to wait.

    ``on_wait`` is called once when another restore holds the lock (the command says
    so on stderr). Still held after ``wait_s``: ``RestoreRunning``, nothing done. The
    lock is an ``flock``: a restore that dies lets go at once, no stale lock file."""
    path = own_dir(home.run_dir) / RESTORE_LOCK
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW,
                 PRIVATE_FILE_MODE)
    try:
        waited = False
        deadline = time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if not waited and on_wait is not None:
                    on_wait()
                waited = True
                if time.monotonic() >= deadline:
                    raise RestoreRunning(
                        f"another `switchboard restore` of this home (pid {_holder(fd)}) "
                        f"is still running after {wait_s:.0f} s; let it finish, then run "
                        "`switchboard restore` again if anything is left (nothing was "
                        "changed)") from None
                time.sleep(_LOCK_POLL_S)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        try:
            yield waited
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _holder(fd: int) -> str:
    """The pid the running restore wrote in the lock file ("unknown" when unreadable)."""
    text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    return text if text.isdigit() else "unknown"


def restore_fleet(engine: Engine, request_id: str, *, wait_s: float = RESTORE_WAIT_S,
                  on_wait: Callable[[], None] | None = None) -> RestoreReport:
    """Reopen every view that was open and resume every agent that was live (module doc),
    one restore per home at a time (``one_restore``); the plan is read once the lock is
    held, never before."""
    with one_restore(engine.require_home(), wait_s=wait_s, on_wait=on_wait) as waited:
        report = _restore_fleet(engine, request_id)
    return replace(report, waited=waited)


def _restore_fleet(engine: Engine, request_id: str) -> RestoreReport:
    plans = _view_plans(engine)
    view_reports = [_reopen(engine, request_id, plan) for plan in plans]
    if not any(plan.stale for plan in plans):
        # Nothing to rebuild, but an agent pane may have been lost since the last
        # reading (a reconcile records it): one pass, no server started for it.
        from core.reconcile.reconcile import reconcile

        if engine.require_stage().snapshot() is not None:
            reconcile(engine)
    failed_views = {v.view_id: v.detail for v in view_reports if v.outcome is ViewOutcome.FAILED}
    lost = _lost_agents(engine.conn)
    agents: list[AgentReport] = []
    for plan in plans:
        in_view = [agent for agent in lost if agent.view_id == plan.view_id]
        if not in_view:
            continue
        if plan.view_id in failed_views:
            agents += [_refuse(engine, agent, _project_name(engine, plan.project_id),
                               f"its view could not be rebuilt ({failed_views[plan.view_id]})")
                       for agent in in_view]
            continue
        agents += _resume_view(engine, request_id, plan, in_view)
    for plan in plans:
        if plan.stale and plan.view_id not in failed_views:
            _restore_mode_and_zoom(engine, request_id, plan)
    return RestoreReport(tuple(view_reports), tuple(agents))


def _reopen(engine: Engine, request_id: str, plan: _ViewPlan) -> ViewReport:
    project = _project_name(engine, plan.project_id)
    if not plan.stale:
        return ViewReport(project, plan.view_id, ViewOutcome.OPEN, plan.mode, plan.zoomed)
    try:
        engine.project_enter(f"{request_id}:enter:{plan.view_id}", plan.project_id)
    except SwitchboardError as exc:
        return ViewReport(project, plan.view_id, ViewOutcome.FAILED, plan.mode, plan.zoomed,
                          exc.message)
    return ViewReport(project, plan.view_id, ViewOutcome.REBUILT, plan.mode, plan.zoomed)


def _resume_view(engine: Engine, request_id: str, plan: _ViewPlan,
                 lost: list[_Lost]) -> list[AgentReport]:
    """Parked agents first, main's last, then the view shows the frame it showed."""
    project = _project_name(engine, plan.project_id)
    shown = views_ops.get_view(engine.conn, plan.view_id)["active_frame_id"]
    ordered = sorted(lost, key=lambda agent: agent.frame_id == shown)
    reports = [_resume(engine, request_id, project, agent,
                       Place.MAIN if agent.frame_id == shown else Place.PARKED)
               for agent in ordered]
    if shown is not None and \
            views_ops.get_view(engine.conn, plan.view_id)["active_frame_id"] != shown:
        try:
            engine.view_focus(f"{request_id}:back:{plan.view_id}", plan.view_id, shown)
        except SwitchboardError as exc:
            reports = [_with_detail(r, f"the view could not show its main frame again: "
                                       f"{exc.message}") for r in reports]
    return reports


def _resume(engine: Engine, request_id: str, project: str, agent: _Lost,
            place: Place) -> AgentReport:
    frame = engine.conn.execute("SELECT title, current_session_key FROM frames"
                                " WHERE frame_id = ?", (agent.frame_id,)).fetchone()
    key = frame["current_session_key"] or ""
    why = _not_resumable(engine.conn, agent.frame_id, key)
    if why is not None:
        return _refuse(engine, agent, project, why, place=place)
    try:
        started = engine.frame_start(f"{request_id}:start:{agent.frame_id}", agent.frame_id)
    except SwitchboardError as exc:
        return _refuse(engine, agent, project, exc.message, place=place)
    launch = engine.conn.execute("SELECT action, state, target_session_key FROM launch_intents"
                                 " WHERE launch_id = ?", (started.launch_id,)).fetchone()
    if launch["state"] not in ("started", "bound") or launch["action"] != "resume" or \
            started.session_key != key:
        return _refuse(engine, agent, project, f"the launch ended {launch['state']} "
                       f"({launch['action']} of {started.session_key})", place=place)
    return AgentReport(project, agent.frame_id, frame["title"], place, key,
                       AgentOutcome.RESUMED, launch_id=started.launch_id)


def _not_resumable(conn: sqlite3.Connection, frame_id: str, key: str) -> str | None:
    """Why the frame's session cannot be resumed by exact id (a start would open a new
    one), or None. A frame that runs again already has nothing to resume."""
    if not key:
        return "the frame has no session to resume"
    session = conn.execute("SELECT provider_session_id, runtime_presence, resumability"
                           " FROM provider_sessions WHERE session_key = ?", (key,)).fetchone()
    if session is None:
        return f"its session {key} is not in the registry"
    if session["provider_session_id"].startswith("pending-"):
        return ("its agent never reported its session id (no first hook arrived), so it "
                "cannot be resumed by exact id; press n on it to start a new session")
    if session["resumability"] == "missing":
        return "its provider no longer has the session; press n on it to start a new one"
    placement = views_ops.placement_of_frame(conn, frame_id)
    if placement is None or placement["state"] != PlacementState.STOPPED_AFFINITY:
        state = placement["state"] if placement is not None else "no"
        return f"the frame has a {state} placement, not a stopped one"
    return None


def _refuse(engine: Engine, agent: _Lost, project: str, why: str, *,
            place: Place | None = None) -> AgentReport:
    """The agent stays stopped; its open recoveries say why and how to go on."""
    conn = engine.conn
    frame = conn.execute("SELECT title, current_session_key FROM frames WHERE frame_id = ?",
                         (agent.frame_id,)).fetchone()
    shown = views_ops.get_view(conn, agent.view_id)["active_frame_id"]
    where = place or (Place.MAIN if agent.frame_id == shown else Place.PARKED)
    sentence = (f"The tmux server of “{frame['title']}” restarted and `switchboard restore` "
                f"could not resume its session: {why.rstrip('. ')}. Once that is fixed, select "
                f"“{frame['title']}” and press n (or run `switchboard restore` again); this "
                "closes when it runs again.")
    with write_transaction(conn) as tx:
        for recovery_id in agent.recovery_ids:
            row = tx.execute("SELECT state FROM recoveries WHERE recovery_id = ?",
                             (recovery_id,)).fetchone()
            if row is not None and row["state"] == RecoveryState.OPEN:
                fleet_ops.explain_open_recovery(tx, recovery_id, sentence, engine.now())
    return AgentReport(project, agent.frame_id, frame["title"], where,
                       frame["current_session_key"] or "", AgentOutcome.FAILED, why)


def _with_detail(report: AgentReport, detail: str) -> AgentReport:
    from dataclasses import replace

    return replace(report, detail="; ".join(filter(None, [report.detail, detail])))


def _restore_mode_and_zoom(engine: Engine, request_id: str, plan: _ViewPlan) -> None:
    """The mode and zoom the view had before its server went (read in the plan)."""
    from core.fleet.zoom import zoom_main

    view = views_ops.get_view(engine.conn, plan.view_id)
    if view["mode"] != plan.mode:
        engine.view_mode(f"{request_id}:mode:{plan.view_id}", plan.view_id, plan.mode)
    if plan.zoomed:
        zoom_main(engine, plan.view_id)


def summary_lines(report: RestoreReport) -> Iterable[str]:
    """The report as short lines for a person (titles spelled out by the caller's printer)."""
    if report.waited:
        yield "another `switchboard restore` of this home was running: this one waited for it"
    if not report.views:
        yield "nothing to restore: no view was open"
        return
    for view in report.views:
        how = f"{view.mode.value} mode" + (", zoomed" if view.zoomed else "")
        if view.outcome is ViewOutcome.REBUILT:
            yield f"{view.project}: view reopened ({how})"
        elif view.outcome is ViewOutcome.OPEN:
            yield f"{view.project}: view already open"
        else:
            yield f"{view.project}: view NOT reopened: {view.detail}"
        for agent in report.agents:
            if agent.project != view.project:
                continue
            if agent.outcome is AgentOutcome.RESUMED:
                line = f"  “{agent.title}” ({agent.place.value}): resumed session " \
                       f"{agent.session_key}"
            else:
                line = f"  “{agent.title}” ({agent.place.value}): NOT resumed: {agent.detail}"
            yield line + (f" ({agent.detail})" if agent.outcome is AgentOutcome.RESUMED
                          and agent.detail else "")
    if not report.changed and not report.failed:
        yield "nothing to restore: every view is open and no agent waits to be resumed"
