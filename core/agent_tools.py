"""The agent tools: task_push, task_complete_return, transition_claim.

Each derives all authority from the caller's capability (pane environment);
none takes a frame, view or pane argument. Results are plain dicts ready for
JSON (CLI) or MCP tool output.
"""

from __future__ import annotations

import os
from typing import Any

from core.capabilities import ENV_CAPABILITY, ENV_GENERATION, Authority, authenticate
from core.enums import CreatedBy, Provider
from core.errors import Unauthorized
from core.home import Home


def _authority(engine, env: dict[str, str]) -> Authority:
    raw = env.get(ENV_CAPABILITY)
    if not raw:
        raise Unauthorized("no Switchboard capability in this environment; agent tools only "
                           "work inside a pane that Switchboard launched")
    if env.get(ENV_GENERATION) != engine.generation_id:
        raise Unauthorized("this pane belongs to an older Switchboard generation")
    authority = authenticate(engine.conn, raw, engine.now())
    pane = env.get("TMUX_PANE")
    if pane and authority.pane_id and pane != authority.pane_id:
        raise Unauthorized("capability is bound to another pane")
    return authority


def _open(env: dict[str, str]):
    from core.session import open_engine

    return open_engine(Home.from_env(env))


def task_push(title: str, brief: str, purpose: str | None = None,
              provider: str | None = None, *, request_id: str | None = None,
              env: dict[str, str] | None = None) -> dict[str, Any]:
    env = dict(os.environ if env is None else env)
    engine = _open(env)
    authority = _authority(engine, env)
    from core.requests import fingerprint, new_request_id

    # Same push text from the same frame is the same request: retries don't duplicate.
    rid = request_id or _derived_id(fingerprint("agent.push", {
        "frame": authority.frame_id, "title": title, "brief": brief}))
    del new_request_id
    result = engine.frame_push(rid, authority.frame_id, title, brief, purpose=purpose,
                               provider=Provider(provider) if provider else None,
                               created_by=CreatedBy.AGENT)
    return {"ok": True, "transition_id": result.transition_id, "state": result.state,
            "child_frame_id": result.target_frame_id,
            "message": "The task is prepared. End your turn now; Switchboard hands the work "
                       "to the child when your turn stops."}


def task_complete_return(summary: str, next_action: str, *, request_id: str | None = None,
                         env: dict[str, str] | None = None) -> dict[str, Any]:
    env = dict(os.environ if env is None else env)
    engine = _open(env)
    authority = _authority(engine, env)
    from core.requests import fingerprint

    rid = request_id or _derived_id(fingerprint("agent.complete", {
        "frame": authority.frame_id, "summary": summary, "next": next_action}))
    result = engine.frame_complete(rid, authority.frame_id, summary, next_action,
                                   source=CreatedBy.AGENT)
    return {"ok": True, "transition_id": result.transition_id, "state": result.state,
            "message": "The handoff is stored. End your turn now; your parent receives it."}


def transition_claim(*, env: dict[str, str] | None = None) -> dict[str, Any]:
    env = dict(os.environ if env is None else env)
    engine = _open(env)
    authority = _authority(engine, env)
    from core.claims import claim_for_frame

    result = claim_for_frame(engine, authority.frame_id, authority.session_key)
    out: dict[str, Any] = {"ok": True, "kind": result.kind, "instructions": result.instructions,
                           "frame_id": result.frame_id, "title": result.title,
                           "first_claim": result.first_claim}
    if result.kind == "brief":
        out["brief"] = result.body
    elif result.kind == "handoff":
        out["summary"] = result.summary
        out["next_action"] = result.next_action
    return out


def _derived_id(digest_hex: str) -> str:
    """A UUID-shaped request id derived from the semantic fingerprint."""
    h = digest_hex[:32]
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-8{h[17:20]}-{h[20:32]}"
