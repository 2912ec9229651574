"""The agent tools: task_push, task_complete_return, transition_claim.

Each derives all authority from the caller's capability (pane environment);
none takes a frame, view or pane argument. Results are plain dicts ready for
JSON (CLI) or MCP tool output. Each call opens the registry, acts and closes
it again, so a long-lived MCP server holds no connection between calls.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from core.config.capabilities import ENV_CAPABILITY, ENV_GENERATION, Authority, authenticate
from core.config.home import Home
from core.model.enums import CreatedBy, Provider
from core.model.errors import Conflict, RequestConflict, SwitchboardError, Unauthorized

if TYPE_CHECKING:
    from core.context.reader import RegistryReader
    from core.engine.engine import Engine

CLAIM_WAIT_S = 20.0
"""How long transition_claim waits for a presentation still being committed: well
under either CLI's tool timeout, well over a loaded machine's pane swap."""
CLAIM_POLL_S = 0.2
CLAIM_RACES = ("transition_not_ready", "not_foreground")

NO_CAPABILITY = ("no Switchboard capability in this environment; agent tools only work "
                 "inside a pane that Switchboard launched")


def _authority(engine: RegistryReader, env: dict[str, str]) -> Authority:
    raw = env.get(ENV_CAPABILITY)
    if not raw:
        raise Unauthorized(NO_CAPABILITY)
    if env.get(ENV_GENERATION) != engine.generation_id:
        raise Unauthorized("this pane belongs to an older Switchboard generation")
    authority = authenticate(engine.conn, raw, engine.now())
    pane = env.get("TMUX_PANE")
    if pane and authority.pane_id and pane != authority.pane_id:
        raise Unauthorized("capability is bound to another pane")
    return authority


@contextmanager
def authorized(env: dict[str, str] | None) -> Iterator[tuple[Engine, Authority]]:
    """Open the engine (with its tmux stage: a transition that runs at once must
    really move panes, not only record that they moved), authenticate, close.
    Public: every agent tool (``core.agent.tools_broker``/``_context`` too) runs in it."""
    from core.engine.open import open_engine

    env = dict(os.environ if env is None else env)
    if not env.get(ENV_CAPABILITY):
        raise Unauthorized(NO_CAPABILITY)  # before touching (or requiring) any registry
    engine = open_engine(Home.from_env(env), with_stage=True)
    try:
        yield engine, _authority(engine, env)
    finally:
        engine.conn.close()


@contextmanager
def authorized_reader(env: dict[str, str] | None) -> Iterator[tuple[RegistryReader, Authority]]:
    """``authorized`` for a tool that only reads: the registry and its config, opened and
    checked by the same ``open_current``, and the same capability, generation and pane
    checks, without the ``Engine`` and its tmux stage. Each call is a fresh process, and
    importing the engine (its requests, sagas and providers) is most of a read's time."""
    from core.config.registry import open_current
    from core.context.reader import RegistryReader

    env = dict(os.environ if env is None else env)
    if not env.get(ENV_CAPABILITY):
        raise Unauthorized(NO_CAPABILITY)  # before touching (or requiring) any registry
    opened = open_current(Home.from_env(env))
    reader = RegistryReader(conn=opened.conn, config=opened.config, home=opened.home)
    try:
        yield reader, _authority(reader, env)
    finally:
        reader.conn.close()


def _provider(value: str | None) -> Provider | None:
    if value is None:
        return None
    try:
        return Provider(value)
    except ValueError:
        known = ", ".join(p.value for p in Provider)
        raise SwitchboardError(f"unknown provider {value!r} (known: {known})",
                               code="bad_request") from None


def task_push(title: str, brief: str, purpose: str | None = None,
              provider: str | None = None, *, request_id: str | None = None,
              env: dict[str, str] | None = None) -> dict[str, Any]:
    """Prepare a child task from the caller's frame; it runs on the caller's Stop."""
    chosen = _provider(provider)
    with authorized(env) as (engine, authority):
        from core.context.requests import fingerprint

        # Same push text from the same frame is the same request: retries don't duplicate.
        rid = request_id or _derived_id(fingerprint("agent.push", {
            "frame": authority.frame_id, "title": title, "brief": brief}))
        try:
            result = engine.frame_push(rid, authority.frame_id, title, brief, purpose=purpose,
                                       provider=chosen, created_by=CreatedBy.AGENT)
        except RequestConflict:
            # An agent cannot choose request ids: say what it can change instead.
            raise RequestConflict(
                "a task with this title and brief was already pushed from this frame with "
                "a different purpose or provider; repeat the original arguments to get its "
                "result, or use another title for a new task") from None
    return {"ok": True, "transition_id": result.transition_id, "state": result.state,
            "child_frame_id": result.target_frame_id,
            "message": "The task is prepared. End your turn now; Switchboard hands the work "
                       "to the child when your turn stops."}


def task_complete_return(summary: str, next_action: str, *, request_id: str | None = None,
                         env: dict[str, str] | None = None) -> dict[str, Any]:
    """Store the caller's handoff and prepare the return to its parent."""
    with authorized(env) as (engine, authority):
        from core.context.requests import fingerprint

        rid = request_id or _derived_id(fingerprint("agent.complete", {
            "frame": authority.frame_id, "summary": summary, "next": next_action}))
        try:
            result = engine.frame_complete(rid, authority.frame_id, summary, next_action,
                                           source=CreatedBy.AGENT)
        except RequestConflict:
            raise RequestConflict(
                "this completion was already recorded with other words; repeat the original "
                "summary and next action") from None
    return {"ok": True, "transition_id": result.transition_id, "state": result.state,
            "message": "The handoff is stored. End your turn now; your parent receives it."}


def transition_claim(*, env: dict[str, str] | None = None) -> dict[str, Any]:
    """Return the brief or handoff addressed to the caller's frame (idempotent)."""
    with authorized(env) as (engine, authority):
        from core.runtime.claims import claim_for_frame

        deadline = time.monotonic() + CLAIM_WAIT_S
        while True:
            try:
                result = claim_for_frame(engine, authority.frame_id, authority.session_key,
                                         authority=authority)
                break
            except Conflict as exc:
                # The agent can start (and call this) before its presentation commits;
                # a model told "try again" may simply stop, so the wait happens here.
                if exc.code not in CLAIM_RACES or time.monotonic() >= deadline:
                    raise
                time.sleep(CLAIM_POLL_S)
    out: dict[str, Any] = {"ok": True, "kind": result.kind, "instructions": result.instructions,
                           "frame_id": result.frame_id, "title": result.title,
                           "first_claim": result.first_claim}
    if result.kind == "brief":
        out["brief"] = result.body
    elif result.kind == "handoff":
        out["summary"] = result.summary
        out["next_action"] = result.next_action
    return out


def transition_cancel(*, request_id: str | None = None,
                      env: dict[str, str] | None = None) -> dict[str, Any]:
    """Withdraw the push or return the caller asked for while it still waits (prepared)."""
    with authorized(env) as (engine, authority):
        row = engine.conn.execute(
            "SELECT transition_id FROM view_transitions WHERE source_frame_id = ?"
            " AND kind IN ('push', 'complete_return') ORDER BY created_at DESC,"
            " transition_id DESC LIMIT 1", (authority.frame_id,)).fetchone()
        if row is None:
            raise Conflict("you have asked for no push or return; nothing to cancel",
                           code="nothing_to_cancel")
        from core.context.requests import fingerprint

        rid = request_id or _derived_id(fingerprint("agent.cancel", {
            "frame": authority.frame_id, "transition": row["transition_id"]}))
        result = engine.transition_cancel(rid, transition_id=row["transition_id"],
                                          by_frame=authority.frame_id)
    return {"ok": True, "transition_id": result.transition_id, "state": result.state,
            "message": "The transition is cancelled; nothing moved. Continue your work."}


def _derived_id(digest_hex: str) -> str:
    """A UUID-shaped request id derived from the semantic fingerprint."""
    h = digest_hex[:32]
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-8{h[17:20]}-{h[20:32]}"

