"""The installed CLI's own word on the options Switchboard passes, and its drift.

A version number says little about a CLI that ships several releases a week;
its ``--help`` says what it accepts today. ``check_contract`` reads the installed
CLI's help (Codex: also ``resume --help``), checks that every option Switchboard
builds into a launch is still there (a release without one cannot start
Switchboard's agents as they are built), and compares its options and
subcommands with those recorded from the newest tested release
(:data:`RECORDED`, written by ``python -m tests.realcli.drift --record`` and
checked against the real CLIs by the real-CLI tier), so ``switchboard doctor``
can say what changed in a release nobody has tested yet.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass

from core.model.enums import Provider

LAUNCH_OPTIONS: dict[Provider, frozenset[str]] = {
    # core/providers/claude.py: --session-id|--resume, --settings, --mcp-config=FILE
    Provider.CLAUDE: frozenset({"--session-id", "--resume", "--settings", "--mcp-config"}),
    # core/providers/codex.py: hooks and the MCP server as -c (--config) overrides; resume
    Provider.CODEX: frozenset({"--config", "resume"}),
    # core/providers/gemini.py: --session-id|--resume, --policy, --prompt-interactive
    Provider.GEMINI: frozenset({"--session-id", "--resume", "--policy", "--prompt-interactive"}),
    # core/providers/opencode.py: --session (resume), --fork, --prompt
    Provider.OPENCODE: frozenset({"--session", "--fork", "--prompt"}),
}
HELP_ARGS: dict[Provider, tuple[tuple[str, ...], ...]] = {
    Provider.CLAUDE: (("--help",),),
    Provider.CODEX: (("--help",), ("resume", "--help")),
    Provider.GEMINI: (("--help",),),
    Provider.OPENCODE: (("--help",),),
}
HELP_PROGRAM: dict[Provider, str | None] = {
    # yargs (Gemini CLI, OpenCode) lists a command as "  <program> <command>"
    Provider.CLAUDE: None, Provider.CODEX: None,
    Provider.GEMINI: "gemini", Provider.OPENCODE: "opencode",
}
HELP_TIMEOUT_S = 15.0
_OPTION = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]+)")
_COMMAND = re.compile(r"^\s{2}([a-z][a-z0-9-]+)(?:\s|\|)", re.M)


@dataclass(frozen=True)
class Surface:
    """The options and subcommands a release's help names."""

    options: frozenset[str]
    commands: frozenset[str]

    @property
    def words(self) -> frozenset[str]:
        return self.options | self.commands


@dataclass(frozen=True)
class Drift:
    """What changed from one surface to another."""

    added: tuple[str, ...]
    removed: tuple[str, ...]

    @property
    def none(self) -> bool:
        return not self.added and not self.removed

    def describe(self) -> str:
        if self.none:
            return "no options or subcommands changed"
        parts = []
        if self.added:
            parts.append(f"added {', '.join(self.added)}")
        if self.removed:
            parts.append(f"removed {', '.join(self.removed)}")
        return "; ".join(parts)


def drift(before: Surface, after: Surface) -> Drift:
    return Drift(tuple(sorted(after.words - before.words)),
                 tuple(sorted(before.words - after.words)))


@dataclass(frozen=True)
class ContractReport:
    """The installed CLI against Switchboard's launch and the newest tested release."""

    provider: Provider
    missing: tuple[str, ...]
    since_tested: Drift
    tested: str

    @property
    def works(self) -> bool:
        return not self.missing

    def describe(self) -> str:
        if self.missing:
            return (f"it lacks {', '.join(self.missing)}, which Switchboard passes at launch: "
                    "its agents cannot start as Switchboard builds them")
        return (f"every option Switchboard passes is there; since {self.tested} (newest "
                f"tested): {self.since_tested.describe()}")


def parse_help(texts: Sequence[str], program: str | None = None) -> Surface:
    """Options anywhere in the help; subcommands from its ``Commands:`` section (where a
    yargs help writes ``  <program> <command>``, the program's name is dropped)."""
    text = "\n".join(texts)
    commands = ""
    for part in texts:
        if "Commands:" in part:
            commands += part.split("Commands:", 1)[1]
    if program is not None:
        commands = commands.replace(f"\n  {program} ", "\n  ")
    return Surface(frozenset(_OPTION.findall(text)), frozenset(_COMMAND.findall(commands)))


def read_surface(provider: Provider, argv: Sequence[str],
                 timeout: float = HELP_TIMEOUT_S) -> Surface | None:
    """The installed CLI's surface from its help, or None when it cannot be read."""
    texts = []
    for args in HELP_ARGS[provider]:
        try:
            done = subprocess.run([*argv, *args], capture_output=True, text=True,
                                  timeout=timeout, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired):
            return None
        if done.returncode != 0:
            return None
        # OpenCode 1.18.33 writes its help to stderr
        texts.append(done.stdout or done.stderr)
    return parse_help(texts, HELP_PROGRAM[provider])


def check_contract(provider: Provider, surface: Surface) -> ContractReport:
    from core.providers.cli_surfaces import RECORDED

    version, options, commands = RECORDED[provider]
    return ContractReport(provider=provider,
                          missing=tuple(sorted(LAUNCH_OPTIONS[provider] - surface.words)),
                          since_tested=drift(Surface(options, commands), surface),
                          tested=version)
