"""Help for the arguments the command groups leave undescribed, filled in one place.

Most commands share the same few arguments (``--json``, ``--request-id``, a frame or
view id); a person reading ``--help`` should learn what each takes without a
guess. ``fill_help`` gives every argument without help the text for its name here
(a command's own text for its own arguments wins), and a test keeps every
argument of every command described.
"""

from __future__ import annotations

import argparse

#: Per command ("group action dest" or "group dest"), then per argument name.
_BY_COMMAND: dict[str, str] = {
    "fleet name": "the fleet's name (default: none; it is then named by its id)",
    "remote name": "the remote's name in [[remotes]]",
    "member name": "the member's name, unique in its fleet",
    "view mode": "navigator (the navigator beside the agent) or direct (the agent alone); "
                 "no mode toggles",
    "message text": "the message (at most 8,000 characters)",
    "agent text": "the message (at most 8,000 characters)",
    "hook event": "the provider's hook event name (Stop, UserPromptSubmit, ...)",
    "completion shell": "bash, zsh or fish",
}
_BY_NAME: dict[str, str] = {
    "json": "print JSON instead of text",
    "request_id": "a UUID naming this request: retrying with the same one is harmless",
    "view_id": "the view: its project's name, an id prefix or its id (`switchboard view "
               "list`)",
    "frame_id": "the frame: its title (PROJECT/TITLE where titles repeat), an id prefix or "
                "its id (`switchboard frame list`)",
    "recovery_id": "the recovery's id (`switchboard recovery list`)",
    "work_context_id": "the work context's id (`switchboard context list`)",
    "message_id": "the message's id",
    "id": "the message's id",
    "project": "the project's name, an id prefix or its id",
    "provider": "claude or codex",
    "title": "the task's title (one line)",
    "brief": "what the task's agent starts from",
    "purpose": "one line on why the task exists (optional)",
    "summary": "what was done",
    "next_action": "what the parent should do next",
    "to": "who holds the checkout now: a frame id",
    "director_name": "the Director member's name",
    "director_description": "the Director member's description",
    "description": "what the member is for",
    "backend": "the multiplexer (only tmux)",
    "coding_agent": "what runs in the pane (claude, codex, ...)",
    "timeout": "seconds to wait at most",
    "stream": "follow the member's messages as they come (read-only; ctrl+c ends)",
    "include_completed": "also list messages already ACKed",
}


def fill_help(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> None:
    """Give every undescribed argument of ``parser`` and its subcommands its text."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                fill_help(sub, (*path, name))
            continue
        if action.help is not None or isinstance(action, argparse._HelpAction):
            continue
        group = path[0] if path else ""
        action.help = (_BY_COMMAND.get(" ".join((*path, action.dest)))
                       or _BY_COMMAND.get(f"{group} {action.dest}")
                       or _BY_NAME.get(action.dest))
