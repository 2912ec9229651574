"""Thread workers with what to do when they end, and the words for a failure.

Work that touches SQLite, tmux or files runs in a thread worker so the event
loop never waits. The work itself just returns or raises; a ``Job`` says what
happens next on the event loop: ``done`` with the result, ``failed`` with the
error (a one-line toast, or a quiet fallback such as clearing the preview).
The app's one ``on_worker_state_changed`` handler calls ``Jobs.finished``, so
no worker catches its own errors.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Generic, TypeVar

from textual.worker import Worker, WorkerState

from core.model.errors import SwitchboardError
from core.model.text import shown_block

T = TypeVar("T")


class Group(StrEnum):
    """Worker groups: an exclusive group keeps one worker of its kind running."""

    LOAD = "load"
    SERVER = "server"
    REQUESTS = "requests"
    PREVIEW = "preview"
    DETAILS = "details"
    RECOVERY_SUBJECT = "recovery-subject"
    UI_STATE = "ui-state"
    REVIEW = "review"
    USAGE = "usage"


@dataclass(frozen=True)
class Job(Generic[T]):
    """What the event loop does when a worker ends: with its result, or its error."""

    done: Callable[[T], None]
    failed: Callable[[Exception], None]


class Jobs:
    """The jobs of the running workers, keyed by worker (dropped once it ended)."""

    def __init__(self) -> None:
        self._pending: dict[Worker[Any], Job[Any]] = {}

    def track(self, worker: Worker[T], job: Job[T]) -> None:
        self._pending[worker] = job

    def finished(self, event: Worker.StateChanged) -> None:
        """Run the worker's job once it succeeded or failed; a cancelled worker (an
        exclusive group's newer worker replaced it) is forgotten."""
        if event.state not in (WorkerState.SUCCESS, WorkerState.ERROR,
                               WorkerState.CANCELLED):
            return
        job = self._pending.pop(event.worker, None)
        if job is None:
            return
        if event.state is WorkerState.SUCCESS:
            job.done(event.worker.result)
        elif event.state is WorkerState.ERROR:
            error = event.worker.error
            job.failed(error if isinstance(error, Exception) else RuntimeError(str(error)))


def problem_text(error: Exception) -> str:
    """An engine refusal says what to do; anything else names its type."""
    if isinstance(error, SwitchboardError):
        return shown_block(error.message)
    return shown_block(f"{type(error).__name__}: {error}")


def request_problem(description: str, error: Exception) -> str:
    """Why a request failed, never as a traceback in the person's face."""
    if isinstance(error, SwitchboardError):
        return shown_block(error.message)  # it may echo agents' text
    if isinstance(error, NotImplementedError | ImportError):
        return (f"{description} is not available in this build yet; use the CLI "
                "(`switchboard --help`).")
    return shown_block(f"{description} failed unexpectedly ({type(error).__name__}: {error}). "
                       "Nothing is retried automatically; check `switchboard state navigator "
                       "--json`.")
