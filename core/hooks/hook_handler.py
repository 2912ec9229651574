"""The hook path: providers call it on every prompt and turn end.

Lean by design (no Textual, no tmux adapter unless a transition must move panes):
check the generation marker, authenticate the capability, record activity in
one short transaction, and on a trusted Stop run whatever transition was
waiting for it. An unmanaged session, or a stale generation, is a successful
no-op; forged or partial markers fail closed without writing.

The records of the hook path (HookOutcome here, HookEvent, HookRegistry, Home,
Authority) are NamedTuples, not dataclasses: importing ``dataclasses`` (it
pulls in ``inspect``) was the largest single cost of a plain turn's hook
process, which every prompt and every turn end of every agent pays.
"""

from __future__ import annotations

import os
import sqlite3
import sys
import time
from typing import TYPE_CHECKING, NamedTuple

from core.config.capabilities import ENV_CAPABILITY, ENV_GENERATION, authenticate
from core.config.home import Home
from core.context.session import HookRegistry, open_for_hook, remember_hook_open
from core.model.errors import Unauthorized
from core.model.session_enums import (
    PENDING_SESSION_PREFIX,
    Activity,
    ActivityReason,
    Provider,
    RecoveryKind,
    RuntimePresence,
)
from core.model.text import shown
from core.providers.hooks import HookEvent, HookKind, parse_hook_document

if TYPE_CHECKING:
    from core.model.ports import Clock


class HookOutcome(NamedTuple):
    handled: bool
    reason: str
    session_key: str | None = None
    activity: str | None = None
    executed_transitions: tuple[str, ...] = ()
    claim_reminder: bool = False
    """A returned task's handoff waits for this agent with no claim line of its own
    (complete_return = "handoff"): its prompt hook gives the fixed line as context."""


ENV_AGENT_TOOLS = "SWITCHBOARD_AGENT_TOOLS"
"""``core.providers.agent_http.ENV_TRANSPORT``, spelled here so a launch on the shim
path imports nothing more for it."""


def handle_hook(provider: str, event: str, payload: bytes | str,
                env: dict[str, str] | None = None, *,
                clock: Clock | None = None,
                detach_stop_work: bool | None = None) -> HookOutcome:
    """Record one hook invocation; raise (writing nothing) when it cannot be trusted.

    Order matters: markers and the generation pointer are checked before the
    payload is even parsed, so a stale pane is a no-op whatever it sends.

    ``detach_stop_work``: a trusted Stop's waiting push/return runs in a detached
    worker (``core.hooks.stop_worker``) instead of here, so the provider's hook returns
    at once. None (the default) detaches exactly when ``env`` is None, i.e. when
    this process is the provider's hook (``switchboard hook`` reads its own
    environment); a caller that passes an environment runs it inline and gets
    the executed transitions back.
    """
    if detach_stop_work is None:
        detach_stop_work = env is None
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
    parsed, document = parse_hook_document(Provider(provider), event, payload)
    now = clock.now_ms() if clock is not None else time.time_ns() // 1_000_000
    limit = _limit_words(parsed, document, now)
    opened = open_for_hook(home, generation)
    try:
        recorded = _record(opened, raw, parsed, now, limit)
    finally:
        opened.conn.close()
    if recorded.authenticated:  # only a real pane's hook may leave the open cache behind
        remember_hook_open(opened)
    if recorded.outcome.handled:
        _record_evidence(home, parsed, recorded, now, document)
        if parsed.kind is HookKind.TURN_STOPPED or parsed.event == "StopFailure" \
                or recorded.bound_now:
            from core.hooks.usage_handoff import after_turn  # a plain event imports nothing

            after_turn(home, parsed.provider.value, parsed.event, document,
                       recorded.outcome.session_key, parsed.turn_id,
                       first_hook=recorded.bound_now)
    if recorded.outcome.handled and parsed.kind is HookKind.PROMPT_SUBMITTED and \
            env.get(ENV_AGENT_TOOLS) == "http":
        from core.providers.agent_http import ensure_for_turn  # HTTP launches only

        ensure_for_turn(home.run_dir, home.child_env())  # a killed server, started again
    if recorded.outcome.handled and parsed.notice_message_id is not None:
        from core.broker.kick import witness_notice  # only a notification line pays this

        witness_notice(home.broker_path, recorded.frame_id, parsed.notice_message_id, now)
    if recorded.attention is not None:
        _publish_attention(home, env, recorded.frame_id, recorded.attention)
    if recorded.trusted_stop:
        from core.broker.kick import kick_after_stop
        kick_after_stop(home.broker_path, recorded.frame_id, env,  # lines that waited for Stop
                        home=home)
    if recorded.observed_controls:
        _lift_fences(home, generation, recorded.observed_controls)
    if not recorded.stop_work:
        return recorded.outcome
    if detach_stop_work:
        from core.hooks import stop_worker

        taker = stop_worker.hand_over(home, generation, recorded.frame_id)
        reason = recorded.outcome.reason + f"; waiting work handed to {taker}"
        return recorded.outcome._replace(reason=reason)
    from core.hooks.stop_worker import run_waiting_work

    executed = run_waiting_work(home, generation, recorded.frame_id)
    return recorded.outcome._replace(executed_transitions=tuple(executed))


class _Recorded(NamedTuple):
    outcome: HookOutcome
    authenticated: bool
    frame_id: str = ""
    stop_work: bool = False
    project_id: str = ""
    project_root: str = ""
    observed_controls: tuple[str, ...] = ()
    attention: Attention | None = None
    trusted_stop: bool = False
    bound_now: bool = False
    """This hook bound a session whose id the CLI names itself (Codex's first one)."""


class Attention(NamedTuple):
    """What the person should learn outside the view: new counts, maybe a nudge."""

    segment: str
    kind: str | None  # an AttentionKind value, or None: counts only


def _limit_words(hook: HookEvent, document: dict[str, object], now: int) -> str | None:
    """For a turn that ended on a usage or rate limit: what the CLI said, and the reset
    time when it stated one (the recovery's words); None for every other event."""
    if hook.activity_reason is not ActivityReason.USAGE_LIMIT:
        return None
    from core.model.limit_text import reset_from_text

    said = document.get("last_assistant_message")
    said = shown(said)[:300] if isinstance(said, str) and said.strip() else "rate limit"
    reset = reset_from_text(said, now)
    when = "" if reset is None else time.strftime(
        " It resets at %H:%M UTC.", time.gmtime(reset // 1000))
    return f"{said}.{when}" if not said.endswith(".") else f"{said}{when}"


def _record(opened: HookRegistry, raw: str, hook: HookEvent, now: int,
            limit: str | None = None) -> _Recorded:
    """The one short write transaction: authenticate, match the session, record.

    Also says whether a trusted Stop left a transition waiting (which needs
    the full engine, opened only then).
    """
    from storage.connection import write_transaction
    from storage.operations import sessions as sessions_ops

    with write_transaction(opened.conn) as conn:
        if opened.home.read_current_generation() != opened.generation_id:
            # A reset published a new generation since we looked: the old file stays as is.
            return _Recorded(HookOutcome(False, "stale generation: no-op"), False)
        authority = authenticate(conn, raw, now)
        key = authority.session_key
        session = conn.execute("SELECT * FROM provider_sessions WHERE session_key = ?",
                               (key,)).fetchone() if key else None
        if session is None or not key:
            raise Unauthorized("capability is not bound to a provider session")
        if session["provider"] != hook.provider.value:
            raise Unauthorized("hook provider does not match the launched provider")
        frame_id = authority.frame_id
        bound_now = False
        if session["provider_session_id"].startswith(PENDING_SESSION_PREFIX):
            # Bind Codex's thread id only from a session/prompt hook, never from notify,
            # which also fires for an internal title-generation thread.
            if hook.kind not in (HookKind.SESSION_STARTED, HookKind.PROMPT_SUBMITTED):
                return _Recorded(HookOutcome(
                    False, "unbound session: waiting for its first prompt", key), True)
            key = sessions_ops.rekey_session(conn, key, hook.provider_session_id)
            bound_now = True
        elif session["provider_session_id"] != hook.provider_session_id:
            # Codex also notifies for an internal title-generation thread: foreign ids
            # are not ours and change nothing.
            return _Recorded(HookOutcome(False, "foreign provider session id: ignored", key),
                             True)
        _bind_launch(conn, authority.launch_id, now)
        runtime = hook.runtime.value if hook.runtime else None
        if hook.kind in (HookKind.PROMPT_SUBMITTED, HookKind.TURN_STOPPED,
                         HookKind.TOOL_STARTED, HookKind.TOOL_FINISHED,
                         HookKind.PERMISSION_REQUESTED):
            runtime = runtime or RuntimePresence.LIVE.value
        activity, reason = hook.activity, hook.activity_reason
        if hook.idle_prompt and session["activity"] == Activity.WORKING:
            # The prompt sat idle while we believed a turn was running: it ended without
            # a Stop (interrupt, API error). Unknown, not ready: only a Stop says ready.
            activity, reason = Activity.UNKNOWN, ActivityReason.UNKNOWN
        sessions_ops.record_activity(conn, key, activity=activity, reason=reason,
                                     runtime_presence=runtime, turn_id=hook.turn_id,
                                     provider_version=None, now=now)
        attention = _attention(conn, session["activity"], activity,
                               hook.kind is HookKind.TURN_STOPPED)
        if limit is not None:
            from core.hooks.usage_handoff import open_limit_recovery

            open_limit_recovery(conn, session["host_id"], frame_id, limit, now)
        elif hook.kind is HookKind.PROMPT_SUBMITTED:
            _resolve_limit_recovery(conn, frame_id, now)
        reminder = False
        observed: tuple[str, ...] = ()
        if hook.kind is HookKind.PROMPT_SUBMITTED and hook.is_control_prompt:
            # Only the fixed line itself is evidence that the control turn arrived.
            observed = _observe_control(conn, frame_id, hook.turn_id, now)
        elif hook.kind is HookKind.PROMPT_SUBMITTED:
            reminder = _handoff_waiting(conn, frame_id)
        shown = (activity or Activity(session["activity"])).value
        trusted_stop = hook.kind is HookKind.TURN_STOPPED and hook.activity is Activity.READY
        stop_work = trusted_stop and _waiting_for_stop(conn, frame_id)
        project = conn.execute(
            "SELECT f.project_id, c.path FROM frames f JOIN projects p USING (project_id)"
            " LEFT JOIN checkouts c ON c.checkout_id = p.checkout_id WHERE f.frame_id = ?",
            (frame_id,)).fetchone()
    return _Recorded(HookOutcome(True, f"{hook.kind.value} recorded", key, shown,
                                 claim_reminder=reminder), True,
                     frame_id, stop_work, project[0] if project else "",
                     (project[1] or "") if project else "", observed, attention, trusted_stop,
                     bound_now)


def _resolve_limit_recovery(conn: sqlite3.Connection, frame_id: str, now: int) -> None:
    """A prompt reached the agent again: a limit recovery about its frame is over. (A
    read first: a plain prompt imports no recovery code.)"""
    if conn.execute("SELECT 1 FROM recoveries WHERE kind = ? AND subject_type = 'frame'"
                    " AND subject_id = ? AND state = 'open'",
                    (RecoveryKind.USAGE_LIMIT.value, frame_id)).fetchone() is None:
        return
    from storage.operations import recoveries as recoveries_ops

    recoveries_ops.resolve_for_subject(conn, RecoveryKind.USAGE_LIMIT, "frame", frame_id, now)


def _attention(conn: sqlite3.Connection, before: str, after: Activity | None,
               turn_stopped: bool) -> Attention | None:
    """New counts when the activity changed; a nudge for needs-input and finished turns."""
    if after is None or after.value == before:
        return None
    from core.hooks.attention_counts import NEEDS_INPUT, TURN_FINISHED, read_counts

    kind = NEEDS_INPUT if after is Activity.NEEDS_INPUT else \
        TURN_FINISHED if turn_stopped and after is Activity.READY else None
    return Attention(read_counts(conn).segment(), kind)


def _publish_attention(home: Home, env: dict[str, str], frame_id: str,
                       attention: Attention) -> None:
    """Detached, never waited for: the status option straight through tmux (no Python
    start-up per hook); the nudges only when someone may need one, by the home's server
    when it runs (``core.model.turn_end``), else by a publisher process."""
    from core.hooks.attention_counts import spawn_publish, spawn_segment

    socket = env.get("SWITCHBOARD_TMUX_SOCKET")
    if socket:
        spawn_segment(socket, attention.segment)
    if attention.kind is not None:
        from core.model.turn_end import ATTENTION, hand_off

        if not hand_off(home.run_dir, ATTENTION, frame_id, [frame_id, attention.kind]):
            spawn_publish(env, frame_id, attention.kind)


def _record_evidence(home: Home, hook: HookEvent, recorded: _Recorded, now: int,
                     document: dict[str, object]) -> None:
    """The session's evidence, after the registry commit (``core.evidence.hook``).

    Best effort by design: the activity is already committed, so a refused or
    busy evidence file is reported on stderr and the provider's hook still succeeds.
    """
    try:
        from core.evidence.capture import HookFacts
        from core.evidence.hook import record

        record(home, hook, HookFacts(recorded.outcome.session_key or "", recorded.project_id,
                                     recorded.project_root, recorded.frame_id or None,
                                     recorded.outcome.activity), document, now)
    except Exception as exc:  # never break the provider over evidence
        print(f"switchboard: session evidence not recorded: {shown(exc)}", file=sys.stderr)


def _waiting_for_stop(conn: sqlite3.Connection, frame_id: str) -> bool:
    """Whether this frame's Stop has a transition to run or a return to settle.

    Asked inside the recording transaction so the common Stop (nothing waiting)
    never imports the engine, the config validator or the sagas.
    """
    row = conn.execute(
        "SELECT EXISTS (SELECT 1 FROM view_transitions WHERE source_frame_id = ?"
        "   AND state = 'prepared' AND kind IN ('push', 'complete_return'))"
        " OR EXISTS (SELECT 1 FROM view_transitions WHERE target_frame_id = ?"
        "   AND state IN ('prepared', 'settling') AND kind = 'complete_return')"
        " OR EXISTS (SELECT 1 FROM view_transitions t JOIN control_turns c"
        "   ON c.transition_id = t.transition_id WHERE t.target_frame_id = ?"
        "   AND t.state = 'awaiting_claim' AND c.state = 'prepared'"
        "   AND c.transport = 'live_input')",
        (frame_id, frame_id, frame_id)).fetchone()
    return bool(row[0])


def _handoff_waiting(conn: sqlite3.Connection, frame_id: str) -> bool:
    """A complete-return to this frame awaits its claim with no line typed: no control
    turn (handoff policy), or one left prepared (the parent was not proven idle)."""
    row = conn.execute(
        "SELECT EXISTS (SELECT 1 FROM view_transitions t WHERE t.target_frame_id = ?"
        "   AND t.kind = 'complete_return' AND t.state = 'awaiting_claim'"
        "   AND NOT EXISTS (SELECT 1 FROM control_turns c"
        "                   WHERE c.transition_id = t.transition_id"
        "                   AND c.state <> 'prepared'))", (frame_id,)).fetchone()
    return bool(row[0])


def _bind_launch(conn: sqlite3.Connection, launch_id: str, now: int) -> None:
    from storage.operations import sessions as sessions_ops

    if sessions_ops.bind_launch(conn, launch_id, now):
        from storage.operations import recoveries as recoveries_ops

        # The exact evidence that settles a bind timeout: resolve it in the same commit.
        recoveries_ops.resolve_for_subject(conn, RecoveryKind.BIND_TIMEOUT, "launch",
                                           launch_id, now)


def _observe_control(conn: sqlite3.Connection, frame_id: str, prompt_id: str | None,
                     now: int) -> tuple[str, ...]:
    """The exact UserPromptSubmit after a submitted control turn: observed. Returns the
    live-input turns whose fence this evidence lifts."""
    from storage.operations import transitions as transitions_ops

    rows = conn.execute(
        "SELECT control_turn_id FROM control_turns WHERE target_frame_id = ?"
        " AND state IN ('submitted', 'uncertain') AND transport = 'live_input'",
        (frame_id,)).fetchall()
    transitions_ops.observe_for_frame(conn, frame_id, prompt_id, now)
    return tuple(row[0] for row in rows)


def _lift_fences(home: Home, generation: str, control_turn_ids: tuple[str, ...]) -> None:
    """The claim line's own UserPromptSubmit re-enables the target's input (contract:
    that observation or the watchdog lifts the fence, not the paste's Enter)."""
    from core.engine.open import open_engine
    from core.runtime import sagas
    from core.runtime.stage import attach_stage

    engine = open_engine(home, expected_generation=generation)
    try:
        attach_stage(engine, home)
        for control_turn_id in control_turn_ids:
            sagas.lift_fence(engine, control_turn_id)
    except Exception as exc:  # the watchdog and reconcile lift it too; never fail the hook
        print(f"switchboard: input fence not lifted yet: {shown(exc)}", file=sys.stderr)
    finally:
        engine.conn.close()


__all__ = ["handle_hook", "HookOutcome"]
