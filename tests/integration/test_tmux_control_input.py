"""The fenced control turn: the fixed line arrives once, bracketed, and the pane stays fenced."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from core.tmux import (
    CONTROL_CLAIM_TEXT,
    PaneNotFenced,
    PaneNotFound,
    TmuxAdapter,
    UnmanagedPane,
)
from tests.integration.conftest import received, wait_ready
from tests.waiting import assert_until

SURFACE = "66666666-0000-4000-8000-000000000001"
PASTE = b"\x1b[200~" + CONTROL_CLAIM_TEXT.encode() + b"\x1b[201~"

Recorder = Callable[[str], tuple[list[str], Path]]


def _buffers(adapter: TmuxAdapter) -> list[str]:
    out = adapter.runner.run([("list-buffers", "-F", "#{buffer_name}")], check=False)
    return [line for line in out.stdout if line.startswith("sb-ctl-")]


def test_control_line_arrives_once_bracketed_and_fenced(
    adapter: TmuxAdapter, recorder: Recorder
) -> None:
    argv, log = recorder("provider")
    pane = adapter.launch_staged_pane(surface_id=SURFACE, command=argv)
    wait_ready(log)
    assert pane.input_off  # fenced before

    before = adapter.invocations
    submitted = adapter.submit_control_line(pane_id=pane.pane_id, surface_id=SURFACE)
    assert adapter.invocations - before == 1
    assert submitted.pane.input_off  # fenced after, as re-read in the same tmux queue
    assert submitted.pane.pane_id == pane.pane_id

    assert_until(lambda: received(log).endswith(b"\r"), 5.0, interval=0.02)
    time.sleep(0.2)  # nothing else trickles in
    assert received(log) == PASTE + b"\r"
    assert received(log).count(CONTROL_CLAIM_TEXT.encode()) == 1
    assert _buffers(adapter) == []  # the uniquely named buffer was deleted

    # Still fenced: a person's keys are dropped until the watchdog/UserPromptSubmit lifts it.
    adapter.runner.run([("send-keys", "-t", pane.pane_id, "x", "Enter")])
    time.sleep(0.2)
    assert received(log) == PASTE + b"\r"
    lifted = adapter.enable_input(pane_id=pane.pane_id, surface_id=SURFACE)
    assert not lifted.input_off


def test_refuses_a_pane_that_accepts_input(adapter: TmuxAdapter, recorder: Recorder) -> None:
    argv, log = recorder("open")
    pane = adapter.launch_staged_pane(surface_id=SURFACE, command=argv)
    wait_ready(log)
    adapter.enable_input(pane_id=pane.pane_id, surface_id=SURFACE)
    with pytest.raises(PaneNotFenced):
        adapter.submit_control_line(pane_id=pane.pane_id, surface_id=SURFACE)
    time.sleep(0.2)
    assert received(log) == b""
    assert _buffers(adapter) == []
    assert not adapter.snapshot().pane(pane.pane_id).input_off  # type: ignore[union-attr]


def test_refuses_untagged_or_foreign_panes(adapter: TmuxAdapter, recorder: Recorder) -> None:
    argv, log = recorder("foreign")
    pane = adapter.launch_staged_pane(surface_id=SURFACE, command=argv)
    wait_ready(log)
    scratch = next(p for p in adapter.snapshot() if p.session_name == "scratch")
    adapter.runner.run([("select-pane", "-d", "-t", scratch.pane_id)])
    with pytest.raises(UnmanagedPane):  # fenced but never launched by Switchboard
        adapter.submit_control_line(pane_id=scratch.pane_id, surface_id=SURFACE)
    with pytest.raises(UnmanagedPane):  # another surface's pane
        adapter.submit_control_line(pane_id=pane.pane_id, surface_id=SURFACE[:-1] + "9")
    with pytest.raises(UnmanagedPane):
        adapter.enable_input(pane_id=scratch.pane_id, surface_id=SURFACE)
    with pytest.raises(PaneNotFound):
        adapter.submit_control_line(pane_id="%999", surface_id=SURFACE)
    time.sleep(0.2)
    assert received(log) == b""
    assert _buffers(adapter) == []


def test_fence_and_lift_by_surface(adapter: TmuxAdapter) -> None:
    pane = adapter.launch_staged_pane(surface_id=SURFACE, command=["sleep", "600"])
    assert adapter.enable_input(pane_id=pane.pane_id, surface_id=SURFACE).input_off is False
    assert adapter.disable_input(pane_id=pane.pane_id, surface_id=SURFACE).input_off is True
