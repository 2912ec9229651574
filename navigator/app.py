"""The Switchboard navigator: a thin App that composes panels and routes intents.

Data flows down: when a registry file is written (the kernel wakes the app,
or a stat tick notices), a thread rebuilds NavigatorState if the client's
cheap ``data_version()`` moved, at most one load per ``LOAD_GAP`` while a
burst lasts, and the app hands it to each panel's reactive attribute; panels
reconcile instead of being recreated, and repaint only what moved.
Every few seconds another thread worker reconciles tmux with the registry
(watchdog, expired leases, exited providers, stale activity), so what it
changes reaches the screen through the same data_version check.
Intent flows up: panels post nested messages, keys are bound actions, and
every one becomes one EngineClient request (a fresh request id, the same
engine the CLI uses) in a thread worker, so the event loop never waits on
SQLite or tmux. The app composes and routes; the rest lives beside it:
``targeting`` (which view or frame a key acts on), ``intents`` (the keys and
what each asks for), ``loading`` (polls, loads, reconciles), ``jobs`` (a
worker's end: its result, or its error as a one-line toast), ``ui_state``
(what a pane remembers), ``layout`` (which layout the size allows).
"""

from __future__ import annotations

import asyncio
import inspect
import os
from collections.abc import Callable, Coroutine, Iterable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar, cast

from textual import events
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.containers import Vertical
from textual.geometry import Size
from textual.reactive import reactive
from textual.screen import Screen
from textual.widgets import Input, OptionList, Tree
from textual.worker import Worker

from core.apps.client import EngineClient, SubjectPlace
from core.model.errors import SwitchboardError
from core.server.housekeeping import RECONCILE_INTERVAL_S
from core.state.state_types import FrameSummary, NavigatorState, RecoveryRow, ViewRow
from navigator import intents, lookup, targeting
from navigator.first_keys import HOLD_LIMIT_S, FirstStateKeys
from navigator.intents import BLOCKED_UNDER_DIALOGS, KEY_BINDINGS, PANEL_ONLY_ACTIONS
from navigator.jobs import Group, Job, Jobs, problem_text, request_problem
from navigator.layout import (
    COMPACT_ROWS,
    DEFAULT_NAVIGATOR_WIDTH,
    MIN_COLUMNS,
    MIN_ROWS,
    NARROW_WIDTH,
    SHORT_ROWS,
    SIDEBAR_ROWS,
    LayoutKind,
    MainScreen,
    fit_layout,
    fit_stack,
    layout_for,
    stylesheet_path,
)
from navigator.loading import (
    FULL_CHECK_TICKS,
    WATCH_TICK,
    Loaded,
    NewRecoveries,
    Refresher,
    read_state_async,
)
from navigator.palette import PlacesProvider
from navigator.ui_state import PaneLayout, PaneMemory, UiStateStore, apply_layout
from navigator.widgets.breadcrumb import Breadcrumb
from navigator.widgets.footer import KeyFooter
from navigator.widgets.frames import FrameTree, NodeKind, NodeRef, frame_key
from navigator.widgets.inbox import InboxList
from navigator.widgets.preview import PanePreview
from navigator.widgets.recoveries import OPEN_ANYWHERE, RecoveryList
from navigator.widgets.search import SearchBox
from navigator.widgets.too_small import TooSmallNotice
from navigator.widgets.views import ViewList

if TYPE_CHECKING:  # the client imports these where it calls them; so does the app
    from textual.timer import Timer

    from core.evidence.store import SessionDetail
    from core.review.diff import FrameDiff
    from core.review.search import SearchResult
    from core.usage.report import FleetBrief

__all__ = ["COMPACT_ROWS", "DEFAULT_NAVIGATOR_WIDTH", "FULL_CHECK_TICKS", "MIN_COLUMNS",
           "MIN_ROWS", "NARROW_WIDTH", "SHORT_ROWS", "SIDEBAR_ROWS", "LayoutKind",
           "SwitchboardApp", "stylesheet_path"]

_Answer = TypeVar("_Answer")
"""What a dialog dismisses with (a confirmation, a task, a message, a handoff)."""
_Target = TypeVar("_Target")

#: Seconds between two probes of the home's server (one ``flock`` test; a start only
#: when none runs): a server killed while navigators run is back within this.
SERVER_PROBE_INTERVAL = 10.0
#: The server's pass interval; no navigator reconciles (kept for the benches' figures).
RECONCILE_INTERVAL = RECONCILE_INTERVAL_S
#: Transition states a request can end in that changed nothing.
UNDONE_STATES = ("failed", "cancelled", "superseded")


@dataclass(frozen=True)
class _Finished:
    """A request's result and the state it left (None when that read failed)."""

    result: object
    loaded: Loaded | None


REREAD_WAIT_S = 30.0
"""The longest a request's thread waits for the state it left (the loop is busy or exits)."""


class SwitchboardApp(App[None]):
    """Holds one EngineClient; every panel is its own widget module."""

    CSS_PATH = stylesheet_path()
    TITLE = "Switchboard"
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (NARROW_WIDTH, "-wide")]
    COMMANDS = App.COMMANDS | {PlacesProvider}
    BINDINGS = KEY_BINDINGS

    navigator_state: reactive[NavigatorState | None] = reactive(None, always_update=True,
                                                               repaint=False)

    # ------------------------------------------------------------------ setup

    def __init__(self, client: EngineClient, *, view_id: str | None = None,
                 poll_interval: float = 0.25, wake_on_change: bool = False,
                 start_server: bool = False, browser: bool = False) -> None:
        """``start_server``: make sure the home's server runs (at start, then a lock
        probe every ``SERVER_PROBE_INTERVAL``): it reconciles tmux with the registry,
        parks unseen navigators and follows the remote hosts; the navigator only shows
        what it writes (the ``ui`` command's way). ``wake_on_change``:
        the kernel wakes the navigator when a registry file is written (the ``ui``
        command's way); the stat tick then runs only every ``WATCH_TICK`` seconds as
        a backstop. Without it, or where no watch can be set up, the tick polls every
        ``poll_interval`` seconds."""
        super().__init__()
        self.client = client
        self.bound_view_id = view_id
        self.poll_interval = poll_interval
        self.wake_on_change = wake_on_change
        #: Keep the home's server running (``core.server``): reconcile, parking, remotes.
        self.start_server = start_server
        self._server_problem: str | None = None
        #: Served to a browser (``switchboard serve``): no tmux view is on screen, so
        #: the preview captures the agent a view shows too (read-only).
        self.preview_shown = browser
        self.current_view_id: str | None = view_id
        self._jobs = Jobs()
        self.refresher = Refresher(self)
        self._new_recoveries = NewRecoveries()
        self.inbox_messages: list[Any] = []
        self.memory = PaneMemory(self, UiStateStore(client, view_id or "default"))
        self.navigator_width = client.navigator_width()
        self.layout_kind: LayoutKind | None = None
        self._stack_pending = False
        from core.review.client import ReviewClient
        from navigator.review_marks import ConflictWatch

        self.review = ReviewClient(client.home, client.message_frame)
        self.conflict_watch = ConflictWatch(self, self.review)
        self._usage_timer: Timer | None = None
        self._usage_said = False
        """Whether this u's first read was announced (no usage yet, or a compact pane)."""
        """Set while ``u`` shows usage: it re-reads the session files now and then."""
        self._first_keys = FirstStateKeys(self.post_message)
        """Keys typed before the first state wait for it (see ``navigator.first_keys``)."""

    async def on_event(self, event: events.Event) -> None:
        """A key from the terminal before the first state is held for it."""
        if (isinstance(event, events.Key) and not event.is_forwarded
                and self._first_keys.hold(event)):
            return
        await super().on_event(event)

    def run(self, *args: Any, **kwargs: Any) -> None:
        """Run in this terminal, at the size its pty reports.

        Textual reads the size with ``shutil.get_terminal_size``, which prefers
        COLUMNS and LINES. A tmux pane inherits them from whoever started the
        server (GNU readline exports them on import, some shells do too), so a
        stale pair would pin the navigator to that size through every resize.
        """
        # The web driver (``switchboard serve``) is told the browser's size through
        # COLUMNS and LINES: there they are the truth, not a stale inheritance.
        if "web" not in os.environ.get("TEXTUAL_DRIVER", ""):
            for name in ("COLUMNS", "LINES"):
                os.environ.pop(name, None)
        return super().run(*args, **kwargs)

    def get_default_screen(self) -> Screen[Any]:
        return MainScreen(id="_default")

    def compose(self) -> ComposeResult:
        # Views and Recoveries only mirror the state; the tree is set by hand in
        # watch_navigator_state, because the breadcrumb reads its cursor afterwards.
        # MainScreen's stylesheet splits the edges off in this order: the breadcrumb's
        # row, the footer's, then the right column; the left panels fill the rest.
        # The DOM order is also the focus order (the footer takes no focus).
        yield TooSmallNotice(id="too-small")
        yield Breadcrumb(id="breadcrumb")
        yield ViewList(id="views").data_bind(SwitchboardApp.navigator_state)
        yield SearchBox(id="search")
        yield FrameTree(id="projects")
        yield KeyFooter()
        with Vertical(id="right"):
            yield RecoveryList(id="recoveries").data_bind(SwitchboardApp.navigator_state)
            yield InboxList(id="inbox")
            yield PanePreview(id="preview")

    def on_mount(self) -> None:
        self._reads_loop = asyncio.get_running_loop()  # request threads await reads on it
        self._fit_layout(self.size)
        self.query_one(FrameTree).set_configured_projects(self.client.configured_projects())
        self.query_one(FrameTree).focus()
        self.refresher.load(first=True)
        self.set_timer(HOLD_LIMIT_S, self._first_keys.release)
        if self.start_server:
            self._prune_remotes()
            self._probe_server()
            self.set_interval(SERVER_PROBE_INTERVAL, self._probe_server)
        tick = self.poll_interval
        if self.wake_on_change and self.refresher.watch():
            tick = max(tick, WATCH_TICK)
        self.set_interval(tick, self.refresher.poll)
        self.conflict_watch.start()

    def _prune_remotes(self) -> None:
        """Drop the cached rows of remotes no longer configured before the first state
        is shown (the server does it on every pass too, which may come later)."""
        try:
            self.client.prune_remotes()
        except (SwitchboardError, OSError) as exc:
            self.notify(f"Removed remote hosts' rows were not dropped: {problem_text(exc)}",
                        severity="warning", markup=False)

    def _probe_server(self) -> None:
        """Start the home's server unless it runs (in a worker: a start waits for its
        port file); quiet unless it cannot start, said once per run of failures."""
        if not self.group_busy(Group.SERVER):
            self.start_job(self.client.ensure_server, Group.SERVER,
                           Job(self._server_fine, self._server_failed), exclusive=True)

    def _server_fine(self, _info: object) -> None:
        self._server_problem = None

    def _server_failed(self, error: Exception) -> None:
        problem = problem_text(error)
        if self._server_problem is None:
            self.warn(f"The switchboard server could not start ({problem}): nothing "
                      "reconciles tmux with the registry until it runs; `switchboard "
                      "server` says why.", "Server not running", error=True)
        self._server_problem = problem

    def configured_project_names(self) -> dict[str, str]:
        return {p.project_id: p.name for p in self.client.configured_projects()}

    # ------------------------------------------------------------------ workers

    def start_job(self, work: Callable[[], _Target] | Callable[[], Coroutine[Any, Any, _Target]],
                  group: Group, job: Job[_Target], *,
                  exclusive: bool = False, name: str = "") -> None:
        """Run ``work`` in a thread worker (a coroutine function: on the event loop);
        ``job`` runs on the event loop when it ends."""
        worker: Worker[_Target] = self.run_worker(
            work, name=name, group=group, thread=not inspect.iscoroutinefunction(work),
            exclusive=exclusive, exit_on_error=False)
        self._jobs.track(worker, job)

    def start_load(self, work: Callable[[], _Target] | Callable[[], Coroutine[Any, Any, _Target]],
                   job: Job[_Target]) -> None:
        """A registry load in the default executor's thread, its job run on the event
        loop when it ends. Not a Textual worker: a Worker and its three state messages
        cost ~1 ms of the event loop, and every navigator loads on every hook burst. A
        coroutine function (the registry read through aiosqlite) runs as a task."""
        future: asyncio.Future[_Target]
        if inspect.iscoroutinefunction(work):
            future = asyncio.ensure_future(work())
        else:
            future = asyncio.get_running_loop().run_in_executor(
                None, cast("Callable[[], _Target]", work))
        future.add_done_callback(partial(self._load_done, job))

    def _load_done(self, job: Job[_Target], future: asyncio.Future[_Target]) -> None:
        if future.cancelled() or not self.is_running:
            return
        error = future.exception()
        if error is None:
            job.done(future.result())
        else:
            job.failed(error if isinstance(error, Exception) else RuntimeError(str(error)))

    def after(self, delay: float, callback: Callable[[], object]) -> asyncio.TimerHandle:
        """Call back on the event loop after ``delay`` seconds (a bare loop timer: the
        load gate sets one per coalesced burst)."""
        return asyncio.get_running_loop().call_later(delay, callback)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """Every worker's end: its result, or its error as the job words it."""
        self._jobs.finished(event)

    def group_busy(self, group: Group) -> bool:
        """Whether a worker of ``group`` has not finished yet (checked on the event loop,
        where workers change state, so a finishing worker is never cancelled by the
        next tick's exclusive start)."""
        return any(worker.group == group and not worker.is_finished
                   for worker in self.workers)

    # ------------------------------------------------------------------ layout

    def on_resize(self, event: events.Resize) -> None:
        self._fit_layout(event.size)
        self.refit_stack()

    def refit_stack(self) -> None:
        """Share a stacked navigator's rows again (tree first) once the screen is laid
        out: its size, the tree's rows, the inbox, the preview or the footer moved."""
        if not self._stack_pending:
            self._stack_pending = True
            self.call_after_refresh(self._refit_stack_now)

    def _refit_stack_now(self) -> None:
        self._stack_pending = False
        if self.screen is self.screen_stack[0]:
            fit_stack(self)

    def on_pane_preview_changed(self, message: PanePreview.Changed) -> None:
        self.refit_stack()

    def layout_for(self, size: Size) -> LayoutKind:
        return layout_for(size, self.navigator_width)

    def _fit_layout(self, size: Size) -> None:
        self.layout_kind = fit_layout(self, size, self.layout_for(size), self.layout_kind)

    # ------------------------------------------------------------------ loading

    def inbox_wanted(self) -> str | None:
        return self.bound_view_id or self.current_view_id

    def memory_store(self) -> UiStateStore:
        return self.memory.store

    def show_loaded(self, loaded: Loaded, layout: PaneLayout | None) -> None:
        """New state on screen; the first one also puts the remembered layout back."""
        if layout is not None:
            self.memory.layout = layout
        self.navigator_state = loaded.state
        self._say_new_recoveries(loaded.state)
        self.conflict_watch.on_state(loaded.state)
        inbox = self.query_one(InboxList)
        if loaded.inbox_problem:
            inbox.unavailable = loaded.inbox_problem
        elif loaded.inbox is not None:
            self.inbox_messages = loaded.inbox
            inbox.set_messages(loaded.inbox)
            self.refit_stack()
        self.memory.restore_once(self._restore_layout)
        if self._first_keys.holding:  # after the layout: a held key acts on this screen
            self.call_after_refresh(self._first_keys.release)

    def _say_new_recoveries(self, state: NavigatorState) -> None:
        """Once per recovery the server's reconcile opened since the last state."""
        new = self._new_recoveries.count(state)
        if new:
            what = "1 recovery needs" if new == 1 else f"{new} recoveries need"
            self.warn(f"{what} attention: {OPEN_ANYWHERE} says what to do.", "Recoveries")

    def warn(self, text: str, title: str, *, error: bool = False) -> None:
        self.notify(text, title=title, severity="error" if error else "warning", markup=False)

    def watch_navigator_state(self, state: NavigatorState | None) -> None:
        if state is None:
            return
        self.query_one(FrameTree).navigator_state = state
        self._update_breadcrumb()
        self.query_one(PanePreview).recheck()
        self.refit_stack()

    # ------------------------------------------------------------------ targets

    def _tree_ref(self) -> NodeRef | None:
        return self.query_one(FrameTree).selected_ref

    def _selection(self) -> targeting.Selection:
        """What the person points at now (see ``navigator.targeting``)."""
        focused = self.focused
        panel = (targeting.Panel.VIEWS if isinstance(focused, ViewList) else
                 targeting.Panel.TREE if isinstance(focused, FrameTree) else
                 targeting.Panel.OTHER)
        ref = self._tree_ref()
        return targeting.Selection(
            self.bound_view_id, self.current_view_id, panel,
            self.query_one(ViewList).highlighted_key,
            ref.project_id if ref is not None else None, ref.frame if ref is not None else None,
            self.query_one(RecoveryList).selected_recovery)

    def target_view(self) -> ViewRow | None:
        """The view a key acts on: the pane's own view, else the selection's view."""
        return targeting.target_view(self.navigator_state, self._selection())

    def target_frame(self) -> FrameSummary | None:
        """The selected frame in the tree, else the target view's active frame."""
        return targeting.target_frame(self.navigator_state, self._selection())

    def _accept(self, target: _Target | targeting.Refusal) -> _Target | None:
        """The target, or None after saying why the key does nothing."""
        if isinstance(target, targeting.Refusal):
            self.notify(target.text, severity="warning", markup=False)
            return None
        return target

    def _need(self, value: object, problem: str) -> bool:
        if value is None:
            self.notify(problem, severity="warning", markup=False)
            return False
        return True

    def _update_breadcrumb(self) -> None:
        """The breadcrumb (and the bold row in Views) name the view keys act on."""
        view = self.target_view()
        state = self.navigator_state
        self.query_one(ViewList).current_view_id = state.row_key(view.host_id, view.view_id) \
            if state is not None and view is not None else None
        self.query_one(Breadcrumb).show(
            view, state.host_row(view.host_id) if state is not None and view else None)

    # ------------------------------------------------------------------ requests

    def request(self, description: str, done: str, call: Callable[[], object]) -> None:
        """Run one engine request off the event loop. Its thread also reads the state
        the request left, so the screen shows it before the worker ends."""

        def work() -> _Finished:
            return _Finished(call(), self._reread())

        self.start_job(work, Group.REQUESTS,
                       Job(partial(self._request_done, description, done),
                           partial(self._request_refused, description)), name=description)

    def _reread(self) -> Loaded | None:
        """In a request's thread: the read is awaited on the event loop as every load
        is (through aiosqlite); a failed read is left to the next poll."""
        try:
            read = read_state_async(self.client, self.inbox_wanted())
            return asyncio.run_coroutine_threadsafe(read, self._reads_loop).result(REREAD_WAIT_S)
        except Exception:  # the poll will pick the change up instead
            return None

    def _request_done(self, description: str, done: str, finished: _Finished) -> None:
        state = getattr(finished.result, "state", None)
        if state in UNDONE_STATES:
            self.notify(f"The {description.lower()} transition {state}. Its recovery "
                        f"says what it left and what to do ({OPEN_ANYWHERE}); the tree "
                        "shows any frame it created.",
                        title=description, severity="warning", markup=False)
        else:
            self.notify(done, title=description, markup=False, timeout=3)
        if finished.loaded is not None:
            self.refresher.show(finished.loaded)

    def _request_refused(self, description: str, error: Exception) -> None:
        self.notify(lookup.humanize(request_problem(description, error), self.navigator_state),
                    title=f"{description} refused", severity="error", markup=False,
                    timeout=8)

    def _ask_then_request(self, ask: intents.Ask[_Answer]) -> None:
        """Show the dialog; a given answer (not None, False or empty) becomes one engine
        request, a cancelled one changes nothing."""
        def answered(answer: _Answer | None) -> None:
            if answer:
                self.request(ask.description, ask.done(answer), ask.call(answer))

        self.push_screen(ask.screen, answered)

    def request_enter_project(self, project_id: str, name: str) -> None:
        project = lookup.project_by_id(self.navigator_state, project_id)
        if project is not None and targeting.is_remote(self.navigator_state, project.host_id):
            # Another host's project: its own engine decides, through ssh in a window.
            self.request("Open remote project", f"Opening {name} over ssh",
                         partial(self.client.open_remote, project.host_id, name))
            return
        view = lookup.view_of_project(self.navigator_state, project_id)
        if view is not None:
            self.current_view_id = view.view_id
        self.request("Enter project", f"Showing {name}",
                     partial(self._enter_and_remember, name))

    def _enter_and_remember(self, name: str) -> object:
        result = self.client.enter_project(name)
        if result.view_id:
            self._show_elsewhere(result.view_id)
            self.call_from_thread(self._set_current_view, result.view_id)
        return result

    def _focus_and_show(self, view_id: str, frame_id: str) -> object:
        """Focus a frame; if its view is not the one this navigator pane serves, take
        the person's tmux client there too (in a worker thread, like every request)."""
        result = self.client.focus(view_id, frame_id)
        self._show_elsewhere(view_id)
        return result

    def _show_elsewhere(self, view_id: str) -> None:
        if self.bound_view_id and view_id != self.bound_view_id and self.client.drives_tmux:
            self.client.show_view(view_id)

    def _set_current_view(self, view_id: str) -> None:
        if not self.bound_view_id and view_id != self.current_view_id:
            self.current_view_id = view_id
            self.refresher.reload_soon()  # the inbox follows the view
        self._schedule_ui_save()

    def request_focus_frame(self, frame_id: str, project_id: str) -> None:
        state = self.navigator_state
        project = lookup.project_by_id(state, project_id)
        if project is not None and targeting.is_remote(state, project.host_id):
            self._enter_remote_frame(project.host_id, project.name, project_id, frame_id)
            return
        view = self._accept(targeting.view_to_focus(self.navigator_state, project_id))
        if view is None:
            return
        frame = lookup.frame_by_id(self.navigator_state, frame_id)
        title = frame.title if frame is not None else frame_id
        self._set_current_view(view.view_id)
        self.request("Focus", f"Showing {title}",
                     partial(self._focus_and_show, view.view_id, frame_id))

    def _enter_remote_frame(self, host_id: str, project: str, project_id: str,
                            frame_id: str) -> None:
        """Another host's frame: its engine focuses it in its view there, and the local
        window running ``ssh -t`` into that view opens (where its prompt is answered)."""
        host = self.navigator_state.host_row(host_id) if self.navigator_state else None
        if host is None or host.reachability == "offline":
            name = host.display_name if host is not None else host_id
            self.notify(f"Host {name} is offline; its frames open again once it is back.",
                        severity="warning", markup=False)
            return
        view = lookup.view_of_project(self.navigator_state, project_id)
        frame = lookup.frame_by_id(self.navigator_state, self.navigator_state.row_key(
            host_id, frame_id)) if self.navigator_state is not None else None
        focus = view is not None and frame is not None and frame.lifecycle_state == "open" \
            and view.active_frame_id != frame_id
        title = frame.title if frame is not None else project

        def enter() -> object:
            if focus and view is not None:
                self.client.remote_actions().focus(host_id, view.view_id, frame_id)
            return self.client.open_remote(host_id, project)

        self.request("Enter remote frame", f"Opening {title} on {host.display_name}", enter)

    # ------------------------------------------------------------------ key actions

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # Engine keys are off while a dialog or the palette is open.
        return not (action in BLOCKED_UNDER_DIALOGS and len(self.screen_stack) > 1)

    def _act(self, key: intents.Key) -> None:
        """Carry out what an engine key asks for (see ``navigator.intents``)."""
        intent = key(self.navigator_state, self._selection(), self.client)
        if isinstance(intent, targeting.Refusal):
            self.notify(intent.text, severity="warning", markup=False)
        elif isinstance(intent, intents.Ask):
            self._ask_then_request(intent)
        elif isinstance(intent, intents.Checked):
            checked = intent
            self.start_job(checked.check, Group.REQUESTS,
                           Job(partial(self._ask_unless, checked.then),
                               partial(self._request_refused, checked.then.description)),
                           name=checked.then.description)
        else:
            self.request(intent.description, intent.done, intent.call)

    def _ask_unless(self, ask: intents.Ask[Any], problem: str | None) -> None:
        """A checked key's dialog, or the one line saying why it is not offered."""
        if problem is not None:
            self.notify(problem, title=ask.description, severity="warning", markup=False)
        else:
            self._ask_then_request(ask)

    def action_start(self) -> None:
        self._act(intents.start)

    def action_stop(self) -> None:
        self._act(intents.stop)

    def action_go_back(self) -> None:
        """b (named apart from Textual's App.action_back, which pops a screen)."""
        self._act(intents.go_back)

    def action_cancel_transition(self) -> None:
        self._act(intents.cancel_transition)

    def action_new_task(self) -> None:
        self._act(intents.new_task)

    def action_answer(self) -> None:
        self._act(intents.answer)

    def action_message(self) -> None:
        self._act(intents.message)

    def action_inbox_stream(self) -> None:
        self._act(intents.inbox_stream)

    def action_complete(self) -> None:
        self._act(intents.complete)

    def action_close_frame(self) -> None:
        ref = self._tree_ref()
        if isinstance(self.focused, FrameTree) and ref is not None and \
                ref.kind is NodeKind.EXTRA and ref.extra_id is not None:
            # x on an extra pane closes that pane only (core.reconcile.foreign)
            self.request("Close", "Closed the extra pane",
                         partial(self.client.close_extra_pane, ref.extra_id))
            return
        self._act(intents.close_frame)

    def action_reopen(self) -> None:
        self._act(intents.reopen)

    def action_switch_provider(self) -> None:
        self._act(intents.switch_provider)

    def action_fork(self) -> None:
        self._act(intents.fork)

    def action_toggle_mode(self) -> None:
        self._act(intents.toggle_mode)

    def action_recover(self) -> None:
        self._act(intents.recover)

    def action_details(self) -> None:
        frame = self.target_frame()
        if not self._need(frame, "Select a frame to see its session's tool runs and events."):
            return
        assert frame is not None
        # a thread worker: the session file is read off the event loop
        self.start_job(partial(self.client.session_detail, frame.frame_id), Group.DETAILS,
                       Job(partial(self._show_details, frame.title, frame.frame_id, None),
                           self._details_failed), exclusive=True)

    def _show_details(self, title: str, frame_id: str, anchor: tuple[str, str | None] | None,
                      detail: SessionDetail) -> None:
        from navigator.screens.session_detail import SessionDetailScreen  # on demand: RSS

        self.push_screen(SessionDetailScreen(
            title, detail, anchor=anchor,
            conflicts=self.conflict_watch.by_frame.get(frame_id, ()),
            prices=self.client.engine.config.prices))

    #: Seconds between usage reads while ``u`` shows usage (the session files change at
    #: each turn end; nothing is read while usage is hidden).
    USAGE_REFRESH_S = 10.0

    def action_toggle_usage(self) -> None:
        """u: each frame's tokens and estimated cost after its title, and the fleet's in
        the Projects panel's border; u again hides them."""
        tree = self.query_one(FrameTree)
        if self._usage_timer is not None:
            self._usage_timer.stop()
            self._usage_timer = None
            tree.set_usage({})
            tree.border_subtitle = ""
            return
        self._usage_timer = self.set_interval(self.USAGE_REFRESH_S, self._read_usage)
        self._usage_said = False
        self._read_usage()

    def _read_usage(self) -> None:
        from core.usage.report import fleet_brief

        if not self.group_busy(Group.USAGE):
            self.start_job(partial(fleet_brief, self.client.home.root,
                                   self.client.engine.config.prices), Group.USAGE,
                           Job(self._show_usage, self._details_failed), exclusive=True)

    def _show_usage(self, brief: FleetBrief) -> None:
        if self._usage_timer is None:
            return  # hidden again while it was read
        tree = self.query_one(FrameTree)
        tree.set_usage(brief.per_frame)
        limited = sum(1 for project in (self.navigator_state.projects
                                        if self.navigator_state else ())
                      for frame in project.frames if frame.current_session is not None
                      and frame.current_session.activity_reason == "usage_limit")
        tree.border_subtitle = brief.line + (f" · {limited} limited" if limited else "")
        if not self._usage_said:  # once per u: never a key that shows nothing, silently
            self._usage_said = True
            if not brief.per_frame:
                self.notify("No usage is recorded yet: tokens and cost are read from each "
                            "agent's own transcript once it has worked a turn, and no "
                            "session here has one (u again hides this).", title="Usage",
                            markup=False)
            elif self.layout_kind is LayoutKind.COMPACT:  # no bottom border to show it
                self.notify(tree.border_subtitle, title="Usage", markup=False)

    def action_diff(self) -> None:
        """v: the frame's change since its base (git in a worker), then the diff screen."""
        frame = self.target_frame()
        if not self._need(frame, "Select a frame to review what it changed."):
            return
        assert frame is not None
        self.start_job(partial(self.review.frame_diff, frame.frame_id), Group.DETAILS,
                       Job(self._show_diff, self._details_failed), exclusive=True)

    def _show_diff(self, diff: FrameDiff) -> None:
        from navigator.screens.diff import DiffScreen  # on demand: RSS

        self.push_screen(DiffScreen(diff, self.review))

    def action_find(self) -> None:
        """ctrl+f: search every session; a chosen hit opens its frame's timeline there."""
        from navigator.screens.search import SearchScreen  # on demand: RSS

        self.push_screen(SearchScreen(self.review), self._open_hit)

    def _open_hit(self, hit: SearchResult | None) -> None:
        if hit is None or hit.frame_id is None:
            return
        self.start_job(partial(self.client.session_detail, hit.frame_id, 200), Group.DETAILS,
                       Job(partial(self._show_details, hit.frame_title, hit.frame_id,
                                   (hit.at, hit.anchor)), self._details_failed),
                       exclusive=True)

    def _details_failed(self, error: Exception) -> None:
        """A refused read (a foreign or newer session file) says why; nothing else does."""
        if isinstance(error, SwitchboardError):
            self.notify(error.message, title="Details", severity="warning", markup=False)

    def action_search(self) -> None:
        search = self.query_one(SearchBox)
        search.add_class("-visible")
        search.focus()

    def action_help(self) -> None:
        from navigator.screens.help import HelpScreen  # on demand: RSS

        self.push_screen(HelpScreen(self.key_help()))

    def key_help(self) -> list[tuple[str, str]]:
        """Every key of the app and its panels, for the help screen and README."""
        from navigator.screens.help import key_help

        return key_help(binding for binding in self.BINDINGS if isinstance(binding, Binding))

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        for binding in self.BINDINGS:
            assert isinstance(binding, Binding)
            if binding.action in PANEL_ONLY_ACTIONS:
                continue  # the panel lists its own entry for its selected row
            yield SystemCommand(binding.description, binding.tooltip or binding.description,
                                partial(self.run_action, binding.action))
        yield from self.query_one(RecoveryList).system_commands()
        yield from self.query_one(InboxList).system_commands()

    def action_acknowledge_anywhere(self) -> None:
        """``a`` outside the Inbox: say where it works (never silent)."""
        self.query_one(InboxList).say_where_a_works()

    def action_dismiss_anywhere(self) -> None:
        """``d`` outside Recoveries: say where it works (never silent)."""
        self.query_one(RecoveryList).say_where_d_works()

    # ------------------------------------------------------------------ panel intents

    def on_frame_tree_focus_requested(self, message: FrameTree.FocusRequested) -> None:
        self.request_focus_frame(message.frame_id, message.project_id)

    def on_frame_tree_project_enter_requested(
            self, message: FrameTree.ProjectEnterRequested) -> None:
        self.request_enter_project(message.project_id, message.project_name)

    def on_frame_tree_extra_pane_requested(self, message: FrameTree.ExtraPaneRequested
                                           ) -> None:
        self.request("Show", "Showing the extra pane",
                     partial(self.client.show_extra_pane, message.extra_id))

    def on_frame_tree_history_selected(self, message: FrameTree.HistorySelected) -> None:
        self.notify(f"“{message.title}” is closed (History is read-only); press r to reopen "
                    "it.", markup=False)

    def on_frame_tree_layout_changed(self, message: FrameTree.LayoutChanged) -> None:
        self._schedule_ui_save()

    def on_view_list_enter_requested(self, message: ViewList.EnterRequested) -> None:
        self._set_current_view(message.view_id)
        project = lookup.project_by_id(self.navigator_state, message.project_id)
        if self._need(project, "This view shows no project; its recovery says what to do "
                      f"({OPEN_ANYWHERE})."):
            assert project is not None and message.project_id is not None
            self.request_enter_project(message.project_id, project.name)  # its row key

    def on_inbox_list_ack_requested(self, message: InboxList.AckRequested) -> None:
        self.request("Acknowledge", "Message acknowledged",
                     partial(self.client.ack, message.message_id))

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "search":
            self.query_one(FrameTree).filter_text = event.value

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "search":
            frames = self.query_one(FrameTree)
            frames.focus()
            frames.select_first_match()  # enter jumps to the match; the filter stays

    def action_clear_filter(self) -> None:
        """Escape after a search: the whole tree again (escape in the box does the same)."""
        if self.query_one(FrameTree).filter_text:
            self.query_one(SearchBox).action_clear_search()

    def on_search_box_cleared(self, message: SearchBox.Cleared) -> None:
        self.query_one(SearchBox).remove_class("-visible")
        self.query_one(FrameTree).filter_text = ""
        self.query_one(FrameTree).focus()

    def on_tree_node_highlighted(self, event: Tree.NodeHighlighted[NodeRef]) -> None:
        self._update_breadcrumb()
        self._schedule_ui_save()
        self.query_one(PanePreview).follow()

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        self._update_breadcrumb()
        self._schedule_ui_save()

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        self._update_breadcrumb()
        self.refit_stack()  # the footer's keys, so its rows, follow the focus
        self._schedule_ui_save()

    # ------------------------------------------------------------------ recoveries

    def on_recovery_list_recover_requested(self, message: RecoveryList.RecoverRequested
                                           ) -> None:
        self.request("Recover", "Recovery handled",
                     partial(self.client.recover, message.recovery_id))

    def on_recovery_list_dismiss_requested(self, message: RecoveryList.DismissRequested
                                           ) -> None:
        self.request("Dismiss recovery", "Recovery dismissed",
                     partial(self.client.dismiss_recovery, message.recovery_id))

    def locate_recovery(self, recovery: RecoveryRow,
                        then: Callable[[RecoveryRow, SubjectPlace], None]) -> None:
        """Find the recovery's view and frame off the event loop, then call ``then``; a
        failed read only loses the "where" (the explanation still helps)."""
        self.start_job(partial(self.client.recovery_subject, recovery.subject_type,
                               recovery.subject_id), Group.RECOVERY_SUBJECT,
                       Job(partial(then, recovery),
                           lambda _: then(recovery, SubjectPlace(None, None))), exclusive=True)

    def show_place(self, view: ViewRow | None, frame: FrameSummary | None) -> None:
        """Select a view and a frame in the panels; an open frame its view does not show
        is focused there (navigation only)."""
        if view is not None:
            self._set_current_view(view.view_id)
            self.query_one(ViewList).highlight_key(view.view_id)
        frames = self.query_one(FrameTree)
        if frame is not None:
            frames.select_key(frame_key(frame.frame_id))
            if (view is not None and frame.lifecycle_state == "open"
                    and view.active_frame_id != frame.frame_id):
                self.request("Focus", f"Showing {frame.title}",
                             partial(self._focus_and_show, view.view_id, frame.frame_id))
        frames.focus()

    # ------------------------------------------------------------------ preview

    def fetch_preview(self, frame_id: str,
                      then: Callable[[list[str] | None], None]) -> None:
        """Read a frame's pane off the event loop; a preview is a convenience: a failed
        read clears it, no toast."""
        self.start_job(partial(self.client.preview, frame_id), Group.PREVIEW,
                       Job(then, lambda _: then(None)), exclusive=True)

    # ------------------------------------------------------------------ UI state

    def _restore_layout(self, layout: PaneLayout) -> None:
        if not self.bound_view_id and layout.current_view is not None:
            self.current_view_id = layout.current_view
        apply_layout(self, layout)
        self._update_breadcrumb()

    def _schedule_ui_save(self) -> None:
        self.memory.snapshot(self.current_view_id)

    def on_unmount(self) -> None:
        self.refresher.stop()
        self.memory.flush()
