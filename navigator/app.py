"""The Switchboard navigator: a thin App that composes panels and routes intents.

Data flows down: a thread worker rebuilds NavigatorState only when the
client's cheap ``data_version()`` changes, and the app hands it to each
panel's reactive attribute; panels reconcile instead of being recreated.
Every few seconds another thread worker reconciles tmux with the registry
(watchdog, expired leases, exited providers, stale activity), so what it
changes reaches the screen through the same data_version check.
Intent flows up: panels post nested messages, keys are bound actions, and
every one becomes one EngineClient request (a fresh request id, the same
engine the CLI uses) in a thread worker, so the event loop never waits on
SQLite or tmux. Errors become notifications that say what to do next.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from enum import StrEnum
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from textual import events, work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.containers import Container, Vertical
from textual.css.query import NoMatches
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Input, OptionList, Tree

from core.client import EngineClient, SubjectPlace
from core.config import NAVIGATOR_WIDTH_RANGE
from core.errors import SwitchboardError
from core.state_types import FrameSummary, NavigatorState, ProjectRow, RecoveryRow, ViewRow
from navigator.lookup import (
    frame_by_id,
    frame_with_project,
    host_of_frame,
    humanize,
    live_views,
    project_by_id,
    view_by_id,
    view_of_project,
)
from navigator.palette import PlacesProvider
from navigator.screens.complete import CompleteReturnScreen
from navigator.screens.compose import ComposeMessageScreen
from navigator.screens.confirm import ConfirmScreen
from navigator.screens.help import HelpScreen
from navigator.screens.new_task import NewTaskScreen
from navigator.screens.recovery import RecoveryExplanationScreen
from navigator.screens.session_detail import SessionDetailScreen
from navigator.ui_state import UiStateStore
from navigator.widgets.breadcrumb import Breadcrumb
from navigator.widgets.footer import KeyFooter
from navigator.widgets.frames import FrameTree, NodeRef, frame_key
from navigator.widgets.inbox import InboxList
from navigator.widgets.preview import PanePreview
from navigator.widgets.recoveries import RecoveryList
from navigator.widgets.search import SearchBox
from navigator.widgets.too_small import Shortfall, TooSmallNotice
from navigator.widgets.views import ViewList

#: App keys that are off while a dialog, the help or the palette is open.
_Answer = TypeVar("_Answer")
"""What a dialog dismisses with (a confirmation, a task, a message, a handoff)."""

BLOCKED_UNDER_DIALOGS = frozenset({"start", "stop", "back", "complete", "close_frame",
                                   "reopen", "toggle_mode", "recover", "search", "help",
                                   "details", "acknowledge_anywhere", "dismiss_anywhere",
                                   "new_task"})
PANELS = ("views", "projects", "recoveries", "inbox")
#: Below this many columns the panels stack (the navigator as a sidebar pane).
NARROW_WIDTH = 60
#: Every this many poll ticks the navigator reads data_version even when no file moved
#: (a backstop against a commit that left size and mtime as they were: 5 s at 4/s).
FULL_CHECK_TICKS = 20

#: Seconds between reconciles of tmux with the registry while the navigator runs.
RECONCILE_INTERVAL = 10.0
#: The navigator pane's width when the config names none (config `tmux.navigator_width`).
DEFAULT_NAVIGATOR_WIDTH = 40
#: The compact layout's minimum: narrower or lower than this, only one line says so.
#: The width is the smallest the config accepts, so a configured width always renders.
MIN_COLUMNS = NAVIGATOR_WIDTH_RANGE[0]
MIN_ROWS = 5
#: Fewer rows than this also get the compact layout: two columns (from NARROW_WIDTH)
#: need COMPACT_ROWS, the stacked sidebar SIDEBAR_ROWS (its footer alone wraps to 3).
COMPACT_ROWS = 16
SIDEBAR_ROWS = 22
#: Fewer rows than this: the compact layout shows only the breadcrumb, tree and footer.
SHORT_ROWS = 14


class LayoutKind(StrEnum):
    """Which layout the pane's size allows (App classes ``-too-small``, ``-compact``)."""

    TOO_SMALL = "too_small"
    COMPACT = "compact"
    FULL = "full"


def stylesheet_path() -> Path:
    """The canonical stylesheet in the top-level ``styles/`` folder.

    A source checkout or editable install finds it beside the package; a
    wheel install falls back to the copy shipped as package data
    (``navigator/switchboard.tcss``, a symlink to the canonical file in git).
    """
    canonical = Path(__file__).resolve().parent.parent / "styles" / "switchboard.tcss"
    if canonical.is_file():
        return canonical
    return Path(__file__).resolve().parent / "switchboard.tcss"


class SwitchboardApp(App[None]):
    """Holds one EngineClient; every panel is its own widget module."""

    CSS_PATH = stylesheet_path()
    TITLE = "Switchboard"
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (NARROW_WIDTH, "-wide")]
    COMMANDS = App.COMMANDS | {PlacesProvider}
    BINDINGS = [
        Binding("n", "start", "Start", tooltip="start (or resume) the frame's agent"),
        Binding("s", "stop", "Stop", tooltip="stop the frame's agent; n resumes its session"),
        Binding("b", "back", "Back", tooltip="show the parent; the task stays open"),
        Binding("c", "complete", "Complete", tooltip="complete the task and return"),
        Binding("x", "close_frame", "Close", tooltip="close the task without a handoff"),
        Binding("w", "cancel_transition", "Withdraw",
                tooltip="cancel the view's push or return while it waits for a Stop"),
        Binding("r", "reopen", "Reopen", tooltip="reopen a closed frame from History"),
        Binding("m", "toggle_mode", "Mode", tooltip="toggle navigator/direct mode"),
        Binding("R", "recover", "Recover", key_display="R",
                tooltip="run the selected recovery (safe_auto ones only)"),
        Binding("i", "details", "Details", tooltip="the frame's session: tool runs and events"),
        Binding("p", "new_task", "Task",
                tooltip="push a new task under the selected frame (title and brief)"),
        Binding("t", "message", "Message", tooltip="message the frame's agent (replies: Inbox)"),
        Binding("l", "inbox_stream", "Stream",
                tooltip="open/close the read-only inbox stream pane in the view"),
        Binding("slash", "search", "Search", key_display="/"),
        Binding("escape", "clear_filter", "Clear filter", show=False),
        # a and d act in their panels; pressed anywhere else they say where (never silent)
        Binding("a", "acknowledge_anywhere", "Acknowledge", show=False),
        Binding("d", "dismiss_anywhere", "Dismiss", show=False),
        Binding("question_mark", "help", "Help", key_display="?"),
    ]

    navigator_state: reactive[NavigatorState | None] = reactive(None, always_update=True,
                                                               repaint=False)

    # ------------------------------------------------------------------ messages

    class StateLoaded(Message):
        """A worker built a new NavigatorState (and maybe the inbox)."""

        def __init__(self, state: NavigatorState, version: int, inbox: list[Any] | None,
                     inbox_problem: str | None, ui_state: dict[str, Any] | None = None
                     ) -> None:
            super().__init__()
            self.state = state
            self.version = version
            self.inbox = inbox
            self.inbox_problem = inbox_problem
            self.ui_state = ui_state

    class LoadFailed(Message):
        def __init__(self, problem: str) -> None:
            super().__init__()
            self.problem = problem

    class ReconcileFinished(Message):
        """A periodic reconcile ended: how many recoveries it opened, or why it failed."""

        def __init__(self, opened: int, problem: str | None) -> None:
            super().__init__()
            self.opened = opened
            self.problem = problem

    class RequestFinished(Message):
        """One engine request ended; ``problem`` is set when it was refused."""

        def __init__(self, description: str, done: str, result: Any,
                     problem: str | None) -> None:
            super().__init__()
            self.description = description
            self.done = done
            self.result = result
            self.problem = problem

    # ------------------------------------------------------------------ setup

    def __init__(self, client: EngineClient, *, view_id: str | None = None,
                 poll_interval: float = 0.25, reconcile_interval: float | None = None
                 ) -> None:
        """``reconcile_interval``: seconds between reconciles of tmux with the registry.
        None means RECONCILE_INTERVAL when the client drives tmux (a stage) and off
        without one (test and demo registries); 0 turns it off."""
        super().__init__()
        self.client = client
        self.bound_view_id = view_id
        self.poll_interval = poll_interval
        if reconcile_interval is None:
            has_stage = getattr(client.engine, "stage", None) is not None
            reconcile_interval = RECONCILE_INTERVAL if has_stage else 0
        self.reconcile_interval = reconcile_interval
        self.current_view_id: str | None = view_id
        self.data_version: int | None = None
        self._stamp: tuple | None = None
        self._ticks = 0
        self._reconcile_problem: str | None = None
        self._restored = False
        self._ui_snapshot: dict[str, Any] = {}
        self._save_timer: Any = None
        self._load_problem: str | None = None
        self.inbox_messages: list[Any] = []
        self.ui_store = UiStateStore(client, view_id or "default")
        self.navigator_width = self._configured_width()
        self.layout_kind: LayoutKind | None = None

    def _configured_width(self) -> int:
        """The width tmux gives this pane when there is room (config `tmux.navigator_width`)."""
        try:
            return int(self.client.engine.config.tmux.navigator_width)
        except (AttributeError, TypeError, ValueError):
            return DEFAULT_NAVIGATOR_WIDTH

    def run(self, *args: Any, **kwargs: Any) -> None:
        """Run in this terminal, at the size its pty reports.

        Textual reads the size with ``shutil.get_terminal_size``, which prefers
        COLUMNS and LINES. A tmux pane inherits them from whoever started the
        server (GNU readline exports them on import, some shells do too), so a
        stale pair would pin the navigator to that size through every resize.
        """
        for name in ("COLUMNS", "LINES"):
            os.environ.pop(name, None)
        return super().run(*args, **kwargs)

    def compose(self) -> ComposeResult:
        yield TooSmallNotice(id="too-small")
        yield Breadcrumb(id="breadcrumb")
        with Container(id="body"):
            with Vertical(id="left"):
                yield ViewList(id="views")
                yield SearchBox(id="search")
                yield FrameTree(id="projects")
            with Vertical(id="right"):
                yield RecoveryList(id="recoveries")
                yield InboxList(id="inbox")
                yield PanePreview(id="preview")
        yield KeyFooter()

    def on_mount(self) -> None:
        self._fit_layout(self.size)
        self.query_one(FrameTree).set_configured_projects(self._configured_projects())
        self.query_one(FrameTree).focus()
        self._load(first=True)
        self.set_interval(self.poll_interval, self._poll)
        if self.reconcile_interval:
            self._reconcile_tick()  # a restarted navigator first checks tmux
            self.set_interval(self.reconcile_interval, self._reconcile_tick)

    # ------------------------------------------------------------------ reconcile

    def _reconcile_tick(self) -> None:
        """Start a reconcile unless one still runs (a slow tmux never piles them up)."""
        if not self._group_busy("reconcile"):
            self._reconcile()

    def _group_busy(self, group: str) -> bool:
        """Whether a worker of ``group`` has not finished yet (checked on the event loop,
        where workers change state, so a finishing worker is never cancelled by the
        next tick's exclusive start)."""
        return any(worker.group == group and not worker.is_finished
                   for worker in self.workers)

    @work(thread=True, exclusive=True, group="reconcile", exit_on_error=False)
    def _reconcile(self) -> None:
        """Watchdog, expired leases, exited providers, stale activity: what it writes
        changes data_version, so the next poll redraws (an aged badge included)."""
        try:
            report = self.client.reconcile_if_due(self.reconcile_interval)
        except SwitchboardError as exc:
            self.post_message(self.ReconcileFinished(0, exc.message))
        except Exception as exc:  # the navigator still browses; the next tick retries
            self.post_message(self.ReconcileFinished(0, f"{type(exc).__name__}: {exc}"))
        else:
            if report is None:
                return  # another navigator of this host has the turn
            self.post_message(self.ReconcileFinished(
                getattr(report, "recoveries_opened", 0), None))

    def on_switchboard_app_reconcile_finished(self, message: ReconcileFinished) -> None:
        """Quiet: speaks only when recoveries were opened, and once per run of failures."""
        if message.problem is not None:
            if self._reconcile_problem is None:
                self.notify(f"Could not check tmux against the registry ({message.problem}). "
                            f"The navigator retries every {self.reconcile_interval:g} s; "
                            "`switchboard reconcile` shows the whole error.",
                            title="Reconcile failed", severity="warning", markup=False)
            self._reconcile_problem = message.problem
            return
        self._reconcile_problem = None
        if message.opened:
            what = "1 recovery needs" if message.opened == 1 else \
                f"{message.opened} recoveries need"
            self.notify(f"{what} attention; see the Recoveries panel.", title="Recoveries",
                        severity="warning", markup=False)

    def on_resize(self, event: events.Resize) -> None:
        self._fit_layout(event.size)

    def layout_for(self, size: Size) -> LayoutKind:
        """Too small below MIN_COLUMNS x MIN_ROWS; compact below the configured navigator
        width or the rows the full layout needs; else the full layout (two columns from
        NARROW_WIDTH)."""
        if size.width < MIN_COLUMNS or size.height < MIN_ROWS:
            return LayoutKind.TOO_SMALL
        rows = COMPACT_ROWS if size.width >= NARROW_WIDTH else SIDEBAR_ROWS
        if size.width < self.navigator_width or size.height < rows:
            return LayoutKind.COMPACT
        return LayoutKind.FULL

    def _fit_layout(self, size: Size) -> None:
        """Switch layouts with App classes, so every screen (dialogs too) follows.

        A pane too small for anything hides every panel (nothing lays out text in
        zero cells) and shows one line saying what it needs; the compact layout
        drops borders and idle panels and keeps a one-row footer. A 40-column
        sidebar gets Textual's compact footer keys (no padding).
        """
        kind = self.layout_for(size)
        self.query_one(TooSmallNotice).shortfall = Shortfall(
            MIN_COLUMNS, MIN_ROWS, size.width, size.height)
        footer = self.query_one(KeyFooter)
        footer.compact = size.width < NARROW_WIDTH
        footer.brief = kind is not LayoutKind.FULL
        was_hidden = self.layout_kind is LayoutKind.TOO_SMALL
        self.layout_kind = kind
        self.set_class(kind is LayoutKind.TOO_SMALL, "-too-small")
        self.set_class(kind is LayoutKind.COMPACT, "-compact")
        self.set_class(kind is LayoutKind.COMPACT and size.height < SHORT_ROWS, "-short")
        if was_hidden and self.screen is self.screen_stack[0] and self.focused is None:
            self.query_one(FrameTree).focus()  # hidden panels lost the focus

    def _configured_projects(self) -> list[ProjectRow]:
        """Projects in config that were never entered have no registry row yet."""
        host_id = "00000000-0000-4000-8000-000000000000"
        try:
            config = self.client.engine.config
            host_id = config.host.host_id
            projects = config.projects
        except AttributeError:
            return []
        return [ProjectRow(project_id=p.project_id, host_id=host_id, name=p.name)
                for p in projects]

    def configured_project_names(self) -> dict[str, str]:
        return {p.project_id: p.name for p in self._configured_projects()}

    # ------------------------------------------------------------------ loading

    def _poll(self) -> None:
        """Start a load only when a registry or broker file moved (a few stats on the
        event loop), or every ``FULL_CHECK_TICKS`` ticks as a backstop."""
        self._ticks += 1
        stamp = self._change_stamp()
        if (stamp is not None and stamp == self._stamp and self.data_version is not None
                and self._ticks % FULL_CHECK_TICKS):
            return
        if not self._group_busy("load"):
            self._stamp = stamp
            self._load(first=False)

    def _change_stamp(self) -> tuple | None:
        """The client's file stamp; None (always load) for a client without one."""
        stamp = getattr(self.client, "change_stamp", None)
        if stamp is None:
            return None
        try:
            return stamp()
        except Exception:  # a broken stamp must never stop loading
            return None

    @work(thread=True, exclusive=True, group="load", exit_on_error=False)
    def _load(self, first: bool) -> None:
        """Rebuild state only when the registry (or broker) changed."""
        try:
            ui_state = self._read_ui_state() if first else None
            version = self.client.data_version()
            if not first and version == self.data_version:
                return
            state = self.client.state()
            inbox, problem = self._fetch_inbox(state)
            self.post_message(self.StateLoaded(state, version, inbox, problem, ui_state))
        except SwitchboardError as exc:
            self.post_message(self.LoadFailed(exc.message))
        except Exception as exc:  # the navigator must outlive a bad read
            self.post_message(self.LoadFailed(f"{type(exc).__name__}: {exc}"))

    def _fetch_inbox(self, state: NavigatorState) -> tuple[list[Any] | None, str | None]:
        view_id = self._inbox_view_id(state)
        if view_id is None:
            return [], None
        try:
            return list(self.client.inbox(view_id)), None
        except (NotImplementedError, ImportError, AttributeError):
            return None, "inbox unavailable: the broker is not set up"
        except SwitchboardError as exc:
            return None, f"inbox unavailable: {exc.message}"

    def _inbox_view_id(self, state: NavigatorState) -> str | None:
        wanted = self.bound_view_id or self.current_view_id
        live = [v.view_id for v in state.views if v.state != "retired"]
        if wanted in live:
            return wanted
        return live[0] if live else None

    def on_switchboard_app_state_loaded(self, message: StateLoaded) -> None:
        self.data_version = message.version
        self._load_problem = None
        if message.ui_state is not None:
            self._ui_snapshot = message.ui_state
        self.navigator_state = message.state
        inbox = self.query_one(InboxList)
        if message.inbox_problem:
            inbox.unavailable = message.inbox_problem
        elif message.inbox is not None:
            self.inbox_messages = message.inbox
            inbox.set_messages(message.inbox)
        if not self._restored:
            self._restored = True
            self._restore_ui_state(self._ui_snapshot)

    def on_switchboard_app_load_failed(self, message: LoadFailed) -> None:
        if message.problem == self._load_problem:
            return  # the poll retries every tick; say it once per distinct problem
        self._load_problem = message.problem
        self.notify(f"Could not read the registry: {message.problem}. The navigator keeps "
                    "the last state and retries; check `switchboard state navigator --json`.",
                    title="Refresh failed", severity="error", markup=False)

    def watch_navigator_state(self, state: NavigatorState | None) -> None:
        if state is None:
            return
        self.query_one(ViewList).navigator_state = state
        self.query_one(FrameTree).navigator_state = state
        self.query_one(RecoveryList).navigator_state = state
        self._update_breadcrumb()

    # ------------------------------------------------------------------ targets

    def _views(self) -> tuple[ViewRow, ...]:
        return live_views(self.navigator_state)

    def _view(self, view_id: str | None) -> ViewRow | None:
        return view_by_id(self.navigator_state, view_id)

    def _view_of_project(self, project_id: str | None) -> ViewRow | None:
        return view_of_project(self.navigator_state, project_id)

    def _frame(self, frame_id: str | None) -> FrameSummary | None:
        return frame_by_id(self.navigator_state, frame_id)

    def _host_of_frame(self, frame_id: str) -> str | None:
        return host_of_frame(self.navigator_state, frame_id)

    def _remote(self, host_id: str | None, *, quiet: bool = False) -> bool:
        """Cached state of another host is shown, never acted on from here."""
        state = self.navigator_state
        if state is None or host_id is None or host_id == state.local_host_id:
            return False
        if quiet:
            return True
        host = state.host_row(host_id)
        name = host.display_name if host is not None else host_id
        self.notify(f"This belongs to host {name}; its state here is a read-only cache. Run "
                    f"the action on {name}.", severity="warning", markup=False)
        return True

    def _tree_ref(self) -> NodeRef | None:
        return self.query_one(FrameTree).selected_ref

    def target_view(self) -> ViewRow | None:
        """The view a key acts on: the pane's own view, else the selection's view."""
        if self.bound_view_id:
            return self._view(self.bound_view_id)
        focused = self.focused
        if isinstance(focused, ViewList):
            view = self._view(focused.highlighted_key)
            if view is not None:
                return view
        ref = self._tree_ref()
        if isinstance(focused, FrameTree) and ref is not None:
            view = self._view_of_project(ref.project_id)
            if view is not None:
                return view
        return self._view(self.current_view_id) or (self._views()[0] if self._views()
                                                    else None)

    def target_frame(self) -> FrameSummary | None:
        """The selected frame in the tree, else the target view's active frame."""
        ref = self._tree_ref()
        if isinstance(self.focused, FrameTree) and ref is not None and ref.frame is not None:
            return self._frame(ref.frame.frame_id) or ref.frame
        view = self.target_view()
        return self._frame(view.active_frame_id) if view is not None else None

    def _update_breadcrumb(self) -> None:
        """The breadcrumb (and the bold row in Views) name the view keys act on."""
        view = self.target_view()
        self.query_one(ViewList).current_view_id = view.view_id if view is not None else None
        crumb = self.query_one(Breadcrumb)
        crumb.view = view
        state = self.navigator_state
        crumb.host = state.host_row(view.host_id) if state is not None and view else None

    # ------------------------------------------------------------------ requests

    def _ask_then_request(self, screen: Screen[_Answer], description: str,
                          done: Callable[[_Answer], str],
                          call: Callable[[_Answer], Callable[[], Any]]) -> None:
        """Show a dialog; a given answer (not None, False or empty) becomes one engine
        request, a cancelled one changes nothing."""
        def answered(answer: _Answer | None) -> None:
            if answer:
                self.request(description, done(answer), call(answer))

        self.push_screen(screen, answered)

    def request(self, description: str, done: str, call: Callable[[], Any]) -> None:
        """Run one engine request off the event loop; the result comes back as a message."""
        self._run_request(description, done, call)

    @work(thread=True, group="requests", exit_on_error=False)
    def _run_request(self, description: str, done: str, call: Callable[[], Any]) -> None:
        try:
            result = call()
        except SwitchboardError as exc:
            self.post_message(self.RequestFinished(description, done, None, exc.message))
            return
        except (NotImplementedError, ImportError):
            self.post_message(self.RequestFinished(
                description, done, None,
                f"{description} is not available in this build yet; use the CLI "
                "(`switchboard --help`)."))
            return
        except Exception as exc:  # never a traceback in the person's face
            self.post_message(self.RequestFinished(
                description, done, None,
                f"{description} failed unexpectedly ({type(exc).__name__}: {exc}). Nothing "
                "is retried automatically; check `switchboard state navigator --json`."))
            return
        self.post_message(self.RequestFinished(description, done, result, None))
        self._reload_after_request()

    def _reload_after_request(self) -> None:
        """Runs in the request's thread so the new state is posted before it ends."""
        try:
            version = self.client.data_version()
            state = self.client.state()
            inbox, problem = self._fetch_inbox(state)
        except Exception:  # the poll will pick the change up instead
            return
        self.post_message(self.StateLoaded(state, version, inbox, problem))

    def on_switchboard_app_request_finished(self, message: RequestFinished) -> None:
        state = getattr(message.result, "state", None)
        if message.problem is not None:
            self.notify(humanize(message.problem, self.navigator_state),
                        title=f"{message.description} refused",
                        severity="error", markup=False, timeout=8)
        elif state in ("failed", "cancelled", "superseded"):
            self.notify(f"The {message.description.lower()} transition {state}; nothing "
                        "else was changed. Check the Recoveries panel, then try again.",
                        title=message.description, severity="warning", markup=False)
        else:
            self.notify(message.done, title=message.description, markup=False, timeout=3)

    def _need(self, value: Any, problem: str) -> bool:
        if value is None:
            self.notify(problem, severity="warning", markup=False)
            return False
        return True

    def request_enter_project(self, project_id: str, name: str) -> None:
        project = project_by_id(self.navigator_state, project_id)
        state = self.navigator_state
        if project is not None and state is not None and \
                project.host_id != state.local_host_id:
            # Another host's project: its own engine decides, through ssh in a window.
            self.request("Open remote project", f"Opening {name} over ssh",
                         partial(self.client.open_remote, project.host_id, name))
            return
        self.current_view_id = getattr(self._view_of_project(project_id), "view_id",
                                       self.current_view_id)
        self.request("Enter project", f"Showing {name}",
                      partial(self._enter_and_remember, name))

    def _enter_and_remember(self, name: str) -> Any:
        result = self.client.enter_project(name)
        view_id = getattr(result, "view_id", None)
        if view_id:
            self._show_elsewhere(view_id)
            self.call_from_thread(self._set_current_view, view_id)
        return result

    def _focus_and_show(self, view_id: str, frame_id: str) -> Any:
        """Focus a frame; if its view is not the one this navigator pane serves, take
        the person's tmux client there too (in a worker thread, like every request)."""
        result = self.client.focus(view_id, frame_id)
        self._show_elsewhere(view_id)
        return result

    def _show_elsewhere(self, view_id: str) -> None:
        if self.bound_view_id and view_id != self.bound_view_id and \
                getattr(self.client.engine, "stage", None) is not None:
            self.client.show_view(view_id)

    def _set_current_view(self, view_id: str) -> None:
        if not self.bound_view_id and view_id != self.current_view_id:
            self.current_view_id = view_id
            self.data_version = None  # the inbox follows the view: reload on the next tick
        self._schedule_ui_save()

    def request_focus_frame(self, frame_id: str, project_id: str) -> None:
        view = self._view_of_project(project_id)
        frame = self._frame(frame_id)
        if not self._need(view, "This project has no view yet: select the project and "
                                "press enter to create it."):
            return
        assert view is not None
        if self._remote(view.host_id):
            return
        title = frame.title if frame is not None else frame_id
        self._set_current_view(view.view_id)
        self.request("Focus", f"Showing {title}",
                     partial(self._focus_and_show, view.view_id, frame_id))

    # ------------------------------------------------------------------ actions

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # Engine keys are off while a dialog or the palette is open.
        return not (action in BLOCKED_UNDER_DIALOGS and len(self.screen_stack) > 1)

    def _local_frame(self, missing: str) -> FrameSummary | None:
        """The selected frame when this host may act on it; otherwise say why and None."""
        frame = self.target_frame()
        if not self._need(frame, missing):
            return None
        assert frame is not None
        if self._remote(self._host_of_frame(frame.frame_id)):
            return None
        return frame

    def action_start(self) -> None:
        frame = self._local_frame("Select a frame to start a session in.")
        if frame is None:
            return
        if frame.lifecycle_state != "open":
            self.notify(f"“{frame.title}” is {frame.lifecycle_state}; press r to reopen it "
                        "first.", severity="warning", markup=False)
            return
        self.request("Start", f"Starting a session in {frame.title}",
                     partial(self.client.start, frame.frame_id))

    def action_stop(self) -> None:
        frame = self._local_frame("Select a frame whose agent should stop.")
        if frame is None:
            return

        self._ask_then_request(
            ConfirmScreen(f"Stop the agent of “{frame.title}”? Its session is kept; n "
                          "resumes it.", confirm_label="Stop agent"),
            "Stop", lambda _: f"Stopped the agent of {frame.title}",
            lambda _: partial(self.client.stop, frame.frame_id))

    def action_back(self) -> None:
        view = self.target_view()
        if not self._need(view, "No view yet: select a project and press enter."):
            return
        assert view is not None
        if self._remote(view.host_id):
            return
        self.request("Back", "Showing the parent; the task stays open",
                     partial(self.client.back, view.view_id))

    def action_cancel_transition(self) -> None:
        view = self.target_view()
        if not self._need(view, "No view yet: select a project and press enter."):
            return
        assert view is not None
        if self._remote(view.host_id):
            return
        self.request("Withdraw", "The waiting transition is cancelled; nothing moved",
                     partial(self.client.cancel_transition, view.view_id))

    def action_new_task(self) -> None:
        frame = self._local_frame("Select the frame the new task goes under.")
        if frame is None:
            return
        if frame.lifecycle_state != "open":
            self.notify(f"“{frame.title}” is {frame.lifecycle_state}; press r to reopen it "
                        "first.", severity="warning", markup=False)
            return

        self._ask_then_request(
            NewTaskScreen(frame.title), "New task",
            lambda task: f"Pushing “{task.title}” under {frame.title}",
            lambda task: partial(self.client.push, frame.frame_id, task.title, task.brief))

    def action_message(self) -> None:
        frame = self._local_frame("Select a frame whose agent should get a message.")
        if frame is None:
            return

        self._ask_then_request(
            ComposeMessageScreen(frame.title), "Message",
            lambda _: f"Message for {frame.title} sent",
            lambda text: partial(self.client.message_frame, frame.frame_id, text))

    def action_inbox_stream(self) -> None:
        view = self.target_view()
        if not self._need(view, "No view yet: select a project and press enter."):
            return
        assert view is not None
        if self._remote(view.host_id):
            return
        self.request("Inbox stream", "Inbox stream toggled",
                     partial(self.client.toggle_inbox_stream, view.view_id))

    def _task_target(self, verb: str) -> FrameSummary | None:
        frame = self.target_frame()
        if frame is None:
            self.notify(f"Select a task to {verb}.", severity="warning", markup=False)
            return None
        if frame.role != "task":
            self.notify(f"The workspace “{frame.title}” has no parent; select a task to "
                        f"{verb}.", severity="warning", markup=False)
            return None
        if frame.lifecycle_state != "open":
            self.notify(f"“{frame.title}” is {frame.lifecycle_state}, not open.",
                        severity="warning", markup=False)
            return None
        if self._remote(self._host_of_frame(frame.frame_id)):
            return None
        return frame

    def action_complete(self) -> None:
        frame = self._task_target("complete")
        if frame is None:
            return

        self._ask_then_request(
            CompleteReturnScreen(frame.title), "Complete",
            lambda _: f"Returning from {frame.title} to its parent",
            lambda answer: partial(self.client.complete, frame.frame_id, answer.summary,
                                   answer.next_action))

    def action_close_frame(self) -> None:
        frame = self._task_target("close")
        if frame is None:
            return

        self._ask_then_request(
            ConfirmScreen(f"Close “{frame.title}” without a handoff? Its parent is shown "
                          "first, then its agent is stopped.", confirm_label="Close task"),
            "Close", lambda _: f"Closed {frame.title} (dismissed)",
            lambda _: partial(self.client.close, frame.frame_id))

    def action_reopen(self) -> None:
        ref = self._tree_ref()
        frame = self._frame(ref.frame_id) if ref is not None else None
        if frame is None or frame.lifecycle_state != "closed":
            self.notify("Select a closed frame under History to reopen it.",
                        severity="warning", markup=False)
            return
        if self._remote(self._host_of_frame(frame.frame_id)):
            return
        self.request("Reopen", f"Reopened {frame.title}",
                     partial(self.client.reopen, frame.frame_id))

    def action_toggle_mode(self) -> None:
        view = self.target_view()
        if not self._need(view, "No view yet: select a project and press enter."):
            return
        assert view is not None
        if self._remote(view.host_id):
            return
        other = "direct" if view.mode == "navigator" else "navigator"
        done = f"{view.title}: {other} mode" + (
            " (tmux prefix + S brings the navigator back)" if other == "direct" else "")
        self.request("Mode", done,
                     partial(self.client.toggle_mode, view.view_id))

    def action_recover(self) -> None:
        recovery = self.query_one(RecoveryList).selected_recovery
        if not self._need(recovery, "No recovery selected: open recoveries are listed in "
                                    "the Recoveries panel."):
            return
        assert recovery is not None
        if self._remote(recovery.host_id):
            return
        self.request("Recover", f"Recovery {recovery.kind} handled",
                     partial(self.client.recover, recovery.recovery_id))

    def action_details(self) -> None:
        frame = self.target_frame()
        if not self._need(frame, "Select a frame to see its session's tool runs and events."):
            return
        assert frame is not None

        def load() -> None:  # a thread worker: the session file is read off the event loop
            try:
                detail = self.client.session_detail(frame.frame_id)
            except SwitchboardError as exc:
                self.call_from_thread(self.notify, exc.message, title="Details",
                                      severity="warning", markup=False)
                return
            self.call_from_thread(self.push_screen, SessionDetailScreen(frame.title, detail))

        self.run_worker(load, thread=True, group="details", exclusive=True,
                        exit_on_error=False)

    def action_search(self) -> None:
        search = self.query_one(SearchBox)
        search.add_class("-visible")
        search.focus()

    def action_help(self) -> None:
        self.push_screen(HelpScreen(self.key_help()))

    def key_help(self) -> list[tuple[str, str]]:
        """Every key of the app and its panels, for the help screen and README."""
        keys = [("enter", "focus the frame / enter the project or view / recovery: run, "
                          "go to or explain it / ack"),
                ("tab", "next panel"), ("space", "fold or unfold a tree node")]
        for binding in self.BINDINGS:
            assert isinstance(binding, Binding)
            keys.append((binding.key_display or binding.key,
                         f"{binding.description}: {binding.tooltip}" if binding.tooltip
                         else binding.description))
        keys += [("d", "Dismiss: close the selected recovery (Recoveries panel)"),
                 ("a", "Acknowledge the selected message (Inbox panel)"),
                 ("ctrl+p", "command palette: every action, project and frame"),
                 ("ctrl+q", "quit the navigator (agents keep running)")]
        return keys

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        for binding in self.BINDINGS:
            assert isinstance(binding, Binding)
            yield SystemCommand(binding.description, binding.tooltip or binding.description,
                                partial(self.run_action, binding.action))
        if self.query_one(RecoveryList).selected_recovery is not None:
            yield SystemCommand("Open recovery", "enter on the selected recovery: recover, go "
                                "to its frame, or explain what to do",
                                self._open_selected_recovery)
            yield SystemCommand("Dismiss recovery", "dismiss the selected recovery",
                                self._dismiss_selected_recovery)
        if self.query_one(InboxList).selected_message_id is not None:
            yield SystemCommand("Acknowledge message", "acknowledge the selected inbox message",
                                self._acknowledge_selected_message)

    def _open_selected_recovery(self) -> None:
        panel = self.query_one(RecoveryList)
        recovery = panel.selected_recovery
        if self._need(recovery, "No recovery selected: open recoveries are listed in the "
                                "Recoveries panel."):
            assert recovery is not None
            self.post_message(panel.intent_for(recovery))

    def _dismiss_selected_recovery(self) -> None:
        recovery = self.query_one(RecoveryList).selected_recovery
        if self._need(recovery, "No recovery selected."):
            assert recovery is not None
            self.post_message(RecoveryList.DismissRequested(recovery.recovery_id))

    def action_acknowledge_anywhere(self) -> None:
        """``a`` outside the Inbox: say where it works instead of acting on a message the
        person is not looking at."""
        if self.query_one(InboxList).selected_message_id is None:
            self.notify("Nothing to acknowledge: the Inbox has no message for this view.",
                        markup=False)
        else:
            self.notify("a acknowledges the selected message in the Inbox panel: move there "
                        "(tab) first.", markup=False)

    def action_dismiss_anywhere(self) -> None:
        """``d`` outside Recoveries: the same, for dismissing a recovery."""
        if self.query_one(RecoveryList).selected_recovery is None:
            self.notify("Nothing to dismiss: no recovery is open.", markup=False)
        else:
            self.notify("d dismisses the selected recovery in the Recoveries panel: move "
                        "there (tab) first.", markup=False)

    def _acknowledge_selected_message(self) -> None:
        message_id = self.query_one(InboxList).selected_message_id
        if self._need(message_id, "No message selected: messages for this view are listed "
                                  "in the Inbox panel."):
            self.post_message(InboxList.AckRequested(message_id))

    # ------------------------------------------------------------------ panel intents

    def on_frame_tree_focus_requested(self, message: FrameTree.FocusRequested) -> None:
        self.request_focus_frame(message.frame_id, message.project_id)

    def on_frame_tree_project_enter_requested(
            self, message: FrameTree.ProjectEnterRequested) -> None:
        self.request_enter_project(message.project_id, message.project_name)

    def on_frame_tree_history_selected(self, message: FrameTree.HistorySelected) -> None:
        self.notify(f"“{message.title}” is closed (History is read-only); press r to reopen "
                    "it.", markup=False)

    def on_frame_tree_layout_changed(self, message: FrameTree.LayoutChanged) -> None:
        self._schedule_ui_save()

    def on_view_list_enter_requested(self, message: ViewList.EnterRequested) -> None:
        self._set_current_view(message.view_id)
        project = project_by_id(self.navigator_state, message.project_id)
        if not self._need(project, "This view shows no project; see the Recoveries panel."):
            return
        assert project is not None
        self.request_enter_project(project.project_id, project.name)

    def on_recovery_list_recover_requested(self, message: RecoveryList.RecoverRequested
                                           ) -> None:
        self.request("Recover", "Recovery handled",
                     partial(self.client.recover, message.recovery_id))

    def on_recovery_list_go_to_requested(self, message: RecoveryList.GoToRequested) -> None:
        recovery = self.query_one(RecoveryList).recovery(message.recovery_id)
        if recovery is None or self._remote(recovery.host_id):
            return
        self._locate_subject(recovery, self._go_to_subject)

    def on_recovery_list_explain_requested(self, message: RecoveryList.ExplainRequested
                                           ) -> None:
        recovery = self.query_one(RecoveryList).recovery(message.recovery_id)
        if recovery is None:
            return
        if recovery.host_id != getattr(self.navigator_state, "local_host_id", None):
            self._explain_recovery(recovery, SubjectPlace(None, None))  # rows are elsewhere
            return
        self._locate_subject(recovery, self._explain_recovery)

    def _locate_subject(self, recovery: RecoveryRow,
                        then: Callable[[RecoveryRow, SubjectPlace], None]) -> None:
        """Find the recovery's view and frame off the event loop, then call ``then``."""

        def locate() -> None:
            try:
                place = self.client.recovery_subject(recovery.subject_type,
                                                     recovery.subject_id)
            except Exception:  # a failed read only loses the "where"; the text still helps
                place = SubjectPlace(None, None)
            self.call_from_thread(then, recovery, place)

        self.run_worker(locate, thread=True, group="recovery-subject", exclusive=True,
                        exit_on_error=False)

    def _go_to_subject(self, recovery: RecoveryRow, place: SubjectPlace) -> None:
        """open_view: select the view and frame the recovery is about, show that frame
        in its view when it is not already shown (navigation only), and say what to
        check. Nothing is recovered; d dismisses the row once checked."""
        state = self.navigator_state
        found = frame_with_project(state, place.frame_id)
        view = self._view(place.view_id)
        if found is not None and view is None:
            view = self._view_of_project(found[1].project_id)
        if view is not None and found is None:
            found = frame_with_project(state, view.active_frame_id)
        if found is None and view is None:
            self.notify(f"{recovery.explanation} What it was about is gone from the registry; "
                        "press d to dismiss it.", title=recovery.kind.replace("_", " "),
                        severity="warning", markup=False, timeout=10)
            return
        if view is not None:
            self._set_current_view(view.view_id)
            self.query_one(ViewList).highlight_key(view.view_id)
        frames = self.query_one(FrameTree)
        title = view.title if view is not None else ""
        if found is not None:
            frame = found[0]
            title = frame.title
            frames.select_key(frame_key(frame.frame_id))
            if (view is not None and frame.lifecycle_state == "open"
                    and view.active_frame_id != frame.frame_id):
                self.request("Focus", f"Showing {frame.title}",
                             partial(self._focus_and_show, view.view_id, frame.frame_id))
        frames.focus()
        self.notify(f"{recovery.explanation} Press d on the recovery once checked.",
                    title=f"Look at {title}", markup=False, timeout=10)

    def _explain_recovery(self, recovery: RecoveryRow, place: SubjectPlace) -> None:
        """manual: the whole explanation and what it is about, in a small dialog."""
        found = frame_with_project(self.navigator_state, place.frame_id)
        view = self._view(place.view_id)
        about = None
        if found is not None:
            about = f"{found[0].title} ({found[1].name})"
        elif view is not None:
            about = f"the view {view.title}"
        self.push_screen(RecoveryExplanationScreen(recovery, about))

    def on_recovery_list_dismiss_requested(self, message: RecoveryList.DismissRequested
                                           ) -> None:
        self.request("Dismiss recovery", "Recovery dismissed",
                     partial(self.client.dismiss_recovery, message.recovery_id))

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
        self._schedule_preview()

    # ------------------------------------------------------------------ preview

    PREVIEW_DELAY = 0.3
    """Seconds the cursor rests on a frame before its pane is read (never a poll)."""

    def _schedule_preview(self) -> None:
        timer = getattr(self, "_preview_timer", None)
        if timer is not None:
            timer.stop()
        self._preview_timer = self.set_timer(self.PREVIEW_DELAY, self._start_preview)

    def _start_preview(self) -> None:
        try:  # a dialog or the palette covers the panels: no preview now
            ref = self._tree_ref()
            preview = self.query_one(PanePreview)
        except NoMatches:
            return
        frame = ref.frame if ref is not None else None
        session = frame.current_session if frame is not None else None
        parked = (frame is not None and ref is not None and not ref.shown
                  and session is not None and session.runtime_presence == "live"
                  and not self._remote(self._host_of_frame(frame.frame_id), quiet=True))
        if not parked:
            preview.clear()
            return
        assert frame is not None
        self._fetch_preview(frame.frame_id, frame.title)

    @work(thread=True, exclusive=True, group="preview", exit_on_error=False)
    def _fetch_preview(self, frame_id: str, title: str) -> None:
        try:
            lines = self.client.preview(frame_id)
        except Exception:  # a preview is a convenience: no toast for a failed read
            lines = None
        self.call_from_thread(self._show_preview, frame_id, title, lines)

    def _show_preview(self, frame_id: str, title: str, lines: list[str] | None) -> None:
        try:
            ref = self._tree_ref()
            preview = self.query_one(PanePreview)
        except NoMatches:
            return
        if lines is None or ref is None or ref.frame_id != frame_id:
            preview.clear()  # the cursor moved on, or the pane is gone
            return
        preview.show_lines(frame_id, title, lines)

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        self._update_breadcrumb()
        self._schedule_ui_save()

    def on_descendant_focus(self, event: Any) -> None:
        self._update_breadcrumb()
        self._schedule_ui_save()

    # ------------------------------------------------------------------ UI state

    def _read_ui_state(self) -> dict[str, Any]:
        return self.ui_store.read()

    def collect_ui_state(self) -> dict[str, Any]:
        tree = self.query_one(FrameTree)
        focused = self.focused
        panel = focused.id if isinstance(focused, Widget) and focused.id in PANELS else None
        return {
            "panel": panel or self._ui_snapshot.get("panel"),
            "current_view": self.current_view_id,
            "tree_cursor": tree.cursor_key,
            "collapsed": sorted(tree.collapsed),
            "views_cursor": self.query_one(ViewList).highlighted_key,
            "recoveries_cursor": self.query_one(RecoveryList).highlighted_key,
            "scroll": {panel_id: self.query_one(f"#{panel_id}").scroll_offset.y
                       for panel_id in PANELS},
        }

    def _restore_ui_state(self, ui: dict[str, Any]) -> None:
        if not ui:
            return
        tree = self.query_one(FrameTree)
        collapsed = ui.get("collapsed")
        if isinstance(collapsed, list):
            tree.apply_collapsed(str(key) for key in collapsed)
        if not self.bound_view_id and isinstance(ui.get("current_view"), str):
            self.current_view_id = ui["current_view"]
        tree.select_key(ui.get("tree_cursor"))
        self.query_one(ViewList).highlight_key(ui.get("views_cursor"))
        self.query_one(RecoveryList).highlight_key(ui.get("recoveries_cursor"))
        panel = ui.get("panel")
        if panel in PANELS:
            self.query_one(f"#{panel}").focus()
        scroll = ui.get("scroll")
        if isinstance(scroll, dict):
            def apply_scroll() -> None:
                for panel_id, y in scroll.items():
                    if panel_id in PANELS and isinstance(y, int):
                        self.query_one(f"#{panel_id}").scroll_to(y=y, animate=False)
            self.call_after_refresh(apply_scroll)
        self._update_breadcrumb()

    def _schedule_ui_save(self) -> None:
        """Snapshot now (cheap), write at most twice a second (debounced)."""
        if not self._restored or not self.is_running:
            return
        self._ui_snapshot = self.collect_ui_state()
        if self._save_timer is not None:
            self._save_timer.stop()
        self._save_timer = self.set_timer(0.5, self._save_ui_state)

    def _save_ui_state(self) -> None:
        self._write_ui_state(dict(self._ui_snapshot))

    @work(thread=True, exclusive=True, group="ui-state", exit_on_error=False)
    def _write_ui_state(self, mine: dict[str, Any]) -> None:
        self.ui_store.write(mine)

    def on_unmount(self) -> None:
        """Exit writes the last snapshot synchronously: one small file, once."""
        if self._restored and self._ui_snapshot:
            self.ui_store.write(self._ui_snapshot)


__all__ = ["SwitchboardApp", "stylesheet_path"]
