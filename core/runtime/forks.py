"""Where a forked frame's conversation comes from, kept until its first session runs.

``frame fork`` makes a new task whose first session starts as a fork of another
frame's session (Claude ``--resume PARENT --fork-session``, Codex ``fork PARENT``).
That session is started like any new one (the start bundle, the launcher), possibly
later than the fork itself (a failed first start is retried with ``frame start``), so
the parent session's key is written beside the registry, in a private file per
forked frame under the home's run folder, and the launcher reads it for the frame's
new sessions until one of them has run. Kept out of the registry's tables on
purpose: the launch intent's closed action set and its constraint stay as they are
(the launch is a ``new`` one in every respect but its argv), so no schema upgrade is
needed; the file names only a session key that the registry must still hold.
"""

from __future__ import annotations

import contextlib
import os
import re
import sqlite3
import tempfile
from pathlib import Path

from core.context.context import Context
from core.model.errors import ProviderError
from core.model.files import own_dir, read_bounded, write_private
from core.model.session_enums import PENDING_SESSION_PREFIX

FORKS_DIR = "forks"
_KEY_LIMIT = 512
_FRAME_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")


def _folder(ctx: Context) -> Path:
    """``run/forks`` of the engine's home; without a home (a test's context) the
    launcher's per-user temp folder (``launcher.engine_tmp``, which imports this)."""
    home = getattr(ctx, "home", None)
    base = home.run_dir if home is not None else \
        Path(tempfile.gettempdir()) / f"switchboard-run-{os.getuid()}"
    return own_dir(own_dir(base) / FORKS_DIR)


def _path(ctx: Context, frame_id: str) -> Path:
    if not _FRAME_ID.fullmatch(frame_id):
        raise ProviderError(f"not a frame id: {frame_id[:64]!r}", code="bad_request")
    return _folder(ctx) / frame_id


def record_origin(ctx: Context, frame_id: str, session_key: str) -> None:
    """Say that ``frame_id``'s first session forks ``session_key`` (0600, atomic)."""
    write_private(_path(ctx, frame_id), session_key + "\n")


def origin_of(ctx: Context, frame_id: str) -> str | None:
    """The session key ``frame_id`` was forked from, or None for a frame never forked."""
    try:
        data = read_bounded(_path(ctx, frame_id), _KEY_LIMIT, "fork origin")
    except FileNotFoundError:
        return None
    return data.decode("utf-8", "replace").strip() or None


def _forget(ctx: Context, frame_id: str) -> None:
    """The fork's conversation ran: its origin is done with (best effort)."""
    with contextlib.suppress(OSError):
        _path(ctx, frame_id).unlink()


def fork_source(ctx: Context, conn: sqlite3.Connection, launch: sqlite3.Row) -> str | None:
    """The provider session id a launch forks, or None for a plain launch.

    Only a ``new`` launch of a forked frame forks, and only while none of the frame's
    other sessions has run (had a pane): once the fork ran, its conversation is that
    session's own, and a later fresh start is a plain new session (the origin is then
    forgotten, as at the fork session's first resume). A parent session the
    registry no longer holds, of another provider, or whose id is not known yet, is
    refused by name before any pane exists.
    """
    origin = origin_of(ctx, launch["frame_id"])
    if origin is None:
        return None
    if launch["action"] != "new":
        _forget(ctx, launch["frame_id"])  # a resume: the fork's session exists already
        return None
    ran = conn.execute(
        "SELECT 1 FROM frame_sessions fs WHERE fs.frame_id = ? AND fs.session_key <> ?"
        " AND EXISTS (SELECT 1 FROM surfaces s WHERE s.session_key = fs.session_key"
        " AND s.pane_id IS NOT NULL) LIMIT 1",
        (launch["frame_id"], launch["session_key"])).fetchone()
    if ran is not None:
        _forget(ctx, launch["frame_id"])
        return None
    parent = conn.execute("SELECT provider, provider_session_id FROM provider_sessions"
                          " WHERE session_key = ?", (origin,)).fetchone()
    if parent is None:
        raise ProviderError(f"frame {launch['frame_id']} is a fork of session {origin!r}, "
                            "which the registry no longer holds; start it with --fresh "
                            "for a session of its own", code="launch_invalid")
    if parent["provider"] != launch["provider"]:
        raise ProviderError(f"frame {launch['frame_id']} is a fork of a {parent['provider']} "
                            f"session; a {launch['provider']} agent cannot continue it",
                            code="launch_invalid")
    if parent["provider_session_id"].startswith(PENDING_SESSION_PREFIX):
        raise ProviderError(f"session {origin!r} has no id of its own yet; it cannot be "
                            "forked", code="launch_invalid")
    return str(parent["provider_session_id"])
