"""What changed in a CLI between two releases: the drift report, and its record.

``python -m tests.realcli.drift`` (``make realcli-latest`` runs it after the
journeys) reads the ``--help`` of the oldest and newest tested releases and of
the newest release the registry serves, and prints the options and subcommands
added and removed. The verdict fails when an option Switchboard passes at
launch is gone: that release cannot start Switchboard's agents as it builds
them, whatever the journeys say.

``--record`` writes the newest tested release's surface to
``core/providers/cli_surfaces.py``, which ``switchboard doctor`` compares an
installed CLI with; ``tests/realcli/test_install.py`` keeps that record equal to
what the real CLI says.
"""

from __future__ import annotations

import sys
from pathlib import Path

from core.model.enums import Provider
from core.providers.contract import LAUNCH_OPTIONS, Surface, drift, read_surface
from core.providers.window import TESTED, dotted
from tests.realcli.install import ensure_cli, registry_latest

RECORD = Path(__file__).resolve().parents[2] / "core" / "providers" / "cli_surfaces.py"


def surface(provider: Provider, version: str) -> Surface:
    binary = ensure_cli(provider, version).binary
    found = read_surface(provider, [str(binary)], timeout=60)
    if found is None:
        raise SystemExit(f"{provider.value} {version}: --help could not be read")
    return found


def report(provider: Provider, old: str, new: str) -> tuple[list[str], bool]:
    """Lines of the report and whether Switchboard's options all survive."""
    before, after = surface(provider, old), surface(provider, new)
    lines = [f"{provider.value}: {old} -> {new}"]
    for label, a, b in (("options", before.options, after.options),
                        ("subcommands", before.commands, after.commands)):
        changed = drift(Surface(a, frozenset()), Surface(b, frozenset()))
        lines.append(f"  {label} added: {', '.join(changed.added) or 'none'}")
        lines.append(f"  {label} removed: {', '.join(changed.removed) or 'none'}")
    gone = sorted(LAUNCH_OPTIONS[provider] - after.words)
    lines.append("  verdict: " + (f"BROKEN, Switchboard passes {', '.join(gone)}" if gone
                                  else "every option Switchboard passes is still there"))
    return lines, not gone


def render_record() -> str:
    """The module ``--record`` writes: the newest tested release's surface per CLI."""
    lines = ['"""Options and subcommands of the newest tested release of each CLI, from its',
             "--help. Written by ``python -m tests.realcli.drift --record``; do not edit.",
             '"""', "", "from __future__ import annotations", "",
             "from core.model.enums import Provider", "",
             "RECORDED: dict[Provider, tuple[str, frozenset[str], frozenset[str]]] = {"]
    for provider in Provider:
        version = dotted(TESTED[provider].newest)
        found = surface(provider, version)
        lines.append(f"    Provider.{provider.name}: ({version!r}, frozenset({{")
        lines.extend(f"        {word!r}," for word in sorted(found.options))
        lines.append("    }), frozenset({")
        lines.extend(f"        {word!r}," for word in sorted(found.commands))
        lines.append("    })),")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    if argv == ["--record"]:
        RECORD.write_text(render_record(), encoding="utf-8")
        print(f"wrote {RECORD}")
        return 0
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
    sys.exit(main(sys.argv[1:]))
