"""Every agent Switchboard launches is a broker member; delivery waits until it can read.

One fleet per project, named ``project:<project_id>``: the workspace agent is
its Director, each task agent an ordinary member, and the person a member
without a pane (the person reads in the navigator's Inbox). A member stands
for a *frame*, not a process: its description is ``switchboard-frame:<id>``,
so a restart or resume (a new pane for the same frame) moves the placement
instead of registering someone new, and messages already sent stay addressed.

``sync_project`` reconciles the fleet with the registry (open frames with a
live pane become members, placements follow their panes under the pane-input
locks, closed frames are deregistered). It is idempotent and serialized by a
file lock, so the launcher, the presentation path, the hook's Stop kick and
the agent tools may all call it.

``RegistryGate`` is the delivery gate: a line is typed only into a pane that
the registry says is shown in its view's main position, whose frame is open,
and whose agent is ready (its last trusted hook was a Stop; ``needs_input``
means a permission prompt or question is open). The tmux guard then checks,
in the same command that types, that the pane is alive and takes input.
"""

from __future__ import annotations

import fcntl
import os
import sqlite3
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from core.broker.broker import (
    Broker,
    Fleet,
    InvalidRequest,
    Member,
    MemberKind,
    PlacementSpec,
    UnknownMember,
)
from core.broker.delivery import DrainReport, PaneServer, PaneTarget, managed_frame
from core.broker.kick import frame_description
from core.model.errors import SwitchboardError
from core.model.text import TextShape, refuse_unsafe, shown

if TYPE_CHECKING:
    from core.config.home import Home
    from core.context.context import Context

PERSON_NAME = "person"
PERSON_DESCRIPTION = "switchboard-person"
PERSON_AGENT = "person"


def fleet_name(project_id: str) -> str:
    return f"project:{project_id}"


# --------------------------------------------------------------------------- the gate


class RegistryGate:
    """Reads the registry (never writes) to say whether a frame's pane may be typed into."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def blocked(self, frame_id: str, target: PaneTarget) -> str | None:
        row = self.conn.execute(
            "SELECT f.lifecycle_state AS frame_state, s.pane_id, s.lifecycle_state AS surface,"
            " ps.activity, ps.activity_reason, v.main_pane_id, v.state AS view_state"
            " FROM frames f"
            " LEFT JOIN frame_placements fp ON fp.frame_id = f.frame_id"
            "  AND fp.state <> 'orphaned'"
            " LEFT JOIN surfaces s ON s.surface_id = fp.surface_id"
            " LEFT JOIN provider_sessions ps ON ps.session_key = f.current_session_key"
            " LEFT JOIN user_views v ON v.view_id = fp.view_id"
            " WHERE f.frame_id = ?", (frame_id,)).fetchone()
        return blocked_reason(row, target.pane)

    def server_for(self, frame_id: str) -> PaneServer | None:
        return recorded_server(self.conn, frame_id)


def recorded_server(conn: sqlite3.Connection, frame_id: str) -> PaneServer | None:
    """The tmux server the registry recorded the frame's live pane on, or None."""
    row = conn.execute(
        "SELECT ts.socket_path, ts.server_pid, ts.server_start_time"
        " FROM frame_placements fp"
        " JOIN surfaces s ON s.surface_id = fp.surface_id AND s.lifecycle_state = 'live'"
        " JOIN tmux_servers ts ON ts.tmux_server_id = s.tmux_server_id"
        " WHERE fp.frame_id = ? AND fp.state <> 'orphaned'", (frame_id,)).fetchone()
    if row is None:
        return None
    return PaneServer(row["socket_path"], row["server_pid"], row["server_start_time"])


class LazyRegistryGate:
    """The gate for the broker CLI: opens the current registry only when a managed
    member is about to be typed to. Without a registry nothing can say the agent
    is ready, so the message waits (safe: poll and ACK stay authoritative)."""

    def __init__(self, home: Home | None = None) -> None:
        self._home = home
        self._gate: RegistryGate | None = None
        self._problem: str | None = None

    def blocked(self, frame_id: str, target: PaneTarget) -> str | None:
        gate = self._opened()
        if gate is None:
            return self._problem
        return gate.blocked(frame_id, target)

    def server_for(self, frame_id: str) -> PaneServer | None:
        gate = self._opened()
        return None if gate is None else gate.server_for(frame_id)

    def _opened(self) -> RegistryGate | None:
        if self._gate is None and self._problem is None:
            from core.config.home import Home
            from core.config.registry import open_current

            try:
                opened = open_current(self._home or Home.from_env())
                self._gate = RegistryGate(opened.conn)
            except (SwitchboardError, sqlite3.Error, OSError) as exc:
                self._problem = f"the Switchboard registry cannot say whether it is ready ({exc})"
        return self._gate

    def close(self) -> None:
        if self._gate is not None:
            self._gate.conn.close()


def blocked_reason(row: sqlite3.Row | None, pane: str) -> str | None:
    """Why a pane cannot take a notification now, or None (pure, for tests and the gate)."""
    if row is None:
        return "its frame no longer exists"
    if row["frame_state"] != "open":
        return "its frame is closed"
    if row["surface"] != "live" or row["pane_id"] is None:
        return "its agent is not running"
    if row["pane_id"] != pane:
        return f"its agent now runs in pane {row['pane_id']}"
    if row["main_pane_id"] != pane:
        return "its pane is not shown (parked); it is typed when the frame is shown"
    activity = row["activity"]
    if activity == "ready":
        return None
    if activity == "needs_input":
        return (f"its agent waits for the person ({row['activity_reason']}); "
                "it is typed after the agent's next Stop")
    if activity == "working":
        return "its agent is working; it is typed at the agent's next Stop"
    return f"its agent is {activity} (only a Stop makes it ready)"


# --------------------------------------------------------------------------- reconcile


@dataclass(frozen=True)
class ProjectFleet:
    """A project's fleet and who is who in it (active members only)."""

    fleet: Fleet
    person_id: int | None
    by_frame: dict[str, int]

    def member_for(self, frame_id: str) -> int | None:
        return self.by_frame.get(frame_id)


@dataclass(frozen=True)
class _LiveFrame:
    frame_id: str
    title: str
    role: str
    pane: str | None
    provider: str
    window: str | None


def _open_frames(conn: sqlite3.Connection, project_id: str) -> list[_LiveFrame]:
    rows = conn.execute(
        "SELECT f.frame_id, f.title, f.role, s.pane_id, s.provider, v.tmux_window_id"
        " FROM frames f"
        " LEFT JOIN frame_placements fp ON fp.frame_id = f.frame_id AND fp.state <> 'orphaned'"
        " LEFT JOIN surfaces s ON s.surface_id = fp.surface_id AND s.lifecycle_state = 'live'"
        " LEFT JOIN user_views v ON v.view_id = fp.view_id"
        " WHERE f.project_id = ? AND f.lifecycle_state = 'open'"
        " ORDER BY f.depth, f.created_at", (project_id,)).fetchall()
    return [_LiveFrame(r["frame_id"], r["title"], r["role"], r["pane_id"],
                       r["provider"] or "agent", r["tmux_window_id"]) for r in rows]


@contextmanager
def _membership_lock(broker_path: Path) -> Iterator[None]:
    """One reconciler at a time per broker file (launches, kicks and tools race)."""
    lock_dir = broker_path.with_name(broker_path.name + ".locks")
    lock_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(lock_dir / "membership.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def find_fleet(broker: Broker, project_id: str) -> Fleet | None:
    name = fleet_name(project_id)
    return next((f for f in broker.list_fleets() if f.name == name), None)


def project_fleet(broker: Broker, fleet: Fleet) -> ProjectFleet:
    person = None
    by_frame: dict[str, int] = {}
    for row in broker.store.list_members(fleet.fleet_id, active_in_live_fleets=True):
        if row["description"] == PERSON_DESCRIPTION:
            person = row["member_id"]
        frame_id = managed_frame(row["description"])
        if frame_id is not None:
            by_frame[frame_id] = row["member_id"]
    return ProjectFleet(fleet, person, by_frame)


def sync_project(ctx: Context, broker: Broker, project_id: str) -> ProjectFleet | None:
    """Make the project's fleet match its open frames; None until the workspace has a pane."""
    session = ctx.config.tmux.view_session
    with _membership_lock(broker.store.path):
        frames = _open_frames(ctx.conn, project_id)
        fleet = find_fleet(broker, project_id)
        if fleet is None:
            workspace = next((f for f in frames if f.role == "workspace" and f.pane), None)
            if workspace is None:
                return None
            created = broker.create_fleet(
                fleet_name(project_id), director_name=shown(workspace.title),
                director_description=frame_description(workspace.frame_id),
                placement=PlacementSpec(session, workspace.window or "-", workspace.pane,
                                        workspace.provider))
            fleet = created.fleet
            broker.register_member(fleet.fleet_id, PERSON_NAME, description=PERSON_DESCRIPTION,
                                   placement=PlacementSpec(session, "-", None, PERSON_AGENT))
        current = project_fleet(broker, fleet)
        open_ids = {f.frame_id for f in frames}
        for frame_id, member_id in current.by_frame.items():
            if frame_id not in open_ids and member_id != fleet.director_member_id:
                broker.deregister_member(member_id)  # its frame closed; messages are kept
        if current.person_id is None:
            broker.register_member(fleet.fleet_id, PERSON_NAME, description=PERSON_DESCRIPTION,
                                   placement=PlacementSpec(session, "-", None, PERSON_AGENT))
        for frame in frames:
            if frame.pane is None:
                continue  # not running: keeps its last placement (the gate says why not)
            spec = PlacementSpec(session, frame.window or "-", frame.pane, frame.provider)
            frame_member = current.member_for(frame.frame_id)
            if frame_member is None:
                # A title stored before the text rule stays usable, spelled out.
                broker.register_member(fleet.fleet_id, shown(frame.title),
                                       description=frame_description(frame.frame_id),
                                       placement=spec)
                continue
            placed = broker.store.get_placement(frame_member)
            if placed is None or (placed["mux_pane_id"], placed["mux_window_id"],
                                  placed["mux_session"]) != (frame.pane, spec.mux_window_id,
                                                             session):
                broker.place_member(frame_member, spec)  # under the old and new panes' locks
        return project_fleet(broker, fleet)


# --------------------------------------------------------------------------- delivery


def open_managed_broker(ctx: Context, *, create: bool = True) -> Broker:
    """The engine's broker, typing through its tmux server, gated by its registry."""

    home = ctx.require_home()
    stage = ctx.stage
    socket = getattr(stage, "socket_path", None) or ctx.config.tmux.socket_path
    return Broker.open(home.broker_path, tmux_socket=socket, create=create,
                       gate=RegistryGate(ctx.conn))


def deliver_pending(ctx: Context, project_id: str) -> list[DrainReport]:
    """Reconcile the project's fleet, then type what is pending to members that can read.

    Called where a reason for deferral may have cleared: a launch, a
    presentation, an agent's trusted Stop. Each recipient gets at most one line
    (a line starts a turn; its Stop types the next).
    """
    home = getattr(ctx, "home", None)
    if home is None or not home.broker_path.exists():
        return []  # no message was ever sent on this home: nothing to deliver
    with open_managed_broker(ctx, create=False) as broker:
        fleet = sync_project(ctx, broker, project_id)
        if fleet is None:
            return []
        reports = []
        for member_id in fleet.by_frame.values():
            if broker.store.next_notification_candidate(member_id, set()) is None:
                continue
            reports.append(broker._drain(member_id, set()))
        return reports


def after_presentation(ctx: Context, view_id: str) -> None:
    """Best effort after a view's main pane changed: never fails the move that happened."""
    try:
        row = ctx.conn.execute("SELECT project_id FROM user_views WHERE view_id = ?",
                                  (view_id,)).fetchone()
        if row is not None and row["project_id"]:
            deliver_pending(ctx, row["project_id"])
    except (SwitchboardError, sqlite3.Error, OSError) as exc:
        print(f"switchboard: broker delivery after presentation skipped: {shown(exc)}",
              file=sys.stderr)


def after_focus(ctx: Context, view_id: str, frame_id: str) -> None:
    """After a focus or back: deliver only when the frame now shown has lines waiting.

    Such a move changes no membership (the same frames are open, every pane
    keeps its id, no frame changes view), so the only deferral it can clear is
    "its pane is not shown" for the frame it showed. One read-only query
    answers that; a yes, or a broker file it cannot read plainly, takes the
    full ``after_presentation``.
    """
    from storage.broker_store import has_unnotified

    home = getattr(ctx, "home", None)
    if home is None or not home.broker_path.exists():
        return
    if has_unnotified(home.broker_path, frame_description(frame_id)) is False:
        return
    after_presentation(ctx, view_id)


def after_launch(ctx: Context, frame_id: str) -> None:
    """Register (or re-place) the launched agent; best effort, a launch never fails here."""
    try:
        row = ctx.conn.execute("SELECT project_id FROM frames WHERE frame_id = ?",
                                  (frame_id,)).fetchone()
        if getattr(ctx, "home", None) is None or row is None:
            return
        with open_managed_broker(ctx) as broker:
            sync_project(ctx, broker, row["project_id"])
    except (SwitchboardError, sqlite3.Error, OSError) as exc:
        print(f"switchboard: broker membership not updated: {shown(exc)}", file=sys.stderr)


@dataclass(frozen=True)
class PersonSent:
    """What the navigator tells the person after composing a message."""

    message_id: int
    to_name: str
    delivery: str


def person_send(ctx: Context, frame_id: str, text: str) -> PersonSent:
    """The person messages a frame's agent: same broker, same gate as agent sends."""
    if not text or not text.strip():
        raise InvalidRequest("the message is empty; type what the agent should read")
    refuse_unsafe("message text", text, TextShape.BLOCK)
    row = ctx.conn.execute("SELECT project_id, title FROM frames WHERE frame_id = ?",
                              (frame_id,)).fetchone()
    if row is None:
        raise InvalidRequest(f"no frame {frame_id}")
    with open_managed_broker(ctx) as broker:
        fleet = sync_project(ctx, broker, row["project_id"])
        to = fleet.member_for(frame_id) if fleet is not None else None
        if fleet is None or to is None or fleet.person_id is None:
            raise InvalidRequest(f"“{shown(row['title'])}” has no running agent to message; "
                                 "start it first (n)")
        result = broker.send(fleet.fleet.fleet_id, fleet.person_id, to, text)
    report = result.delivery
    if report is not None and report.notified:
        delivery = "typed into its pane"
    else:
        why = report and (report.deferred or report.skipped
                          or (report.not_notified.reason if report.not_notified else None))
        delivery = f"pending: {why}" if why else "pending"
    return PersonSent(result.message.message_id, shown(row["title"]), delivery)


# --------------------------------------------------------------------------- resolving names


def resolve_member(broker: Broker, fleet: ProjectFleet, word: str, *,
                   me: int | None = None, parent_frame: str | None = None) -> Member:
    """A member of this fleet named by id, ``person``, ``parent``, ``director``/``workspace``,
    or its frame title (case-insensitive); ambiguous or unknown names are refused."""
    word = word.strip()
    if not word:
        raise InvalidRequest("recipient must not be empty; name a member, `parent` or `person`")
    members = [broker.get_member(m) for m in (*fleet.by_frame.values(),
                                              *([fleet.person_id] if fleet.person_id else []))]
    if word.isdigit():
        found = [m for m in members if m.member_id == int(word)]
    elif word.lower() == "person":
        found = [m for m in members if m.member_id == fleet.person_id]
    elif word.lower() in ("director", "workspace"):
        found = [m for m in members if m.kind is MemberKind.DIRECTOR]
    elif word.lower() == "parent":
        if parent_frame is None or parent_frame not in fleet.by_frame:
            raise InvalidRequest("this frame has no running parent agent; "
                                 "name a member or `person`")
        found = [m for m in members if m.member_id == fleet.by_frame[parent_frame]]
    else:
        found = [m for m in members if m.name.lower() == word.lower()]
    if len(found) > 1:
        ids = ", ".join(str(m.member_id) for m in found)
        raise InvalidRequest(f"{word!r} names several members ({ids}); use the member id")
    if not found:
        names = ", ".join(f"{m.member_id} {m.name}" for m in members if m.member_id != me)
        raise UnknownMember(f"no member {word!r} in this project; members: {names or 'none'}")
    return found[0]

