"""Agent capabilities: a raw secret in the pane environment, its digest in SQLite.

The raw value never touches the database or any log; a hook or agent tool
presents it and gets back the exact bindings (view, frame, surface, launch,
pane, placement generation) it may act for.
"""

from __future__ import annotations

import sqlite3
from typing import NamedTuple

from core.config.home import ENV_CONFIG, ENV_HOME
from core.model.digest import sha256_hex
from core.model.errors import Unauthorized

ENV_CAPABILITY = "SWITCHBOARD_CAPABILITY"
ENV_GENERATION = "SWITCHBOARD_GENERATION"
CAPABILITY_TTL_MS = 30 * 24 * 3600 * 1000
AGENT_TOOL_ENV = (ENV_CAPABILITY, ENV_GENERATION, ENV_HOME, ENV_CONFIG,
                  "SWITCHBOARD_TMUX_SOCKET", "TMUX_PANE", "TMUX", "XDG_STATE_HOME",
                  "XDG_CONFIG_HOME")
"""What an agent-tool process reads from the pane environment: a provider that
starts MCP servers with a cleared environment (Codex) must pass these through.
The launch sets ``SWITCHBOARD_HOME`` and ``SWITCHBOARD_CONFIG`` as absolute paths,
so the two are enough to find this home's state and config in every layout."""

__all__ = ["ENV_CAPABILITY", "ENV_CONFIG", "ENV_GENERATION", "ENV_HOME", "AGENT_TOOL_ENV",
           "CAPABILITY_TTL_MS", "Authority", "authenticate", "digest", "new_raw_capability"]


def new_raw_capability() -> str:
    from core.model.tokens import token_urlsafe  # only a launch mints one

    return "sbcap1_" + token_urlsafe(32)


def digest(raw: str) -> str:
    return sha256_hex(raw.encode("utf-8"))


class Authority(NamedTuple):
    capability_id: str
    view_id: str
    frame_id: str
    session_key: str | None
    surface_id: str
    launch_id: str
    pane_id: str | None
    placement_generation: int


def authenticate(conn: sqlite3.Connection, raw: str, now_ms: int) -> Authority:
    """Resolve a raw capability; forged, revoked or expired ones are refused."""
    if not raw.startswith("sbcap1_") or len(raw) > 200:
        raise Unauthorized("malformed capability; nothing was written")
    row = conn.execute(
        "SELECT * FROM agent_capabilities WHERE capability_digest = ?", (digest(raw),)
    ).fetchone()
    if row is None:
        raise Unauthorized("unknown capability; nothing was written")
    if row["revoked_at"] is not None:
        raise Unauthorized("capability was revoked (its runtime was stopped)")
    if row["expires_at"] <= now_ms:
        raise Unauthorized("capability expired")
    return Authority(row["capability_id"], row["view_id"], row["frame_id"], row["session_key"],
                     row["surface_id"], row["launch_id"], row["pane_id"],
                     row["placement_generation"])
