"""`switchboard hook --provider P EVENT`: the lean entry point providers call.

It must stay fast and must never break the provider: errors are reported on
stderr with a non-zero exit, unmanaged sessions exit 0 silently. The exact
shapes providers use are parsed by ``parse_fast`` without argparse (the
console script takes that path before building any parser); anything else
(``--help``, a typo, an abbreviation) falls back to the argparse parser.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from types import SimpleNamespace
from typing import TYPE_CHECKING

from core.model.session_enums import Provider

if TYPE_CHECKING:
    import argparse

PROVIDERS = tuple(sorted(provider.value for provider in Provider))


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("hook", help="(called by providers) record hook evidence")
    p.add_argument("--provider", required=True, choices=list(PROVIDERS))
    p.add_argument("event")
    p.add_argument("payload", nargs="?", help="Codex notify passes the JSON as an argument")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_hook)


def parse_fast(argv: Sequence[str]) -> SimpleNamespace | None:
    """Parse ``[--provider P | --provider=P] [--json] EVENT [PAYLOAD]`` in any order.

    Returns None for anything argparse would treat differently, so the slow
    path stays the single authority on usage errors and help.
    """
    provider: str | None = None
    as_json = False
    positional: list[str] = []
    index = 0
    while index < len(argv):
        arg = argv[index]
        if arg == "--json":
            as_json = True
        elif arg == "--provider":
            if index + 1 >= len(argv) or provider is not None:
                return None
            index += 1
            provider = argv[index]
        elif arg.startswith("--provider="):
            if provider is not None:
                return None
            provider = arg.partition("=")[2]
        elif arg.startswith("-"):
            return None  # an option we do not know, "--" or a negative-number payload
        else:
            positional.append(arg)
        index += 1
    if provider not in PROVIDERS or not 1 <= len(positional) <= 2:
        return None
    return SimpleNamespace(provider=provider, event=positional[0],
                           payload=positional[1] if len(positional) == 2 else None,
                           json=as_json, handler=_hook)


def _hook(args: argparse.Namespace | SimpleNamespace) -> int:
    import os

    if not os.environ.get("SWITCHBOARD_CAPABILITY") and \
            not os.environ.get("SWITCHBOARD_GENERATION"):
        # unmanaged session: nothing to load, nothing to write
        if args.json:
            sys.stdout.write('{"activity": null, "executed": [], "handled": false,'
                             ' "reason": "unmanaged session: no Switchboard markers"}\n')
        return 0
    from core.hooks.hook_handler import handle_hook
    from core.providers.hooks import MAX_PAYLOAD_BYTES

    # One byte past the bound is enough to refuse an oversized payload; the rest
    # is never buffered. A trusted Stop's waiting push/return runs in a detached
    # worker (the default when the hook reads its own environment).
    payload = args.payload if args.payload is not None \
        else sys.stdin.buffer.read(MAX_PAYLOAD_BYTES + 1)
    outcome = handle_hook(args.provider, args.event, payload)
    if outcome.claim_reminder and not args.json and _adds_context(args.provider):
        # Claude adds a UserPromptSubmit hook's additionalContext to the turn: the
        # fixed line, nothing interpolated (the handoff itself comes from the claim).
        import json

        from core.model.control_line import CONTROL_TEMPLATE
        json.dump({"hookSpecificOutput": {"hookEventName": "UserPromptSubmit",
                                          "additionalContext": CONTROL_TEMPLATE}}, sys.stdout)
        sys.stdout.write("\n")
    if args.json:
        import json
        json.dump({"handled": outcome.handled, "reason": outcome.reason,
                   "activity": outcome.activity,
                   "executed": list(outcome.executed_transitions),
                   "claim_reminder": outcome.claim_reminder}, sys.stdout)
        sys.stdout.write("\n")
    return 0


def _adds_context(provider: str) -> bool:
    """Whether ``provider``'s CLI adds a UserPromptSubmit hook's output to the turn."""
    from core.providers.traits import traits

    return traits(provider).prompt_hook_adds_context
