"""`switchboard frame switch-provider FRAME --to codex|claude`: move a task to the other
provider (issue 26; the work is ``core.usage.switch_provider``).

Stopping a working agent loses what it was doing, so the command asks first on a
terminal and, without one, needs ``--yes``; a refusal changes nothing.
"""

from __future__ import annotations

import argparse
import sys

from navigator.commands.output import emit


def register_switch(fs: argparse._SubParsersAction) -> None:
    from core.model.enums import Provider

    p = fs.add_parser("switch-provider",
                      help="move the task to the other provider: stop its agent, start one "
                           "of --to in the same checkout with a handover brief")
    p.add_argument("frame_id")
    p.add_argument("--to", required=True, choices=[provider.value for provider in Provider])
    p.add_argument("--yes", action="store_true",
                   help="stop the running agent without asking")
    p.add_argument("--json", action="store_true")
    p.add_argument("--request-id", help="reuse to retry idempotently (default: fresh)")
    p.set_defaults(handler=_switch)


def _switch(args: argparse.Namespace) -> int:
    from core.context.requests import new_request_id
    from core.engine.open import open_engine
    from core.model.enums import Provider
    from core.model.errors import Conflict
    from core.model.text import shown
    from core.usage.switch_provider import switch_provider

    engine = open_engine(with_stage=True)
    try:
        frame = engine.conn.execute("SELECT title FROM frames WHERE frame_id = ?",
                                    (args.frame_id,)).fetchone()
        if frame is None:
            from core.model.errors import NotFound

            raise NotFound(f"no frame {shown(args.frame_id)!r}; `switchboard frame list` "
                           "shows the frames")
        if not args.yes:
            if not sys.stdin.isatty():
                raise Conflict(f"moving “{shown(frame[0])}” stops its agent; pass --yes to "
                               "confirm (nothing was changed)", code="not_confirmed")
            answer = input(f"Stop the agent of “{shown(frame[0])}” and carry the task on "
                           f"with {args.to}? [y/N] ")
            if answer.strip().lower() not in ("y", "yes"):
                raise Conflict("not moved (nothing was changed)", code="not_confirmed")
        result = switch_provider(engine, args.request_id or new_request_id(), args.frame_id,
                                 Provider(args.to))
    finally:
        engine.conn.close()
    emit(result, as_json=args.json,
         text=f"“{shown(frame[0])}” moved from {result.from_provider.value} to "
              f"{result.to_provider.value}: new session {result.session_key}; the earlier "
              f"one ({result.old_session_key}) stays in its history")
    return 0
