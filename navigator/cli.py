"""The `switchboard` command line: a thin front end over the core engine.

Each command group lives in its own module under ``navigator.commands`` and is
imported only when its group is named, so the hook path (``switchboard hook``)
never pays for Textual or for groups it does not use.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import argparse

    from _typeshed import SupportsWrite

    from core.model.errors import SwitchboardError

# group name -> module; every module exposes ``register(subparsers)`` which adds
# its parser(s) with ``set_defaults(handler=callable)``; the handler takes the
# parsed namespace and returns an exit code.
GROUPS: dict[str, str] = {
    "init": "navigator.commands.registry",
    "reset": "navigator.commands.registry",
    "state": "navigator.commands.state",
    "view": "navigator.commands.views",
    "frame": "navigator.commands.frames",
    "transition": "navigator.commands.transitions",
    "session": "navigator.commands.sessions",
    "project": "navigator.commands.projects",
    "context": "navigator.commands.contexts",
    "reconcile": "navigator.commands.recovery",
    "recovery": "navigator.commands.recovery",
    "hook": "navigator.commands.hook",
    "hooks": "navigator.commands.hooks_install",
    "agent": "navigator.commands.agent",
    "mcp": "navigator.commands.agent",
    "fleet": "navigator.commands.broker",
    "member": "navigator.commands.broker",
    "message": "navigator.commands.broker",
    "inbox": "navigator.commands.broker",
    "remote": "navigator.commands.remotes",
    "demo": "navigator.commands.demo",
    "ui": "navigator.commands.ui",
    "open": "navigator.commands.open",
    "worktree": "navigator.commands.worktree",
    "attention": "navigator.commands.attention",
    "doctor": "navigator.commands.doctor",
    "serve": "navigator.commands.serve",
    "server": "navigator.commands.server",
    "completion": "navigator.commands.completion",
    "conflicts": "navigator.commands.review",
    "search": "navigator.commands.search",
    "restore": "navigator.commands.restore",
    "prune": "navigator.commands.retention",
    "usage": "navigator.commands.usage",
    "limits": "navigator.commands.usage",
}


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    import argparse

    class Parser(argparse.ArgumentParser):
        """argparse echoes what it refused (``invalid choice: '...'``): its usage, help
        and errors are spelled out like every other text the CLI prints. Subparsers
        inherit the class."""

        def _print_message(self, message: str, file: SupportsWrite[str] | None = None) -> None:
            if message:
                from core.model.text import shown_block

                (file or sys.stderr).write(shown_block(message))

    parser = Parser(
        prog="switchboard",
        description="A tmux-native navigator for coding-agent sessions.",
    )
    parser.add_argument("--version", action="store_true",
                        help="print the version of switchboard and of the provider CLIs "
                             "found, then exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    wanted = [GROUPS[only]] if only in GROUPS else list(dict.fromkeys(GROUPS.values()))
    for module_name in wanted:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name == module_name:
                continue  # group not built yet
            raise
        module.register(sub)
    from navigator.commands.help_texts import fill_help
    from navigator.commands.names import mark_named_arguments

    mark_named_arguments(parser)

    fill_help(parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    # Everything Switchboard creates (registry, session files, -wal/-shm, config,
    # per-launch files, logs) is the person's alone: owner-only from the start.
    from core.model.files import restore_umask, set_private_umask

    old_umask = set_private_umask()
    try:
        try:
            return _main(argv)
        finally:  # also after argparse's exit: here a closed reader is caught, not at exit
            if sys.stdout is not None:
                sys.stdout.flush()
    except BrokenPipeError:
        if not _stdout_reader_gone():
            raise  # another pipe or socket broke: not ours to hide
        return _reader_gone()
    finally:
        restore_umask(old_umask)


SIGPIPE_EXIT = 128 + 13
"""The exit status of a Unix tool a closed pipe stopped (128 + SIGPIPE)."""


def _stdout_reader_gone() -> bool:
    """Whether stdout is a pipe or socket whose reader has closed it: it polls as an
    error (Linux) or a hang-up (macOS). A file or terminal never does."""
    import select

    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        events = poller.poll(0)
    except (OSError, ValueError, AttributeError):  # no stdout with a descriptor
        return False
    return any(mask & (select.POLLERR | select.POLLHUP) for _fd, mask in events)


def _reader_gone() -> int:
    """Whatever reads our output went away (``switchboard usage --json | head``): stop
    quietly as a Unix tool does, with no traceback. Output still buffered is dropped
    (stdout now points at the null device), so the interpreter's own flush at exit
    cannot fail again."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
    except (OSError, ValueError):  # no usable stdout at all: nothing left to protect
        pass
    return SIGPIPE_EXIT


def _main(argv: Sequence[str] | None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list[:1] == ["hook"]:
        # Providers call this on every prompt and turn end: skip argparse and every
        # other group when the arguments have the exact shape providers use.
        from navigator.commands.hook import parse_fast

        fast = parse_fast(args_list[1:])
        if fast is not None:
            return _run(fast.handler, fast)
    undecodable = _undecodable_argument(args_list)
    if undecodable is not None:
        return _report(undecodable)
    if args_list == ["--version"]:
        # Before argparse: building the parser imports every command group.
        from navigator.commands.version import print_version

        return _run(print_version, None)
    first = args_list[0] if args_list and not args_list[0].startswith("-") else None
    if first is None and not args_list:
        # Bare `switchboard`: inside a view's navigator pane the app, elsewhere go to
        # the project's view (attach or switch-client).
        first = "ui" if os.environ.get("SWITCHBOARD_VIEW_ID") else "open"
        args_list = [first]
        if first == "open":
            # Views were open and their tmux server is gone (a reboot): bring the
            # fleet back first, then go to the view as `open` does.
            from navigator.commands.restore import needs_restore

            if needs_restore():
                first, args_list = "restore", ["restore", "--open"]
    parser = build_parser(first)
    args = parser.parse_args(args_list)
    if args.version:
        from navigator.commands.version import print_version

        return _run(print_version, args)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 2
    from navigator.commands.names import resolving

    return _run(resolving(handler), args)  # FRAME, VIEW, PROJECT: names become ids


def _undecodable_argument(args: list[str]) -> SwitchboardError | None:
    """Bytes that are not UTF-8 reach Python as lone surrogates (surrogateescape): no
    title, name, id or path Switchboard stores can hold them, so the command is refused
    here in one line instead of failing deep inside (a request fingerprint, SQLite)."""
    from core.model.text import UnsafeText, describe_char

    for number, arg in enumerate(args, start=1):
        for position, char in enumerate(arg, start=1):
            if "\ud800" <= char <= "\udfff":
                return UnsafeText(f"argument {number} holds {describe_char(char)} at position "
                                  f"{position}: bytes that are not UTF-8; use UTF-8 text "
                                  "(nothing was changed)")
    return None


def _run(handler: Callable[[object], int | None], args: object) -> int:
    """Call a command handler; a domain error becomes one stderr line and its exit code.

    A full, read-only or busy disk that escaped the storage layer's own
    wording (a plain file write, a SQLite open) is worded here, so no entry
    point prints a traceback for the machine's state. Anything else is a bug
    and keeps its traceback.
    """
    from core.model.errors import SwitchboardError

    try:
        return int(handler(args) or 0)
    except SwitchboardError as exc:
        return _report(exc)
    except Exception as exc:
        from core.context.failures import environment_failure_of

        failure = environment_failure_of(exc)
        if failure is None:
            raise
        return _report(failure)


def _report(exc: SwitchboardError) -> int:
    """One stderr line in words: the message is escaped (it may echo agents' text), and
    a refused schema invariant shows its generic code, not the constraint's name (the
    name stays in ``exc.code`` for agents and tests)."""
    from core.model.errors import ConfigError, InvariantViolation
    from navigator.commands.output import complain

    complain("refused" if isinstance(exc, InvariantViolation) else exc.code, exc.message,
             lines=isinstance(exc, ConfigError))
    return exc.exit_code


if __name__ == "__main__":
    raise SystemExit(main())
