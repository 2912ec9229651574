"""The hook path: providers call it on every prompt and turn end.

Lean by design (no Textual, no libtmux unless a transition must move panes):
check the generation marker, authenticate the capability, record activity in
one short transaction, and on a trusted Stop run whatever transition was
waiting for it. An unmanaged session, or a stale generation, is a successful
no-op; forged or partial markers fail closed without writing.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from core.capabilities import ENV_CAPABILITY, ENV_GENERATION, authenticate
from core.enums import Activity, ActivityReason, Provider, RuntimePresence
from core.errors import Unauthorized
from core.home import Home
from core.providers.hooks import HookEvent, HookKind, parse_hook


@dataclass(frozen=True)
class HookOutcome:
    handled: bool
    reason: str
    session_key: str | None = None
    activity: str | None = None
    executed_transitions: tuple[str, ...] = ()


def handle_hook(provider: str, event: str, payload: bytes | str,
                env: dict[str, str] | None = None) -> HookOutcome:
    env = dict(os.environ if env is None else env)
    raw = env.get(ENV_CAPABILITY)
    generation = env.get(ENV_GENERATION)
    if not raw and not generation:
        return HookOutcome(False, "unmanaged session: no Switchboard markers")
    if not raw or not generation:
        raise Unauthorized("partial Switchboard markers in the environment; nothing written")
    home = Home.from_env(env)
    if home.read_current_generation() != generation:
        return HookOutcome(False, "stale generation: no-op")
    parsed = parse_hook(Provider(provider), event, payload)
    from core.session import open_engine

    engine = open_engine(home)
    try:
        return _apply(engine, raw, parsed)
    finally:
        engine.conn.close()


def _apply(engine, raw: str, hook: HookEvent) -> HookOutcome:
    from storage.connection import write_transaction
    from storage.operations import sessions as sessions_ops
    from storage.operations import transitions as transitions_ops

    now = engine.now()
    with write_transaction(engine.conn) as conn:
        authority = authenticate(conn, raw, now)
        key = authority.session_key
        session = sessions_ops.get_session(conn, key) if key else None
        if session is None:
            raise Unauthorized("capability is not bound to a provider session")
        if session["provider"] != hook.provider.value:
            raise Unauthorized("hook provider does not match the launched provider")
        if session["provider_session_id"].startswith("pending-"):
            # Bind Codex's thread id only from a session/prompt hook, never from notify,
            # which also fires for an internal title-generation thread.
            if hook.kind not in (HookKind.SESSION_STARTED, HookKind.PROMPT_SUBMITTED):
                return HookOutcome(False, "unbound session: waiting for its first prompt", key)
            key = sessions_ops.rekey_session(conn, key, hook.provider_session_id)
        elif session["provider_session_id"] != hook.provider_session_id:
            # Codex also notifies for an internal title-generation thread: foreign ids
            # are not ours and change nothing.
            return HookOutcome(False, "foreign provider session id: ignored", key)
        _bind_launch(conn, authority.launch_id, now)
        runtime = hook.runtime.value if hook.runtime else None
        if hook.kind in (HookKind.PROMPT_SUBMITTED, HookKind.TURN_STOPPED,
                         HookKind.TOOL_STARTED, HookKind.TOOL_FINISHED,
                         HookKind.PERMISSION_REQUESTED):
            runtime = runtime or RuntimePresence.LIVE.value
        sessions_ops.record_activity(conn, key, activity=hook.activity,
                                     reason=hook.activity_reason, runtime_presence=runtime,
                                     turn_id=hook.turn_id, provider_version=None, now=now)
        if hook.kind is HookKind.PROMPT_SUBMITTED:
            _observe_control(conn, authority.frame_id, hook.turn_id, now)
        activity = (hook.activity or Activity(session["activity"])).value
    executed: list[str] = []
    if hook.kind is HookKind.TURN_STOPPED and hook.activity is Activity.READY:
        executed = _after_trusted_stop(engine, authority.frame_id)
    del transitions_ops
    return HookOutcome(True, f"{hook.kind.value} recorded", key, activity, tuple(executed))


def _bind_launch(conn, launch_id: str, now: int) -> None:
    row = conn.execute("SELECT state FROM launch_intents WHERE launch_id = ?",
                       (launch_id,)).fetchone()
    if row is not None and row["state"] == "started":
        conn.execute("UPDATE launch_intents SET state = 'bound', updated_at = ?"
                     " WHERE launch_id = ? AND state = 'started'", (now, launch_id))


def _observe_control(conn, frame_id: str, prompt_id: str | None, now: int) -> None:
    """The exact UserPromptSubmit after a submitted control turn: observed."""
    conn.execute(
        "UPDATE control_turns SET state = 'observed', observed_prompt_id = ?, updated_at = ?"
        " WHERE target_frame_id = ? AND state IN ('submitted', 'uncertain')",
        (prompt_id, now, frame_id))


def _after_trusted_stop(engine, frame_id: str) -> list[str]:
    """Run the push/complete-return that waited for this frame's Stop; settle returns."""
    from core import claims, sagas

    executed: list[str] = []
    settled = claims.settle_after_stop(engine, frame_id)
    executed.extend(settled)
    rows = engine.conn.execute(
        "SELECT transition_id FROM view_transitions WHERE source_frame_id = ?"
        " AND state = 'prepared' AND kind IN ('push', 'complete_return')"
        " ORDER BY created_at", (frame_id,)).fetchall()
    if rows and engine.stage is None:
        from core.stage import attach_stage
        attach_stage(engine, engine.home)
    for row in rows:
        sagas.execute(engine, row["transition_id"])
        executed.append(row["transition_id"])
    return executed


__all__ = ["handle_hook", "HookOutcome", "ActivityReason"]
