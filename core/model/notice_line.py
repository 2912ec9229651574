"""The line typed into a Switchboard-launched agent when a message waits for it.

It lives here, beside the hook vocabulary, because two ends read it: the broker
types it (``core.broker.delivery``) and the agent's own prompt hook recognises
it (``core.providers.hooks``). The hook's recognition is the witness that the
line reached the agent: a typist killed between typing and stamping leaves the
message unstamped, and the agent's hook stamps it instead, so it is not typed a
second time. Parsing is plain string work: the hook path imports no ``re``.
"""

from __future__ import annotations

from core.model.text import typed_name

_HEAD = "[switchboard] message "
_FROM = " from "
_TAIL = ": call message_poll() to read it, then message_ack("


def managed_line(message_id: int, sender_name: str) -> str:
    """The line typed to a Switchboard-launched agent: its tools, not the broker CLI."""
    name = typed_name(sender_name)
    return f"{_HEAD}{message_id}{_FROM}{name}{_TAIL}{message_id})"


def notice_message_id(prompt: str) -> int | None:
    """The message id of a prompt that is exactly one ``managed_line``, else None.

    The id must be spelled the same at both ends of the line (a sender's name can
    contain anything typable, so the middle is not parsed)."""
    text = prompt.strip()
    if not text.startswith(_HEAD) or not text.endswith(")"):
        return None
    head, _, rest = text[len(_HEAD):].partition(_FROM)
    middle, _, tail = rest.rpartition(_TAIL)
    if not middle or not head.isdigit() or not head.isascii() or tail != head + ")":
        return None
    return int(head)
