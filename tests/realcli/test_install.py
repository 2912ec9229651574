"""The tier's own ground: every release of the tested window is what runs."""

from __future__ import annotations

import subprocess

import pytest

from core.model.enums import Provider
from core.providers.contract import check_contract, read_surface
from core.providers.version import parse_version
from core.providers.window import TESTED, WindowPlace, dotted
from tests.realcli.install import RealCli, RealClis, latest_wanted, matrix


def _runs(cli: RealCli) -> None:
    done = subprocess.run([str(cli.binary), "--version"], capture_output=True, text=True,
                          timeout=60)
    found = parse_version(cli.provider, done.stdout)
    assert found.text == cli.version, done.stdout + done.stderr
    if not latest_wanted():
        assert found.place is WindowPlace.TESTED


def test_each_claude_of_the_matrix_runs(claude_cli: RealCli) -> None:
    _runs(claude_cli)


def test_each_codex_of_the_matrix_runs(codex_cli: RealCli) -> None:
    _runs(codex_cli)


def test_the_matrix_is_the_tested_window_newest_first() -> None:
    if latest_wanted():
        pytest.skip("make realcli-latest runs one version per CLI, the registry's newest")
    for provider in Provider:
        tested = [dotted(v) for v in TESTED[provider].tested]
        assert list(matrix(provider)) == tested[::-1]


def test_the_recorded_surface_is_what_the_newest_tested_release_says(
        real_clis: RealClis) -> None:
    """doctor's drift verdict compares with core/providers/cli_surfaces.py: it must be
    what the newest tested releases' own help says (rewrite it with
    ``python -m tests.realcli.drift --record`` when the window moves)."""
    if latest_wanted():
        pytest.skip("make realcli-latest compares the registry's newest in the drift report")
    for provider, binary in ((Provider.CLAUDE, real_clis.claude),
                             (Provider.CODEX, real_clis.codex)):
        surface = read_surface(provider, [str(binary)], timeout=60)
        assert surface is not None
        report = check_contract(provider, surface)
        assert report.works and report.since_tested.none, report
        assert report.tested == dotted(TESTED[provider].newest)
