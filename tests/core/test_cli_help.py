"""Every command's --help describes every argument, and no two commands claim to be
the bare `switchboard` (issue 31.8)."""

from __future__ import annotations

import argparse
from collections.abc import Iterator

from navigator.cli import build_parser


def _arguments(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
               ) -> Iterator[tuple[str, argparse.Action]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _arguments(sub, (*path, name))
        elif not isinstance(action, argparse._HelpAction):
            yield " ".join(path), action


def test_every_argument_of_every_command_has_help() -> None:
    undescribed = [f"switchboard {where} {action.option_strings or action.dest}"
                   for where, action in _arguments(build_parser())
                   if not (action.help or "").strip()]
    assert undescribed == []


def test_only_one_command_is_called_the_default() -> None:
    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    helps = {c.dest: c.help or "" for c in commands._choices_actions}
    assert not [name for name, text in helps.items() if "the default command" in text]
    assert "navigator pane" in helps["open"] and "left pane" in helps["ui"]
