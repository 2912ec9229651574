"""Frozen result records returned by engine operations (CLI prints them as JSON)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RouteResult:
    """Where a project entry landed."""

    request_id: str
    project_id: str
    view_id: str
    frame_id: str
    view_revision: int
    transition_id: str | None


@dataclass(frozen=True)
class FrameResult:
    request_id: str
    frame_id: str
    lifecycle_state: str
    transition_id: str | None = None


@dataclass(frozen=True)
class StartResult:
    request_id: str
    frame_id: str
    session_key: str
    launch_id: str
    surface_id: str


@dataclass(frozen=True)
class TransitionResult:
    request_id: str
    transition_id: str
    kind: str
    state: str
    transport_phase: str
    view_id: str
    target_frame_id: str


@dataclass(frozen=True)
class ViewResult:
    request_id: str
    view_id: str
    mode: str
    revision: int
    active_frame_id: str | None
