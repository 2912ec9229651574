"""The person answers an agent's prompt yes or no, from wherever they see it.

Switchboard never answers a provider's dialog by itself (``core.runtime.dialogs``
only reads them). This is the person's own answer, for when they cannot reach
the agent's pane (the navigator in a browser, a remote frame): one read of the
pane's visible screen finds the CLI's choice list (a cursor line and the option
lines under it, as both CLIs draw permission prompts and questions), the first
option that starts with "Yes" (or "No") is the target, and one guarded tmux
process moves the cursor there and presses Enter, the keys the person would
press. The session must be needs-input, the server the recorded one, and the
option on screen: anything else is refused in one line and nothing is typed.
Nothing is written to the registry; the agent's own hooks report what follows.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from core.model.errors import Conflict, NotFound
from core.model.text import shown, strip_sgr
from core.tmux.errors import TmuxCommandFailed
from core.tmux.identity import ServerIdentity, identity_command, run_guarded

if TYPE_CHECKING:
    from core.context.context import Context

#: An option line of a choice list: indented, the cursor's line with ❯ › or >.
_CURSOR = re.compile(r"^[ │]*\s[❯›>]\s+(?P<text>(?:\d+\.\s+)?\S.*)$")
_OPTION = re.compile(r"^[ │]*\s{2,}(?P<text>(?:\d+\.\s+)?\S.*)$")
_RULE = re.compile(r"^\s*[─━═╌-]{8,}\s*$")
_NUMBER = re.compile(r"^\d+\.\s+")


@dataclass(frozen=True)
class Answered:
    """What was pressed for the person: the option chosen, as the screen showed it."""

    frame_id: str
    choice: str
    option: str
    keys: tuple[str, ...]


def choice_list(lines: Sequence[str]) -> tuple[list[str], int] | None:
    """The options of the choice list at the bottom of the screen and the cursor's
    index, or None when the screen shows none (the last block after a rule that has
    a cursor line; options are the lines around it whose text is aligned with it)."""
    start = max((i for i, line in enumerate(lines) if _RULE.match(line)), default=-1) + 1
    block = [line.rstrip() for line in lines[start:]]
    cursor_at = next((i for i, line in enumerate(block) if _CURSOR.match(line)), None)
    if cursor_at is None:
        return None
    cursor_match = _CURSOR.match(block[cursor_at])
    assert cursor_match is not None
    column = cursor_match.start("text")

    def option(line: str) -> re.Match[str] | None:
        """An option line: its text starts where the cursor line's does (a title
        above the list is indented less)."""
        match = _OPTION.match(line)
        return match if match is not None and match.start("text") == column else None

    first = cursor_at
    while first > 0 and option(block[first - 1]):
        first -= 1
    options: list[str] = []
    cursor = 0
    for index in range(first, len(block)):
        match = cursor_match if index == cursor_at else option(block[index])
        if match is None:
            break
        if index == cursor_at:
            cursor = len(options)
        options.append(_NUMBER.sub("", match.group("text")).strip())
    return (options, cursor) if len(options) >= 2 else None


def answer_prompt(ctx: Context, frame_id: str, yes: bool) -> Answered:
    stage = getattr(ctx, "stage", None)
    if stage is None:
        raise Conflict("no tmux stage: run this where the agent's tmux server is",
                       code="no_stage")
    row = ctx.conn.execute(
        "SELECT f.title, ps.activity, s.pane_id, t.socket_path, t.server_pid,"
        " t.server_start_time FROM frames f"
        " JOIN provider_sessions ps ON ps.session_key = f.current_session_key"
        " JOIN surfaces s ON s.session_key = f.current_session_key"
        " AND s.lifecycle_state = 'live'"
        " JOIN tmux_servers t ON t.tmux_server_id = s.tmux_server_id"
        " WHERE f.frame_id = ?", (frame_id,)).fetchone()
    if row is None:
        raise NotFound(f"frame {frame_id} has no live agent pane to answer", code="no_agent")
    title = shown(row[0])
    if row[1] != "needs_input":
        raise Conflict(f"“{title}” is not waiting for an answer (it is {row[1]}); nothing "
                       "was typed", code="not_waiting")
    pane = str(row[2])
    expected = ServerIdentity(row[3], int(row[4]), int(row[5]))
    read = stage.runner.run([identity_command(), ("capture-pane", "-p", "-J", "-t", pane)],
                            check=False)
    try:
        same = read.returncode == 0 and bool(read.stdout) and \
            ServerIdentity.parse(read.stdout[0]) == expected
    except TmuxCommandFailed:
        same = False
    if not same:
        raise Conflict(f"the pane of “{title}” is gone; nothing was typed", code="no_agent")
    found = choice_list([strip_sgr(line) for line in read.stdout[1:]])
    want = "yes" if yes else "no"
    if found is None:
        raise Conflict(f"“{title}” shows no choice list to answer {want}; enter its view to "
                       "answer it there (nothing was typed)", code="no_choice")
    options, cursor = found
    target = next((i for i, text in enumerate(options) if text.lower().startswith(want)),
                  None)
    if target is None:
        listed = "; ".join(shown(o)[:60] for o in options)
        raise Conflict(f"“{title}” offers no “{want}” ({listed}); enter its view to answer "
                       "it there (nothing was typed)", code="no_choice")
    step = "Down" if target > cursor else "Up"
    keys = (*([step] * abs(target - cursor)), "Enter")
    run_guarded(stage.runner, expected, [("send-keys", "-t", pane, *keys)])
    return Answered(frame_id, want, shown(options[target]), keys)
