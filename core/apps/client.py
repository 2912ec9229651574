"""EngineClient: the one object a frontend holds.

It opens the registry once, builds NavigatorState on request, and turns each
user intent into an engine request with a fresh request id. Blocking calls
are meant to run in a frontend's worker thread; nothing here imports Textual.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.config.home import Home
from core.context.reader import RegistryReader
from core.context.requests import new_request_id
from core.model.errors import SwitchboardError
from core.model.files import file_stamps
from core.state.state_types import NavigatorState, ProjectRow

if TYPE_CHECKING:  # imported where used: a frontend pays for what it calls
    from core.broker.broker import Message as BrokerMessage
    from core.broker.inbox_pane import StreamPane
    from core.broker.membership import PersonSent
    from core.broker.reading import InboxEntry
    from core.engine.engine import Engine
    from core.evidence.store import SessionDetail
    from core.model.enums import Provider
    from core.model.results import (
        FrameResult,
        RouteResult,
        StartResult,
        TransitionResult,
        ViewResult,
    )
    from core.providers.agent_http import ServerInfo
    from core.reconcile.reconcile import ReconcileReport
    from core.reconcile.recovery import RecoveryRecord
    from core.remote.actions import RemoteActions
    from core.runtime.answer import Answered
    from core.state.async_reads import AsyncNavigatorReads
    from core.state.remote_open import RemoteWindow
    from core.usage.switch_provider import SwitchResult

# The navigator's remembered layout is a few hundred bytes; never read more than this.
UI_STATE_MAX_BYTES = 1024 * 1024
#: Seconds an unchanged-looking broker's Inbox answer is reused at most.
INBOX_MAX_AGE_S = 60.0


def _stamp(path: str) -> tuple[int, int]:
    """(mtime_ns, size) of a file, (0, 0) when it is missing."""
    try:
        info = os.stat(path)
    except OSError:
        return (0, 0)
    return (info.st_mtime_ns, info.st_size)


def _import_stage() -> Callable[[Engine, Home], object]:
    """``core.runtime.stage.attach_stage``, imported on the first request that needs it."""
    from core.runtime.stage import attach_stage

    return attach_stage


@dataclass(frozen=True)
class SubjectPlace:
    """Where a recovery's subject is shown: its view and frame, when they can be told."""

    view_id: str | None
    frame_id: str | None


#: subject type -> SQL giving (view_id, frame_id) of that subject; read-only.
_SUBJECT_SQL: dict[str, str] = {
    "view": "SELECT view_id, active_frame_id FROM user_views WHERE view_id = ?",
    "frame": "SELECT NULL, frame_id FROM frames WHERE frame_id = ?",
    "transition": "SELECT view_id, target_frame_id FROM view_transitions"
                  " WHERE transition_id = ?",
    "control_turn": "SELECT t.view_id, c.target_frame_id FROM control_turns c"
                    " JOIN view_transitions t ON t.transition_id = c.transition_id"
                    " WHERE c.control_turn_id = ?",
    "launch": "SELECT NULL, frame_id FROM launch_intents WHERE launch_id = ?",
    "surface": "SELECT NULL, l.frame_id FROM surfaces s"
               " JOIN launch_intents l ON l.launch_id = s.launch_id WHERE s.surface_id = ?",
}


@dataclass
class EngineClient:
    """Reads run on a registry reader; the engine and its tmux stage come with the
    first request.

    A navigator mostly reads (every view's navigator rebuilds its state on each
    change), and the engine brings its storage operations (``core.context.reader``)
    and the stage the tmux adapter and the sagas (~30 modules, ~1.2 MB per
    navigator). ``open`` hands out a reader, which the first request turns into an
    ``Engine`` on the same connection; ``stage_wanted`` says that request attaches
    the stage too. An engine handed in, its stage attached or not, is used as it is.
    """

    engine: RegistryReader
    home: Home
    stage_wanted: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _stamped: tuple[str, tuple[str, ...]] | None = field(default=None, repr=False,
                                                         compare=False)
    """(generation, paths) that ``change_stamp`` stats, worked out once per generation."""
    _inbox_cache: tuple[object, float, tuple[InboxEntry, ...]] | None = field(
        default=None, repr=False, compare=False)
    """(scope and broker file stamps, when read, entries) of ``inbox_if_moved``."""
    _async_reads: AsyncNavigatorReads | None = field(default=None, repr=False, compare=False)
    """The navigator's aiosqlite reads (``state_async``), made on the first one."""
    _registry_file: tuple[str, Path] | None = field(default=None, repr=False, compare=False)
    """(generation, file) of the registry ``state_async`` reads."""
    _segment: str | None = field(default=None, repr=False, compare=False)
    """The attention segment this client last put in the status line (None: not yet)."""

    @classmethod
    def open(cls, home: Home | None = None, *, with_stage: bool = True) -> EngineClient:
        from core.context.session import open_reader

        home = home or Home.from_env()
        return cls(engine=open_reader(home), home=home, stage_wanted=with_stage)

    @property
    def _acting(self) -> Engine:
        """The engine for a request, made from the reader on the first one, its stage
        attached first when one is wanted.

        Called under ``_lock``; reads use ``self.engine`` and never attach it."""
        from core.engine.engine import Engine

        engine = self.engine
        if not isinstance(engine, Engine):
            engine = Engine(conn=engine.conn, config=engine.config, clock=engine.clock,
                            home=engine.home)
            self.engine = engine
        if self.stage_wanted and engine.stage is None:
            _import_stage()(engine, self.home)
        return engine

    def shutdown(self) -> None:
        """Release the registry connections (the navigator calls this on exit)."""
        if self._async_reads is not None:
            self._async_reads.stop()
        with self._lock:
            self.engine.conn.close()

    # --------------------------------------------------------------- reads

    def state(self) -> NavigatorState:
        from core.state.state_builder import build_navigator_state

        with self._lock:
            self._follow_reset()
            return build_navigator_state(self.engine)

    async def state_async(self) -> NavigatorState:
        """``state`` as a navigator reads it: the registry's rows awaited on the running
        event loop through aiosqlite (``core.state.async_reads``), assembled on it.

        No lock: the reads have their own connection, so a load never waits behind a
        request. A reset is followed by ``data_version`` (which a load asks first);
        the rows then come from the file of the generation this client reads."""
        from core.state.async_reads import AsyncNavigatorReads
        from core.state.state_builder import assemble_navigator_state

        reader = self.engine
        path = await self._registry_path(reader)
        if self._async_reads is None:
            self._async_reads = AsyncNavigatorReads()
        rows = await self._async_reads.rows(path)
        return assemble_navigator_state(reader, rows)

    async def _registry_path(self, reader: RegistryReader) -> Path:
        """The file ``reader`` is connected to, asked of SQLite once per generation."""
        known = self._registry_file
        if known is not None and known[0] == reader.generation_id:
            return known[1]

        def ask() -> Path:
            with self._lock:
                row = reader.conn.execute("PRAGMA database_list").fetchone()
            return Path(row[2])

        path = await asyncio.to_thread(ask)
        self._registry_file = (reader.generation_id, path)
        return path

    def _follow_reset(self) -> None:
        """After `switchboard reset` the pointer names a new generation: read that one.

        The connection stays on the file it opened, so a navigator running through
        a reset kept showing frames that no longer exist. Called under ``_lock``
        with each state read (one small file read; the change stamp already watches
        the pointer). The new registry is opened before the old one is let go, so a
        failed open leaves the client as it was (the next read tries again); the
        next request builds its engine, and stage, on the new connection.
        """
        current = self.home.read_current_generation()
        if current is None or current == self.engine.generation_id:
            return
        from core.context.session import open_reader

        fresh = open_reader(self.home)
        old, self.engine = self.engine, fresh
        old.conn.close()

    def session_detail(self, frame_id: str, limit: int = 50) -> SessionDetail:
        """The frame's current session evidence (``core.evidence.store.SessionDetail``).

        The key comes from the registry under the lock; the session file is read
        after it is released, on its own read-only connection.
        """
        from core.evidence.store import session_detail, session_key_for_frame

        with self._lock:
            key = session_key_for_frame(self.engine.conn, frame_id)
        return session_detail(self.home, key, limit)

    def recovery_subject(self, subject_type: str, subject_id: str) -> SubjectPlace:
        """The view and frame a recovery is about, so a frontend can go and look.

        Read-only. A frame without a view of its own is looked up through its
        owning placement; an unknown subject type or a vanished row gives Nones.
        """
        sql = _SUBJECT_SQL.get(subject_type)
        if sql is None:
            return SubjectPlace(None, None)
        with self._lock:
            conn = self.engine.conn
            row = conn.execute(sql, (subject_id,)).fetchone()
            if row is None:
                return SubjectPlace(None, None)
            view_id, frame_id = row[0], row[1]
            if view_id is None and frame_id is not None:
                placed = conn.execute(
                    "SELECT view_id FROM frame_placements WHERE frame_id = ?"
                    " AND state <> 'orphaned'", (frame_id,)).fetchone()
                view_id = placed[0] if placed is not None else None
        return SubjectPlace(view_id, frame_id)

    def data_version(self) -> int:
        """Cheap change detection: the generation, SQLite's data_version and the broker
        file's mtime."""
        with self._lock:
            self._follow_reset()  # a new generation is a change, whatever its version
            version = self.engine.conn.execute("PRAGMA data_version").fetchone()[0]
            total = self.engine.conn.total_changes
            generation = self.engine.generation_id
        try:
            broker = os.stat(self.home.broker_path).st_mtime_ns
        except OSError:
            broker = 0
        return hash((generation, version, total, broker))

    def change_stamp(self) -> tuple[tuple[int, int], ...]:
        """Size and mtime of every file a registry or broker commit touches: no lock, no SQL.

        The navigator compares this on its event loop every tick and starts a
        ``data_version`` read only when it moved, so an idle navigator starts no
        worker thread at all (a worker per tick cost ~20x the stats). In WAL mode
        each commit appends to ``-wal`` and a checkpoint rewrites the database
        file; the pointer file moves on a registry reset. A missing file reads
        as (0, 0).
        """
        return file_stamps(self._change_files)

    def change_files(self) -> tuple[str, ...]:
        """The files ``change_stamp`` stats: a frontend may watch them instead."""
        return self._change_files

    @property
    def _change_files(self) -> tuple[str, ...]:
        """The stamped paths, worked out once per generation (pathlib per tick showed up
        as a third of an idle navigator's own CPU)."""
        generation = self.engine.generation_id
        if self._stamped is not None and self._stamped[0] == generation:
            return self._stamped[1]
        registry = os.fspath(self.home.registry_path(generation))
        broker = os.fspath(self.home.broker_path)
        files = (registry, f"{registry}-wal", broker, f"{broker}-wal",
                 os.fspath(self.home.current_pointer))
        self._stamped = (generation, files)
        return files

    # --------------------------------------------------------------- requests
    # One typed method per engine operation, each with a fresh request id under
    # the lock (the registry connection is not shared across threads otherwise).

    def enter_project(self, name: str) -> RouteResult:
        with self._lock:
            return self._acting.project_enter(new_request_id(), name)

    def start(self, frame_id: str) -> StartResult:
        with self._lock:
            return self._acting.frame_start(new_request_id(), frame_id)

    def stop(self, frame_id: str) -> FrameResult:
        with self._lock:
            stopped = self._acting.frame_stop(new_request_id(), frame_id)
        self.refresh_attention_segment()
        return stopped

    def refresh_attention_segment(self) -> None:
        """Put the live counts into the status line when they moved without a hook.

        Hooks publish the segment as an agent's activity changes; an agent stopped,
        killed or found gone by reconcile sends none, and the status line went on
        reading "✓ 2 ready" for an agent that no longer ran. One SELECT, and one
        detached ``tmux set-option`` only when the text differs from the last one
        this client set (the first turn always sets it)."""
        from core.config.config import views_socket
        from core.hooks.attention_counts import read_counts, spawn_segment

        socket = views_socket(self.engine.config, self.home.root)
        with self._lock:
            segment = read_counts(self.engine.conn).segment()
        if segment != self._segment:
            spawn_segment(socket, segment)
            self._segment = segment

    def switch_provider(self, frame_id: str, to: Provider) -> SwitchResult:
        """Move the frame's task to the other provider (``core.usage.switch_provider``)."""
        from core.usage.switch_provider import switch_provider

        with self._lock:
            return switch_provider(self._acting, new_request_id(), frame_id, to, self.home)

    def fork(self, frame_id: str) -> FrameResult:
        """A sibling task continuing a copy of the frame's conversation (``frame fork``)."""
        with self._lock:
            return self._acting.frame_fork(new_request_id(), frame_id)

    def cancel_transition(self, view_id: str) -> TransitionResult:
        with self._lock:
            return self._acting.transition_cancel(new_request_id(), view_id=view_id)

    def back(self, view_id: str) -> TransitionResult:
        with self._lock:
            return self._acting.frame_back(new_request_id(), view_id)

    def focus(self, view_id: str, frame_id: str) -> TransitionResult:
        with self._lock:
            return self._acting.view_focus(new_request_id(), view_id, frame_id)

    def push(self, frame_id: str, title: str, brief: str) -> TransitionResult:
        """A person's push: the same transition an agent's task_push prepares."""
        with self._lock:
            return self._acting.frame_push(new_request_id(), frame_id, title, brief)

    def complete(self, frame_id: str, summary: str, next_action: str) -> TransitionResult:
        with self._lock:
            return self._acting.frame_complete(new_request_id(), frame_id, summary, next_action)

    def close(self, frame_id: str) -> TransitionResult:
        with self._lock:
            return self._acting.frame_close(new_request_id(), frame_id)

    def reopen(self, frame_id: str) -> FrameResult:
        with self._lock:
            return self._acting.frame_reopen(new_request_id(), frame_id)

    def toggle_mode(self, view_id: str) -> ViewResult:
        with self._lock:
            return self._acting.view_mode(new_request_id(), view_id)

    def open_remote(self, host_id: str, project: str) -> RemoteWindow:
        """A remote host's project: a local window running ssh into its own view."""
        from core.state.remote_open import open_remote, remote_for_host

        with self._lock:
            return open_remote(self._acting, remote_for_host(self._acting, host_id), project)

    def answer_prompt(self, frame_id: str, yes: bool) -> Answered:
        """The person's yes or no to the frame's agent prompt (``core.runtime.answer``)."""
        from core.runtime.answer import answer_prompt

        with self._lock:
            return answer_prompt(self._acting, frame_id, yes)

    def remote_actions(self) -> RemoteActions:
        """Requests on remote hosts' frames, decided by their own engines over ssh."""
        from core.remote.actions import RemoteActions

        return RemoteActions(self.home, self.engine.config, pruner=self.prune_remotes)

    def prune_remotes(self) -> int:
        """Drop the cached state of remotes no longer configured (issue 37 item 5), on
        this client's own connection; returns how many rows went."""
        from core.state.remotes import prune_unconfigured

        with self._lock:
            return prune_unconfigured(self.engine.conn, self.engine.config.remotes)

    def show_view(self, view_id: str) -> None:
        """Take the person's tmux client to that view's window (no registry change)."""
        from core.engine.presentation import show_view

        with self._lock:
            show_view(self._acting, view_id)

    def preview(self, frame_id: str) -> list[str] | None:
        """Last lines of the frame's live agent pane (read-only, one tmux process)."""
        from core.runtime.preview import preview_lines

        with self._lock:
            return preview_lines(self._acting, frame_id)

    def reconcile(self) -> ReconcileReport:
        """Compare tmux with the registry once, as `switchboard reconcile` (the home's
        server runs it every interval: ``core.server.housekeeping``)."""
        from core.reconcile.reconcile import reconcile

        with self._lock:
            return reconcile(self._acting)

    def ensure_server(self) -> ServerInfo | None:
        """Start this home's server unless it runs (one lock probe when it does): it
        reconciles, parks and follows remotes; a navigator only shows the results."""
        from core.server.start import ensure_running

        return ensure_running(self.home)

    def recover(self, recovery_id: str) -> RecoveryRecord:
        from core.reconcile import recovery

        with self._lock:
            return recovery.execute(self._acting, new_request_id(), recovery_id)

    def show_extra_pane(self, extra_pane_id: str) -> str:
        """Enter on an extra pane: it in main, or its frame's agent again
        (``core.reconcile.foreign``)."""
        from core.reconcile.foreign import show_extra_pane

        with self._lock:
            return show_extra_pane(self._acting, extra_pane_id)

    def close_extra_pane(self, extra_pane_id: str) -> bool:
        """x on an extra pane: exactly that pane is closed."""
        from core.reconcile.foreign import close_extra_pane

        with self._lock:
            return close_extra_pane(self._acting, extra_pane_id)

    def dismiss_recovery(self, recovery_id: str) -> RecoveryRecord:
        from core.reconcile import recovery

        with self._lock:
            return recovery.dismiss(self._acting, new_request_id(), recovery_id)

    # --------------------------------------------------------------- broker

    def inbox(self, view_id: str | None = None) -> list[InboxEntry]:
        """The view's Inbox (``core.broker.inbox_view``), read from the broker again only
        when its files moved, the view's scope changed, or ``INBOX_MAX_AGE_S`` passed;
        otherwise the last answer (ages in it are as of that read).

        Every registry commit (each hook) makes a navigator reload, but the Inbox only
        changes with a broker commit; opening the broker and walking its roster cost
        ~3 ms at 20 agents and grew with every member. The age bound covers a broker
        commit that left a file's size and mtime as they were.
        """
        from core.broker import inbox_view

        with self._lock:
            if not self.home.broker_path.exists():
                return []
            scope = inbox_view.inbox_scope(self.engine, view_id)
        broker = os.fspath(self.home.broker_path)
        key = (scope, _stamp(broker), _stamp(f"{broker}-wal"))
        now = time.monotonic()
        cached = self._inbox_cache
        if cached is not None and cached[0] == key and now - cached[1] < INBOX_MAX_AGE_S:
            return list(cached[2])
        entries = inbox_view.inbox_in_scope(self.home, scope)
        self._inbox_cache = (key, now, tuple(entries))
        return entries

    def ack(self, message_id: int, member_id: int | None = None) -> BrokerMessage:
        from core.broker import inbox_view

        return inbox_view.ack(self.home, message_id, member_id)

    def message_frame(self, frame_id: str, text: str) -> PersonSent:
        """The person's message to a frame's agent (core.broker.membership.person_send)."""
        from core.broker.membership import person_send

        with self._lock:
            return person_send(self._acting, frame_id, text)

    def toggle_inbox_stream(self, view_id: str) -> StreamPane:
        """Open or close the view's read-only inbox stream pane (core.broker.inbox_pane)."""
        from core.broker.inbox_pane import toggle_inbox_stream

        with self._lock:
            return toggle_inbox_stream(self._acting, view_id)

    # --------------------------------------------------------------- config

    @property
    def drives_tmux(self) -> bool:
        """Whether requests move tmux panes (a stage is attached): a navigator then
        takes the person to views shown elsewhere."""
        return self.stage_wanted or getattr(self.engine, "stage", None) is not None

    def navigator_width(self) -> int:
        """The width tmux gives a navigator pane when there is room (`tmux.navigator_width`)."""
        return int(self.engine.config.tmux.navigator_width)

    def configured_projects(self) -> list[ProjectRow]:
        """Projects in config, as rows: one never entered has no registry row yet."""
        config = self.engine.config
        return [ProjectRow(project_id=p.project_id, host_id=config.host.host_id, name=p.name)
                for p in config.projects]

    # --------------------------------------------------------------- ui state

    @property
    def _ui_state_path(self) -> Path:
        return self.home.root / "ui_state.json"

    def load_ui_state(self) -> dict[str, Any]:
        from core.model.files import read_bounded

        try:
            value = json.loads(read_bounded(self._ui_state_path, UI_STATE_MAX_BYTES,
                                            "ui state file"))
        except (OSError, ValueError, SwitchboardError):
            return {}  # the navigator starts from defaults rather than refuse to open
        return value if isinstance(value, dict) else {}

    def save_ui_state(self, state: dict[str, Any]) -> None:
        from core.model.files import write_private

        write_private(self._ui_state_path, json.dumps(state, sort_keys=True))
