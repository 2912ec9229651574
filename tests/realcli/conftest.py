"""Fixtures of the real-CLI tier: each CLI of the tested window, installed once.

``claude_cli`` and ``codex_cli`` are parametrized over the provider's matrix
(:func:`tests.realcli.install.matrix`), so a journey that takes one runs once per
version, each id naming it (``[claude-2.1.332]``). ``real_clis`` is the newest of
both, for tests about Switchboard's own side that need only a real binary.
"""

from __future__ import annotations

import pytest

from core.model.enums import Provider
from tests.realcli.install import (
    RealCli,
    RealClis,
    RealCliUnavailable,
    ensure_cli,
    ensure_installed,
    matrix,
)


def _or_fail(provider: Provider, version: str) -> RealCli:
    try:
        return ensure_cli(provider, version)
    except RealCliUnavailable as exc:
        pytest.fail(f"real-CLI tier cannot run: {exc}", pytrace=False)


@pytest.fixture(scope="session", params=matrix(Provider.CLAUDE),
                ids=lambda v: f"claude-{v}")
def claude_cli(request: pytest.FixtureRequest) -> RealCli:
    return _or_fail(Provider.CLAUDE, request.param)


@pytest.fixture(scope="session", params=matrix(Provider.CODEX), ids=lambda v: f"codex-{v}")
def codex_cli(request: pytest.FixtureRequest) -> RealCli:
    return _or_fail(Provider.CODEX, request.param)


@pytest.fixture(scope="session")
def real_clis() -> RealClis:
    """The newest CLIs of the matrix; the tier fails (never skips) when they cannot be
    installed."""
    try:
        return ensure_installed()
    except RealCliUnavailable as exc:
        pytest.fail(f"real-CLI tier cannot run: {exc}", pytrace=False)


@pytest.fixture(scope="session")
def codex_clis(codex_cli: RealCli, real_clis: RealClis) -> RealClis:
    """The Codex of this matrix entry, beside the newest Claude Code."""
    return RealClis(claude=real_clis.claude, codex=codex_cli.binary, node_bin=real_clis.node_bin)
