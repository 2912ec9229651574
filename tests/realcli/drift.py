"""What changed in a CLI between the newest tested release and another: the drift report.

``python -m tests.realcli.drift`` (``make realcli-latest`` runs it after the
journeys) installs the newest release the registry serves of each CLI, reads
both releases' ``--help`` (and Codex's ``resume --help``) and prints the options
and subcommands added and removed. The verdict fails when an option Switchboard
passes at launch is gone: that release cannot start Switchboard's agents as it
builds them, whatever the journeys say.
"""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass

from core.model.enums import Provider
from core.providers.window import TESTED, dotted
from tests.realcli.install import _clean_env, ensure_cli, registry_latest

USED: dict[Provider, frozenset[str]] = {
    # core/providers/claude.py and core/engine/launcher.py build these
    Provider.CLAUDE: frozenset({"--session-id", "--resume", "--settings", "--mcp-config"}),
    # core/providers/codex.py: every hook and MCP server arrives as a -c override
    Provider.CODEX: frozenset({"--config", "resume"}),
}
HELP_ARGS: dict[Provider, tuple[tuple[str, ...], ...]] = {
    Provider.CLAUDE: (("--help",),),
    Provider.CODEX: (("--help",), ("resume", "--help")),
}
_OPTION = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]+)")
_COMMAND = re.compile(r"^\s{2}([a-z][a-z0-9-]+)(?:\s|\|)", re.M)


@dataclass(frozen=True)
class Surface:
    """The options and subcommands one release's help names."""

    options: frozenset[str]
    commands: frozenset[str]

    @property
    def words(self) -> frozenset[str]:
        return self.options | self.commands


def surface(provider: Provider, version: str) -> Surface:
    binary = ensure_cli(provider, version).binary
    text = ""
    for args in HELP_ARGS[provider]:
        text += subprocess.run([str(binary), *args], capture_output=True, text=True,
                               timeout=60, env=_clean_env()).stdout + "\n"
    commands_part = text.split("Commands:", 1)[1] if "Commands:" in text else ""
    return Surface(frozenset(_OPTION.findall(text)), frozenset(_COMMAND.findall(commands_part)))


def report(provider: Provider, old: str, new: str) -> tuple[list[str], bool]:
    """Lines of the report and whether Switchboard's options all survive."""
    before, after = surface(provider, old), surface(provider, new)
    lines = [f"{provider.value}: {old} -> {new}"]
    for label, a, b in (("options", before.options, after.options),
                        ("subcommands", before.commands, after.commands)):
        added, removed = sorted(b - a), sorted(a - b)
        lines.append(f"  {label} added: {', '.join(added) or 'none'}")
        lines.append(f"  {label} removed: {', '.join(removed) or 'none'}")
    gone = sorted(USED[provider] - after.words)
    lines.append("  verdict: " + (f"BROKEN, Switchboard passes {', '.join(gone)}" if gone
                                  else "every option Switchboard passes is still there"))
    return lines, not gone


def main() -> int:
    ok = True
    for provider in Provider:
        window = TESTED[provider]
        oldest, newest = dotted(window.oldest), dotted(window.newest)
        print(f"# {provider.value}: the tested window, oldest to newest")
        print("\n".join(report(provider, oldest, newest)[0]))
        latest = registry_latest(provider)
        print(f"# {provider.value}: newest tested to the registry's latest ({latest})")
        lines, fine = report(provider, newest, latest)
        print("\n".join(lines))
        ok = ok and fine
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
