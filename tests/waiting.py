"""One way for tests to wait for something another process does.

Tests watch tmux panes, hook processes and detached workers, none of which can
tell a test when they are done, so the test looks again every ``interval``
seconds until the answer is yes or ``timeout`` seconds have passed. Every wait
takes one last look once the deadline has passed, so an answer that arrives
during the final sleep still counts.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Iterable
from typing import TypeVar

import pytest

T = TypeVar("T")

NOT_REACHED = "condition not reached in time"


def retry_value(probe: Callable[[], T], accept: Callable[[T], bool], timeout: float,
                interval: float = 0.1) -> T:
    """Call ``probe`` until ``accept`` takes its value; the last value either way."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if accept(value) or time.monotonic() >= deadline:
            return value
        time.sleep(interval)


def retry_until(predicate: Callable[[], object], timeout: float, interval: float = 0.1) -> bool:
    """Whether ``predicate()`` became true within ``timeout`` seconds."""
    return bool(retry_value(predicate, bool, timeout, interval))


def assert_until(predicate: Callable[[], object], timeout: float, message: str = NOT_REACHED,
                 interval: float = 0.1) -> None:
    """Like :func:`retry_until`, but a timeout is an ``AssertionError(message)``."""
    if not retry_until(predicate, timeout, interval):
        raise AssertionError(message)


def fail_unless(predicate: Callable[[], object], timeout: float, what: Callable[[], str],
                interval: float = 0.2) -> None:
    """Like :func:`retry_until`, but a timeout fails the test with what was seen.

    ``what`` is asked only on failure (it usually captures a pane); the failure
    carries no traceback, because the screen it shows is the useful part.
    """
    if not retry_until(predicate, timeout, interval):
        pytest.fail(f"timed out after {timeout:.0f} s: {what()}", pytrace=False)


def end_process_groups(groups: Iterable[int], grace: float = 5.0) -> None:
    """End each process group: SIGTERM, then SIGKILL to one still there after ``grace``
    seconds. A real CLI (Node) leaves helpers of its own behind its pane's shell, so a
    test that started one ends its whole group, not only the pane."""
    for group in groups:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(group, sig)
            except ProcessLookupError:
                break
            if retry_until(lambda g=group: _group_gone(g), grace, 0.1):
                break


def _group_gone(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return True
    return False
