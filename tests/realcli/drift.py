"""What changed in a CLI between two releases: the drift report, and its record.

``python -m tests.realcli.drift`` (``make realcli-latest`` runs it after the
journeys) reads the ``--help`` of the oldest and newest tested releases and of
the newest release the registry serves, and prints the options and subcommands
added and removed. The verdict fails when an option Switchboard passes at
launch is gone: that release cannot start Switchboard's agents as it builds
them, whatever the journeys say. It also names every model a release starts
with or offers in its model picker that the default price table
(``core.usage.pricing``) has no row for: ``switchboard usage`` would show
its turns as ``?``.

``--record`` writes the newest tested release's surface to
``core/providers/cli_surfaces.py``, which ``switchboard doctor`` compares an
installed CLI with; ``tests/realcli/test_install.py`` keeps that record equal to
what the real CLI says.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable
from pathlib import Path

from core.model.enums import Provider
from core.providers.contract import LAUNCH_OPTIONS, Surface, drift, read_surface
from core.providers.window import TESTED, dotted
from core.usage.pricing import price_for
from tests.realcli.install import ensure_cli, install_folder, registry_latest

RECORD = Path(__file__).resolve().parents[2] / "core" / "providers" / "cli_surfaces.py"


def surface(provider: Provider, version: str) -> Surface:
    binary = ensure_cli(provider, version).binary
    found = read_surface(provider, [str(binary)], timeout=60)
    if found is None:
        raise SystemExit(f"{provider.value} {version}: --help could not be read")
    return found


# Claude Code's bundle: the picker of the CLI surface ("cc"), its default, and (releases
# without a picker config, 2.1.197) the baked-in catalog's model ids.
_CLAUDE_PICKER = re.compile(rb'model_selector_config:\[\{id:"cc",models:\[')
_CLAUDE_PICKED = re.compile(rb'\{id:"(claude-[a-z0-9.-]+)",name:"')
_CLAUDE_DEFAULT = re.compile(rb'model_selector_state:\[\{id:"cc",model:"(claude-[a-z0-9.-]+)"')
_CLAUDE_CATALOG = re.compile(rb'\{id:"(claude-[a-z0-9.-]+)",family:"[a-z]+",display_name:')
# Codex's binary: its model presets, JSON with a slug and a visibility ("list": in the picker)
_CODEX_SLUG = re.compile(rb'"slug": "([a-z0-9.-]+)"')
_CODEX_LISTED = re.compile(rb'"visibility": "list"')
PICKER_SPAN = 40_000
"""Bytes after the picker's start that hold its model list."""
# Gemini CLI's bundle: the models it names as its default, preview, flash and flash-lite
# (``PREVIEW_GEMINI_3_1_MODEL = "gemini-3.1-pro-preview"``; not the embedding model)
_GEMINI_MODEL = re.compile(rb'\b(?:DEFAULT|PREVIEW|BASE|LATEST)_GEMINI_(?!EMBEDDING)[A-Z0-9_]*'
                           rb'MODEL = "(gemini-[a-z0-9.-]+)"')
# OpenCode's binary: the models it prefers as the default, in order, before its small-model
# list (1.18.33: ``["gpt-5","claude-sonnet-4","big-pickle","gemini-3-pro"]``, each matched
# as a part of an available model's id)
_OPENCODE_DEFAULTS = re.compile(rb'=\[((?:"[a-z0-9.-]+",?)+)\],\w+=\["gemini-flash"')


def offered_models(provider: Provider, program: bytes) -> set[str]:
    """The model ids a CLI's program starts with or offers in its model picker."""
    found: set[str] = set()
    if provider is Provider.GEMINI:
        return {m.decode() for m in _GEMINI_MODEL.findall(program)}
    if provider is Provider.OPENCODE:
        for listed in _OPENCODE_DEFAULTS.findall(program):
            found.update(word.strip(b'"').decode() for word in listed.split(b","))
        return found
    if provider is Provider.CLAUDE:
        for start in _CLAUDE_PICKER.finditer(program):
            span = program[start.end():start.end() + PICKER_SPAN]
            span = span.split(b"provider_alias_targets")[0]
            found.update(m.decode() for m in _CLAUDE_PICKED.findall(span))
        found.update(m.decode() for m in _CLAUDE_DEFAULT.findall(program))
        if not found:
            found.update(m.decode() for m in _CLAUDE_CATALOG.findall(program))
        return found
    slugs = list(_CODEX_SLUG.finditer(program))
    for here, after in zip(slugs, slugs[1:] + [None], strict=True):
        end = after.start() if after is not None else here.end() + PICKER_SPAN
        if _CODEX_LISTED.search(program, here.end(), end):
            found.add(here.group(1).decode())
    return found


def unpriced(models: Iterable[str]) -> list[str]:
    """The models the default price table has no row for."""
    return sorted(model for model in models if price_for(model, ())[0] is None)


def program_files(folder: Path) -> list[Path]:
    """The large program files of an installed CLI (Claude Code's bundled executable,
    Codex's and OpenCode's native binaries, Gemini CLI's bundle chunks), each once though
    npm hard-links them (OpenCode's ``-baseline`` build, for older CPUs, is left out)."""
    seen: set[tuple[int, int]] = set()
    found = []
    for path in sorted(folder.rglob("*")):
        if path.is_symlink() or not path.is_file() or path.suffix in (".md", ".json", ".ts"):
            continue
        info = path.stat()
        if info.st_size < 1_000_000 or (info.st_dev, info.st_ino) in seen:
            continue
        if path.name in ("claude", "claude.exe", "cli.js", "codex", "opencode.exe") or (
                path.name == "opencode" and "baseline" not in str(path)) or (
                path.suffix == ".js" and path.parent.name == "bundle"):
            seen.add((info.st_dev, info.st_ino))
            found.append(path)
    return found


def release_models(provider: Provider, version: str) -> set[str]:
    """What the installed release starts with or offers (installs it when missing)."""
    ensure_cli(provider, version)
    models: set[str] = set()
    for path in program_files(install_folder(provider, version)):
        with open(path, "rb") as handle:
            models |= offered_models(provider, handle.read())
    return models


def price_lines(provider: Provider, version: str) -> list[str]:
    """The report's lines on what a release offers and which of it has no price."""
    models = release_models(provider, version)
    missing = unpriced(models)
    lines = [f"  models offered ({version}): {', '.join(sorted(models)) or 'none found'}"]
    lines.append("  models without a price: " + (
        f"{', '.join(missing)} (add rows to core/usage/pricing.py DEFAULT_PRICES)"
        if missing else "none"))
    return lines


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
    lines += price_lines(provider, new)
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
