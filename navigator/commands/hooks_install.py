"""`switchboard hooks install|status|uninstall`: provider hook files, never global settings.

Claude: a settings file passed per launch with ``--settings`` (default
``<home>/run/claude-hooks.settings.json``). Codex: the project's ``.codex/``
(``--project``, default the current directory) or a CODEX_HOME (``--codex-home``).
"""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path

from core.config.home import Home
from core.install.hooks_install import (
    HookInstallation,
    HookStatus,
    HookTarget,
    default_hook_command,
    install,
    status,
    uninstall,
)
from core.model.enums import Provider
from core.model.errors import ConfigError
from core.providers.base import HookPlace
from navigator.commands.output import emit

CLAUDE_DEFAULT_SETTINGS = "claude-hooks.settings.json"


def register(subparsers: argparse._SubParsersAction) -> None:
    hooks = subparsers.add_parser(
        "hooks", help="install, check or remove Switchboard's provider hooks"
    )
    actions = hooks.add_subparsers(dest="hooks_action", metavar="ACTION", required=True)
    for name, handler, text in (
        ("install", _install, "write hook files (idempotent)"),
        ("status", _status, "installed, not installed, or modified by the user"),
        ("uninstall", _uninstall, "restore exactly what was there before install"),
    ):
        parser = actions.add_parser(name, help=text)
        parser.add_argument("--provider", required=True, choices=[p.value for p in Provider])
        where = parser.add_mutually_exclusive_group()
        where.add_argument("--settings", type=Path, metavar="FILE",
                           help="claude: the settings file to write (passed with --settings)")
        where.add_argument("--project", type=Path, metavar="DIR",
                           help="codex: project root; hooks go to DIR/.codex/ (default: .)")
        where.add_argument("--codex-home", type=Path, metavar="DIR",
                           help="codex: a CODEX_HOME directory to write hooks into")
        parser.add_argument("--json", action="store_true", help="print one JSON object")
        if name == "install":
            parser.add_argument("--hook-command", metavar="CMD",
                                help="command hooks run (default: switchboard hook)")
        if name == "uninstall":
            parser.add_argument("--force", action="store_true",
                                help="restore the originals even if the files were edited")
        parser.set_defaults(handler=handler)


def _target(args: argparse.Namespace, home: Home) -> HookTarget:
    place = HookPlace(default_settings=home.run_dir / CLAUDE_DEFAULT_SETTINGS,
                      settings=args.settings, project=args.project,
                      codex_home=args.codex_home)
    return HookTarget.chosen(Provider(args.provider), place)


def _state_dir(home: Home) -> Path:
    return home.root / "hooks"


def _show(outcome: HookInstallation, args: argparse.Namespace) -> None:
    change = " (changed)" if outcome.changed else ""
    head = f"{outcome.provider.value} hooks: {outcome.status.value}{change}"
    lines = [f"{head} at {outcome.location}"]
    lines += [f"  {path}" for path in outcome.files]
    if outcome.modified_files:
        lines.append("  edited since install: " + ", ".join(outcome.modified_files))
    hint = HookTarget(outcome.provider, Path(outcome.location)).install_hint
    if hint is not None and outcome.status is HookStatus.INSTALLED:
        lines.append(f"  {hint}")
    emit(outcome, as_json=args.json, text="\n".join(lines))


def _install(args: argparse.Namespace) -> int:
    home = Home.from_env()
    if args.hook_command:
        command = tuple(shlex.split(args.hook_command))
        if not command:
            raise ConfigError("--hook-command is empty")
    else:
        command = default_hook_command()
    outcome = install(_target(args, home), command, state_dir=_state_dir(home))
    _show(outcome, args)
    return 0


def _status(args: argparse.Namespace) -> int:
    home = Home.from_env()
    outcome = status(_target(args, home), state_dir=_state_dir(home))
    _show(outcome, args)
    return 0 if outcome.status is HookStatus.INSTALLED else 1


def _uninstall(args: argparse.Namespace) -> int:
    home = Home.from_env()
    outcome = uninstall(_target(args, home), state_dir=_state_dir(home), force=args.force)
    _show(outcome, args)
    return 0
