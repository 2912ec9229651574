"""The tier's own ground: every release of the tested window is what runs."""

from __future__ import annotations

import subprocess

import pytest

from core.model.enums import Provider
from core.providers.version import parse_version
from core.providers.window import TESTED, WindowPlace, dotted
from tests.realcli.install import RealCli, latest_wanted, matrix


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
