"""Lookups that run once per hook in every navigator, or per surface in reconcile,
stay linear: counted in work (frame-row reads, pane visits), never in time."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from core.state import state_builder
from core.state.state_builder import build_navigator_state
from core.tmux.identity import ServerIdentity
from core.tmux.panes import PaneRole, PaneSnapshot, ServerSnapshot
from tests.bench.bench_registry import populate


class _CountingRow(dict):
    """A frame row that counts how often the builder reads one of its fields."""

    reads = 0

    def __getitem__(self, key: str) -> Any:
        _CountingRow.reads += 1
        return super().__getitem__(key)


def _frame_reads(root: Path, views: int, frames: int,
                 monkeypatch: pytest.MonkeyPatch) -> int:
    engine, _shape = populate(root, views=views, frames=frames, sessions=0)
    monkeypatch.setattr(state_builder, "_FrameRecord", _CountingRow)
    try:
        _CountingRow.reads = 0
        state = build_navigator_state(engine)
        assert len([v for v in state.views if v.host_id == engine.host_id]) == views
        return _CountingRow.reads
    finally:
        engine.conn.close()


def test_navigator_state_reads_each_frame_a_bounded_number_of_times(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Doubling the views with the frames fixed adds reads per view, not per view x frame
    (the old per-view scan of every frame added 4 reads per frame per view)."""
    frames = 40
    few = _frame_reads(tmp_path / "few", 4, frames, monkeypatch)
    many = _frame_reads(tmp_path / "many", 8, frames, monkeypatch)
    per_added_view = (many - few) / 4
    assert per_added_view < frames, (few, many)
    assert few < 20 * frames, few


def _pane(index: int, *, view: str | None = None, surface: str | None = None,
          role: PaneRole | None = None, serves: str | None = None,
          holding: bool = False) -> PaneSnapshot:
    return PaneSnapshot(
        pane_id=f"%{index}", session_name="_sb_holding" if holding else "sb",
        window_id=f"@{index // 2}", window_index=index // 2, window_name="w",
        pane_index=index % 2, pane_pid=1000 + index, input_off=False, dead=False,
        dead_status=None, zoomed=False, active=False, width=80, height=24, left=0,
        window_panes=2, current_command="sh", surface_id=surface, role=role,
        view_id=view, serves_view=serves, zoom_memo=False, in_holding=holding)


class _CountingPanes(tuple):
    """The snapshot's pane tuple, counting full passes over it."""

    passes = 0

    def __iter__(self):
        _CountingPanes.passes += 1
        return super().__iter__()


def test_snapshot_lookups_walk_the_panes_once() -> None:
    """Every pane, surface and view of 100 views looked up: one pass over the panes."""
    panes: list[PaneSnapshot] = []
    for v in range(100):
        view = f"view-{v}"
        panes.append(_pane(2 * v, role=PaneRole.NAVIGATOR, serves=view, view=view))
        panes.append(_pane(2 * v + 1, view=view, surface=f"surface-{v}"))
    panes.append(_pane(999, surface="parked", view="view-0", holding=True))
    identity = ServerIdentity(socket_path="/tmp/sock", server_pid=1, server_start_time=1)
    snap = ServerSnapshot(identity=identity, panes=_CountingPanes(panes))
    _CountingPanes.passes = 0
    for v in range(100):
        layout = snap.view(f"view-{v}")
        assert layout is not None and layout.main is not None
        assert layout.main.surface_id == f"surface-{v}"
        assert layout.navigator is not None and layout.navigator.pane_id == f"%{2 * v}"
        assert snap.by_surface(f"surface-{v}") is layout.main
        assert snap.pane(f"%{2 * v}") is layout.navigator
    assert snap.by_surface("parked") is not None and snap.by_surface("parked").parked
    assert snap.view("view-none") is None and snap.pane("%none") is None
    assert _CountingPanes.passes == 1

