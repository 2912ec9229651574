"""What the navigator shows, kept current: one read of the state, its data_version
and the inbox (``read_state``, in a worker thread: the client blocks on SQLite),
and the ``Refresher`` that decides when to read and when to reconcile.

The inbox is read for one view and may be unavailable without the state being
so: a missing or refusing broker becomes the panel's own line, never a failed load.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from core.engine.client import EngineClient
from core.model.errors import SwitchboardError
from core.state.state_types import NavigatorState
from navigator.jobs import Group, Job, problem_text
from navigator.targeting import inbox_view_id
from navigator.ui_state import PaneLayout, UiStateStore

if TYPE_CHECKING:
    from core.reconcile.reconcile import ReconcileReport

_T = TypeVar("_T")
#: Every this many poll ticks the navigator reads data_version even when no file moved
#: (a backstop against a commit that left size and mtime as they were: 5 s at 4/s).
FULL_CHECK_TICKS = 20


@dataclass(frozen=True)
class Loaded:
    """A new NavigatorState and the inbox of the view it was read for."""

    state: NavigatorState
    version: int
    inbox: list[Any] | None
    inbox_problem: str | None


def read_state(client: EngineClient, wanted_view: str | None, *,
               known: int | None = None) -> Loaded | None:
    """The state, or None when the client's data_version still equals ``known``."""
    version = client.data_version()
    if known is not None and version == known:
        return None
    state = client.state()
    inbox, problem = read_inbox(client, state, wanted_view)
    return Loaded(state, version, inbox, problem)


def read_inbox(client: EngineClient, state: NavigatorState,
               wanted_view: str | None) -> tuple[list[Any] | None, str | None]:
    """The messages for the wanted view (else the first live one), or why there are none."""
    view_id = inbox_view_id(state, wanted_view)
    if view_id is None:
        return [], None
    try:
        return list(client.inbox(view_id)), None
    except (NotImplementedError, ImportError, AttributeError):
        return None, "inbox unavailable: the broker is not set up"
    except SwitchboardError as exc:
        return None, f"inbox unavailable: {exc.message}"


class RefreshHost(Protocol):
    """What the refresher needs from the app (narrow: the app imports this module)."""

    client: EngineClient
    reconcile_interval: float

    def start_job(self, work: Callable[[], _T], group: Group, job: Job[_T], *,
                  exclusive: bool = False, name: str = "") -> None: ...

    def group_busy(self, group: Group) -> bool: ...

    def inbox_wanted(self) -> str | None: ...

    def memory_store(self) -> UiStateStore: ...

    def show_loaded(self, loaded: Loaded, layout: PaneLayout | None) -> None: ...

    def warn(self, text: str, title: str, *, error: bool = False) -> None: ...


class Refresher:
    """Keeps the shown state current: a few stats per tick, a load worker only when a
    registry or broker file moved (or every ``FULL_CHECK_TICKS`` ticks as a backstop),
    and the periodic reconcile of tmux with the registry. Failures are said once per
    distinct problem (loads) or per run of failures (reconciles)."""

    def __init__(self, host: RefreshHost) -> None:
        self._host = host
        self.data_version: int | None = None
        self.ticks = 0
        self._stamp: tuple[tuple[int, int], ...] | None = None
        self._load_problem: str | None = None
        self._reconcile_problem: str | None = None

    # ------------------------------------------------------------------ loads

    def poll(self) -> None:
        self.ticks += 1
        stamp = self._change_stamp()
        if (stamp is not None and stamp == self._stamp and self.data_version is not None
                and self.ticks % FULL_CHECK_TICKS):
            return
        if not self._host.group_busy(Group.LOAD):
            self._stamp = stamp
            self.load(first=False)

    def _change_stamp(self) -> tuple[tuple[int, int], ...] | None:
        """The client's file stamp; None (always load) when it cannot be read."""
        try:
            return self._host.client.change_stamp()
        except Exception:  # a broken stamp must never stop loading
            return None

    def load(self, first: bool) -> None:
        """Rebuild state only when the registry (or broker) changed; the first load also
        reads what the pane remembers."""
        host = self._host

        def load() -> tuple[PaneLayout | None, Loaded | None]:
            layout = host.memory_store().read_layout() if first else None
            known = None if first else self.data_version
            return layout, read_state(host.client, host.inbox_wanted(), known=known)

        host.start_job(load, Group.LOAD, Job(self._loaded, self._load_failed),
                       exclusive=True)

    def _loaded(self, outcome: tuple[PaneLayout | None, Loaded | None]) -> None:
        layout, loaded = outcome
        if loaded is not None:
            self.show(loaded, layout)

    def show(self, loaded: Loaded, layout: PaneLayout | None = None) -> None:
        """A load's (or a request's) new state goes on screen."""
        self.data_version = loaded.version
        self._load_problem = None
        self._host.show_loaded(loaded, layout)

    def _load_failed(self, error: Exception) -> None:
        problem = problem_text(error)
        if problem == self._load_problem:
            return  # the poll retries every tick; say it once per distinct problem
        self._load_problem = problem
        self._host.warn(f"Could not read the registry: {problem}. The navigator keeps "
                        "the last state and retries; check `switchboard state navigator "
                        "--json`.", "Refresh failed", error=True)

    # ------------------------------------------------------------------ reconciles

    def reconcile_tick(self) -> None:
        """Start a reconcile unless one still runs (a slow tmux never piles them up).
        Watchdog, expired leases, exited providers, stale activity: what it writes
        changes data_version, so the next poll redraws (an aged badge included)."""
        host = self._host
        if not host.group_busy(Group.RECONCILE):
            host.start_job(partial(host.client.reconcile_if_due, host.reconcile_interval),
                           Group.RECONCILE, Job(self._reconciled, self._reconcile_failed),
                           exclusive=True)

    def _reconciled(self, report: ReconcileReport | None) -> None:
        """Quiet: speaks only when recoveries were opened."""
        if report is None:
            return  # another navigator of this host has the turn
        self._reconcile_problem = None
        opened = report.recoveries_opened
        if opened:
            what = "1 recovery needs" if opened == 1 else f"{opened} recoveries need"
            self._host.warn(f"{what} attention; see the Recoveries panel.", "Recoveries")

    def _reconcile_failed(self, error: Exception) -> None:
        """Once per run of failures: the navigator still browses; the next tick retries."""
        problem = problem_text(error)
        if self._reconcile_problem is None:
            self._host.warn(f"Could not check tmux against the registry ({problem}). "
                            f"The navigator retries every {self._host.reconcile_interval:g}"
                            " s; `switchboard reconcile` shows the whole error.",
                            "Reconcile failed")
        self._reconcile_problem = problem
