"""Issue 39.6: every model a release of the tested window starts with or offers in its
model picker has a row in the default price table, read from the release itself
(``tests.realcli.drift.release_models``: Claude Code's bundled picker and catalog,
Codex's model presets, the models Gemini CLI's bundle names as its default, preview and
flash ones, the models OpenCode prefers as its default), so ``switchboard usage`` never
shows a person's turns as ``?`` for the CLI they run. ``make realcli-latest`` runs the
same against the newest release.
"""

from __future__ import annotations

from core.model.enums import Provider
from tests.realcli.drift import release_models, unpriced
from tests.realcli.install import RealCli, ensure_cli, newest


def _all_priced(cli: RealCli) -> None:
    models = release_models(cli.provider, cli.version)
    assert models, f"{cli.id}: no model found in the release (has its bundle changed?)"
    assert unpriced(models) == [], f"{cli.id} offers models without a price"


def test_each_claude_releases_models_have_prices(claude_cli: RealCli) -> None:
    _all_priced(claude_cli)


def test_each_codex_releases_models_have_prices(codex_cli: RealCli) -> None:
    _all_priced(codex_cli)


def test_the_newest_gemini_and_opencode_releases_models_have_prices() -> None:
    for provider in (Provider.GEMINI, Provider.OPENCODE):
        _all_priced(ensure_cli(provider, newest(provider)))
