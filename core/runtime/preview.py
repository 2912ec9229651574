"""The last lines of a parked agent's pane, for the navigator's preview.

A parked agent is out of sight; its badge says whether it is working, but not
what it last printed. On selection only (the navigator debounces and never
polls), one tmux process reads the server's identity and captures the pane in
the same batch, so a restarted server's reused pane id is never shown. The
lines keep their colours (SGR) and nothing else (``core.model.text.sgr_only``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.model.text import sgr_only, strip_sgr
from core.tmux.errors import TmuxCommandFailed
from core.tmux.identity import ServerIdentity, identity_command

if TYPE_CHECKING:
    from core.context.context import Context

PREVIEW_LINES = 12


def preview_lines(ctx: Context, frame_id: str, lines: int = PREVIEW_LINES) -> list[str] | None:
    """The pane's last ``lines`` non-blank-trailing lines, or None when the frame has no
    live agent pane on the recorded, still running server."""
    stage = getattr(ctx, "stage", None)
    if stage is None:
        return None
    row = ctx.conn.execute(
        "SELECT s.pane_id, t.socket_path, t.server_pid, t.server_start_time FROM frames f"
        " JOIN surfaces s ON s.session_key = f.current_session_key"
        " AND s.lifecycle_state = 'live'"
        " JOIN tmux_servers t ON t.tmux_server_id = s.tmux_server_id"
        " WHERE f.frame_id = ?", (frame_id,)).fetchone()
    if row is None or not str(row[0]).startswith("%"):
        return None
    expected = ServerIdentity(row[1], int(row[2]), int(row[3]))
    out = stage.runner.run([identity_command(),
                            ("capture-pane", "-p", "-e", "-J", "-S", f"-{lines}", "-t",
                             row[0])],
                           check=False)
    if out.returncode != 0 or not out.stdout:
        return None
    try:
        if ServerIdentity.parse(out.stdout[0]) != expected:
            return None
    except TmuxCommandFailed:
        return None
    # Colours survive (``-e``), everything else the agent printed is spelled out.
    text = [sgr_only(line) for line in out.stdout[1:]]
    while text and not strip_sgr(text[-1]).strip():
        text.pop()
    return text[-lines:]
