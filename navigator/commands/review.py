"""`switchboard frame diff FRAME` and `switchboard conflicts`: review from the shell.

Both only read: git in the frame's checkout, the registry and the review file.
"""

from __future__ import annotations

import argparse

from core.model.text import shown
from navigator.commands.output import emit


def register_frame_commands(frame_actions: argparse._SubParsersAction) -> None:
    """Added to the ``frame`` group (``navigator.commands.frames``)."""
    p = frame_actions.add_parser("diff", help="what the frame changed since its base ref "
                                              "(committed and not), with review comments")
    p.add_argument("frame_id")
    p.add_argument("--stat", action="store_true", help="files with +/- counts only")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_diff)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("conflicts", help="open frames of one repository whose changed files "
                                         "overlap")
    p.add_argument("--refresh", action="store_true",
                   help="recompute every open frame's changed files first (git per frame)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_conflicts)


def _home():
    from core.config.home import Home

    return Home.from_env()


def _diff(args: argparse.Namespace) -> int:
    from core.review.client import ReviewClient
    from core.review.diff import patch_text, quote_path

    def no_send(frame_id: str, text: str):
        raise AssertionError("frame diff sends nothing")

    diff = ReviewClient(_home(), no_send).frame_diff(args.frame_id)
    if args.json:
        emit(diff if not args.stat else _stat_only(diff), as_json=True)
        return 0
    lines = [f"{shown(diff.title)}: {len(diff.files)} file(s), +{diff.added} -{diff.removed}"
             + (f" since {diff.base_ref[:12]}" if diff.base_ref else "")
             + (" (cut: the diff is too large)" if diff.truncated else "")]
    if diff.problem:
        lines.append(f"no diff: {diff.problem}")
    if args.stat:
        width = max((len(f"+{f.added}") for f in diff.files), default=2)
        for file in diff.files:
            what = "binary" if file.binary else f"{'+' + str(file.added):>{width}} -{file.removed}"
            rename = f" (from {quote_path(file.old_path)})" if file.old_path else ""
            lines.append(f"  {what}  {quote_path(file.path)}{rename}  {file.status.value}")
    else:
        lines.append(patch_text(diff).rstrip("\n"))
    for comment in diff.comments:
        lines.append(f"comment [{comment.state}] {comment.path}:{comment.line}: {comment.text}")
    emit(diff, as_json=False, text="\n".join(lines))
    return 0


def _stat_only(diff):
    from dataclasses import replace

    return replace(diff, files=tuple(replace(f, hunks=()) for f in diff.files))


def _conflicts(args: argparse.Namespace) -> int:
    from core.review.changes import conflicts, refresh_open_frames

    home = _home()
    if args.refresh:
        refresh_open_frames(home)
    found = conflicts(home)
    text = "\n".join(f"{shown(c.title)} ({c.frame_id}) overlaps {shown(c.other_title)} "
                     f"({c.other_frame_id}): {', '.join(shown(f) for f in c.files)}"
                     for c in found) or "no conflicts between open frames"
    emit(found, as_json=args.json, text=text)
    return 0
