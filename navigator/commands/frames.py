"""`switchboard frame ...`: thin calls into the engine's frame operations."""

from __future__ import annotations

import argparse

from core.model.session_enums import Provider
from core.model.text import shown
from navigator.commands.output import emit
from navigator.commands.output import request_id_from as _rid


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true")
    p.add_argument("--request-id", help="reuse to retry idempotently (default: fresh)")


def register(sub: argparse._SubParsersAction) -> None:
    frame = sub.add_parser("frame", help="frames: the workspace and its tasks")
    fs = frame.add_subparsers(dest="frame_command", metavar="ACTION", required=True)
    p = fs.add_parser("list", help="frames of a project (or all)")
    p.add_argument("--project")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_list)
    p = fs.add_parser("show", help="one frame")
    p.add_argument("frame_id")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_show)
    p = fs.add_parser("start", help="start (or resume) the frame's provider session")
    p.add_argument("frame_id")
    p.add_argument("--provider", choices=sorted(provider.value for provider in Provider))
    p.add_argument("--fresh", action="store_true",
                   help="start a new session even if the last one could be resumed")
    _common(p)
    p.set_defaults(handler=_start)
    p = fs.add_parser("stop", help="stop the frame's agent (its session stays resumable)")
    p.add_argument("frame_id")
    _common(p)
    p.set_defaults(handler=_stop)
    p = fs.add_parser("push", help="push a child task under a frame")
    p.add_argument("frame_id", help="the parent (source) frame")
    p.add_argument("--title", required=True)
    p.add_argument("--brief", required=True)
    p.add_argument("--purpose")
    p.add_argument("--provider", choices=sorted(provider.value for provider in Provider))
    _common(p)
    p.set_defaults(handler=_push)
    p = fs.add_parser("fork", help="a sibling task whose agent continues a copy of the "
                                   "frame's conversation (the frame keeps its session)")
    p.add_argument("frame_id", help="the frame whose conversation is forked")
    p.add_argument("--title", help="the fork's title (default: 'fork of TITLE')")
    p.add_argument("--worktree", action="store_true",
                   help="work in a git worktree of its own (a project PROJECT-fork-ID, the "
                        "fork a task under its workspace)")
    p.add_argument("--no-start", action="store_true",
                   help="make the fork without starting its agent (n starts it later)")
    _common(p)
    p.set_defaults(handler=_fork)
    p = fs.add_parser("back", help="show the parent of the view's active frame")
    p.add_argument("view_id")
    _common(p)
    p.set_defaults(handler=_back)
    p = fs.add_parser("complete", help="complete a task and return to its parent")
    p.add_argument("frame_id")
    p.add_argument("--summary", required=True)
    p.add_argument("--next-action", default="")
    _common(p)
    p.set_defaults(handler=_complete)
    p = fs.add_parser("close", help="close a task without a handoff (dismissed)")
    p.add_argument("frame_id")
    _common(p)
    p.set_defaults(handler=_close)
    p = fs.add_parser("reopen", help="reopen a closed frame")
    p.add_argument("frame_id")
    _common(p)
    p.set_defaults(handler=_reopen)
    from navigator.commands.review import register_frame_commands

    register_frame_commands(fs)  # frame diff
    from navigator.commands.switch import register_switch

    register_switch(fs)  # frame switch-provider (issue 26)
    p = fs.add_parser("message", help="the person's message to the frame's agent "
                                      "(what the navigator's t sends)")
    p.add_argument("frame_id")
    p.add_argument("--text", required=True,
                   help="what the agent reads (newlines and tabs allowed; typed when it is "
                        "shown and ready)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_message)
    p = fs.add_parser("answer", help="answer the frame's agent prompt yes or no (its first "
                                     "Yes or No option, pressed in its pane)")
    p.add_argument("frame_id")
    choice = p.add_mutually_exclusive_group(required=True)
    choice.add_argument("--yes", action="store_true", help="pick its first Yes option")
    choice.add_argument("--no", action="store_true", help="pick its first No option")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_answer)


def _engine():
    from core.engine.open import open_engine
    return open_engine(with_stage=True)




def _list(args: argparse.Namespace) -> int:
    from core.engine.open import open_engine
    from core.state.queries import list_frames

    engine = open_engine()
    project_id = engine.config.project_id_for(args.project) if args.project else None
    rows = list_frames(engine.conn, project_id)
    text = "\n".join(
        f"{'  ' * r.depth}{r.frame_id}  {r.role:<9} {r.lifecycle_state:<7} {shown(r.title)}"
        for r in rows) or "no frames"
    emit(rows, as_json=args.json, text=text)
    return 0


def _show(args: argparse.Namespace) -> int:
    from core.engine.open import open_engine
    from core.state.queries import get_frame_summary

    row = get_frame_summary(open_engine().conn, args.frame_id)
    emit(row, as_json=args.json)
    return 0


def _start(args: argparse.Namespace) -> int:
    from core.model.enums import Provider

    result = _engine().frame_start(_rid(args), args.frame_id,
                                   Provider(args.provider) if args.provider else None,
                                   fresh=args.fresh)
    emit(result, as_json=args.json, text=f"started {result.session_key} in {result.frame_id}")
    return 0


def _stop(args: argparse.Namespace) -> int:
    result = _engine().frame_stop(_rid(args), args.frame_id)
    emit(result, as_json=args.json, text=f"stopped the agent of {result.frame_id}")
    return 0


def _push(args: argparse.Namespace) -> int:
    from core.model.enums import Provider

    result = _engine().frame_push(_rid(args), args.frame_id, args.title, args.brief,
                                  purpose=args.purpose,
                                  provider=Provider(args.provider) if args.provider else None)
    emit(result, as_json=args.json,
         text=f"push {result.transition_id}: {result.state} -> frame {result.target_frame_id}")
    return 0


def _fork(args: argparse.Namespace) -> int:
    result = _engine().frame_fork(_rid(args), args.frame_id, title=args.title,
                                  start=not args.no_start, worktree=args.worktree)
    emit(result, as_json=args.json,
         text=f"forked {args.frame_id} as {result.frame_id}")
    return 0


def _back(args: argparse.Namespace) -> int:
    result = _engine().frame_back(_rid(args), args.view_id)
    emit(result, as_json=args.json, text=f"back: showing {result.target_frame_id}")
    return 0


def _complete(args: argparse.Namespace) -> int:
    result = _engine().frame_complete(_rid(args), args.frame_id, args.summary, args.next_action)
    emit(result, as_json=args.json,
         text=f"complete-return {result.transition_id}: {result.state}")
    return 0


def _close(args: argparse.Namespace) -> int:
    result = _engine().frame_close(_rid(args), args.frame_id)
    emit(result, as_json=args.json, text=f"closed {args.frame_id} (dismissed)")
    return 0


def _reopen(args: argparse.Namespace) -> int:
    result = _engine().frame_reopen(_rid(args), args.frame_id)
    emit(result, as_json=args.json, text=f"reopened {result.frame_id}")
    return 0


def _message(args: argparse.Namespace) -> int:
    from core.broker.membership import person_send

    sent = person_send(_engine(), args.frame_id, args.text)
    emit(sent, as_json=args.json,
         text=f"message {sent.message_id} for {shown(sent.to_name)} ({sent.delivery})")
    return 0


def _answer(args: argparse.Namespace) -> int:
    from core.runtime.answer import answer_prompt

    done = answer_prompt(_engine(), args.frame_id, args.yes)
    emit(done, as_json=args.json, text=f"answered {done.choice}: {done.option}")
    return 0
