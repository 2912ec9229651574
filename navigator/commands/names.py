"""FRAME, VIEW and PROJECT arguments: a name, an id prefix or the id, resolved once.

Every command's argument that names a frame, view or project is found from its
name in the parser (``frame_id``, ``view_id``, ``project``: the same rule that
makes shell completion offer names for it), marked on its parser, and resolved
to the row's id right after parsing, before the handler runs
(``core.state.names.resolve_name``, one resolver for every command). So a
handler keeps receiving an id, and ``frame show "Add tests"`` works wherever
``frame show 3f2a…`` did. A name that is unknown or ambiguous stops the
command in one line, before anything is opened for writing.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterator
from pathlib import Path

from core.state.names import RESOLVED_KINDS, NameKind, resolve_one

PATH_METAVARS = frozenset({"PATH", "DIR", "FILE"})
NAMED_ATTRIBUTE = "named_arguments"
"""The parsed namespace's (dest, kind) pairs to resolve (set on each command's parser)."""

UNRESOLVED_COMMANDS = frozenset({("attention",), ("ui",)})
"""Not resolved here: ``attention`` is plumbing that takes ids only (the hook starts
``attention --publish --frame ID`` detached, and it must still publish the counts when
that frame is gone); ``ui`` resolves its view on the connection it opens anyway
(``resolve_one``), so a navigator pane's start pays no second registry open."""


def name_kind(action: argparse.Action, path: tuple[str, ...]) -> NameKind | None:
    """What an argument names, from its name: the CLI's arguments are named for what
    they take (``project``, ``frame_id``, ``view_id``, ``MEMBER``). Completion offers
    these names and ``resolve_arguments`` accepts them: one rule for both."""
    if action.choices is not None or action.type is Path or action.metavar in PATH_METAVARS:
        return None
    dest = action.dest
    if path[:1] == ("remote",):
        return None  # a remote host's projects are not in this registry
    if dest == "project":
        return NameKind.PROJECT
    if dest in ("frame_id", "frame") or action.metavar in ("FRAME", "FRAME_ID"):
        return NameKind.FRAME
    if dest in ("view_id", "view"):
        return NameKind.VIEW
    if action.metavar == "MEMBER" or dest in ("member", "member_id", "sender", "recipient"):
        return NameKind.MEMBER
    return None


def _parsers(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
             ) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from _parsers(child, (*path, name))


def mark_named_arguments(parser: argparse.ArgumentParser) -> None:
    """Record on each command's parser which of its arguments name a frame, view or
    project (``resolve_arguments`` reads it from the parsed namespace)."""
    for path, child in _parsers(parser):
        if path in UNRESOLVED_COMMANDS:
            continue
        named = tuple((action.dest, kind.value) for action in child._actions
                      if not isinstance(action, argparse._SubParsersAction)
                      and (kind := name_kind(action, path)) in RESOLVED_KINDS)
        if named:
            child.set_defaults(**{NAMED_ATTRIBUTE: named})


def resolve_arguments(args: argparse.Namespace) -> None:
    """Replace each marked argument's text by the id it names (in place).

    Opens the registry once (only reading it), and only when the command was given one.
    """
    named = [(dest, NameKind(kind), value) for dest, kind in getattr(args, NAMED_ATTRIBUTE, ())
             if isinstance(value := getattr(args, dest, None), str) and value]
    if not named:
        return
    from core.config.registry import open_current

    # Not a read-only open, though it only reads: the command's own read-write
    # connection to the same file follows in this process, and a read-only one opened
    # beside read-write ones in one process read "database disk image is malformed"
    # (tests/integration/test_hostile_text.py, which calls the CLI in-process).
    opened = open_current()
    try:
        for dest, kind, value in named:
            setattr(args, dest, resolve_one(opened.conn, opened.config, opened.home.root,
                                            kind, value))
    finally:
        opened.conn.close()


def resolving(handler: Callable[[argparse.Namespace], int | None]
              ) -> Callable[[object], int | None]:
    """``handler`` run on the namespace once its named arguments are ids."""
    def run(args: object) -> int | None:
        assert isinstance(args, argparse.Namespace)
        resolve_arguments(args)
        return handler(args)

    return run
