"""Move a task to the other provider (issue 26): ``switchboard frame switch-provider``.

When one provider is limited (or simply worse at a task), the person carries the task
on with the other one: the frame's agent is stopped (its session stays resumable and
in the frame's history, its evidence file readable in ``i``), a handover is written
from what Switchboard holds (``core.runtime.handover``: the task's brief, its last
handoff, the commands, failures and changes so far), and the frame starts a new
session on the other provider in the same checkout, whose first words are the fixed
claim line: ``transition_claim()`` hands it the handover.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from core.model.enums import PlacementState, Provider
from core.model.errors import Conflict, SwitchboardError

if TYPE_CHECKING:
    from core.config.home import Home
    from core.engine.engine import Engine


@dataclass(frozen=True)
class SwitchResult:
    """The frame, the session it left and the one it started."""

    frame_id: str
    from_provider: Provider
    to_provider: Provider
    old_session_key: str
    session_key: str
    launch_id: str
    stopped: bool


def switch_provider(engine: Engine, request_id: str, frame_id: str, to: Provider,
                    home: Home | None = None) -> SwitchResult:
    """Stop the frame's agent, write its handover, start it on ``to``. Refused (nothing
    changed) for a frame that is not open, has no session yet, is on ``to`` already, or
    whose ``to`` provider is disabled."""
    from core.engine.commands.frames import frame_start, frame_stop
    from core.evidence.store import session_detail
    from core.runtime.handover import Handover, build_brief, task_brief, write_handover
    from storage.operations import frames as frames_ops
    from storage.operations import sessions as sessions_ops
    from storage.operations import views as views_ops

    home = home or engine.require_home()
    frame = frames_ops.get_frame(engine.conn, frame_id)
    if frame["lifecycle_state"] != "open":
        raise Conflict(f"“{frame['title']}” is {frame['lifecycle_state']}; reopen it before "
                       "moving it to another provider", code="frame_not_open")
    key = frame["current_session_key"]
    if key is None:
        raise Conflict(f"“{frame['title']}” has no agent yet; start it on {to.value} with "
                       f"`switchboard frame start {frame_id} --provider {to.value}`",
                       code="no_session")
    old = Provider(sessions_ops.get_session(engine.conn, key)["provider"])
    if old is to:
        raise Conflict(f"“{frame['title']}” already runs on {to.value}", code="same_provider")
    if not engine.config.providers[to].enabled:
        raise Conflict(f"the {to.value} provider is disabled in the config; enable "
                       f"[providers.{to.value}] first", code="provider_disabled")
    try:
        detail = session_detail(home, key)
    except SwitchboardError:
        detail = None  # a refused evidence file: the brief says less, the move goes on
    brief = build_brief(frame["title"], task_brief(engine.conn, frame_id), detail,
                        old.value, to.value)
    placement = views_ops.placement_of_frame(engine.conn, frame_id)
    running = placement is not None and placement["state"] in (
        PlacementState.ACTIVE, PlacementState.PARKED, PlacementState.STAGED)
    if running:
        frame_stop(engine, request_id + ":stop", frame_id)
    write_handover(home, Handover(frame_id, old.value, to.value, brief))
    started = frame_start(engine, request_id + ":start", frame_id, to, fresh=True,
                          claim_line=True)
    return SwitchResult(frame_id, old, to, key, started.session_key, started.launch_id,
                        running)
