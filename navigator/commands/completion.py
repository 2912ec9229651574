"""`switchboard completion bash|zsh|fish`: print a completion script (see navigator.completion).

The hidden ``--names KIND`` is what the scripts run for project, frame, member
and view names: one ``value<TAB>description`` line each, read-only, silent on
any failure (a completion never prints into the line being typed).
"""

from __future__ import annotations

import argparse
import sys

from core.state.names import NameKind

SHELLS = ("bash", "zsh", "fish")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "completion", help="print a shell completion script (bash, zsh or fish)",
        description="Print a completion script for SHELL. bash: add "
                    "`source <(switchboard completion bash)` to ~/.bashrc; zsh (after "
                    "compinit): `source <(switchboard completion zsh)` in ~/.zshrc; fish: "
                    "`switchboard completion fish > ~/.config/fish/completions/switchboard.fish`.")
    p.add_argument("shell", nargs="?", choices=SHELLS, metavar="SHELL",
                   help="the shell to print the script for: bash, zsh or fish")
    p.add_argument("--names", choices=[kind.value for kind in NameKind], help=argparse.SUPPRESS)
    p.set_defaults(handler=_completion)


def _completion(args: argparse.Namespace) -> int:
    if args.names:
        return _names(args.names)
    if not args.shell:
        from navigator.commands.output import complain

        complain("usage", "name a shell: switchboard completion bash|zsh|fish")
        return 2
    from core.install.about import package_version
    from navigator.cli import build_parser
    from navigator.completion import Shell, command_tree, render

    sys.stdout.write(render(Shell(args.shell), command_tree(build_parser()),
                            package_version()))
    return 0


def _names(kind: str) -> int:
    from core.config.home import Home
    from core.state.names import registry_names

    entries = registry_names(Home.from_env(), NameKind(kind))
    sys.stdout.write("".join(f"{e.value}\t{e.description}\n" for e in entries))
    return 0
