"""Fixtures of the real-CLI tier: the pinned CLIs, installed once per session."""

from __future__ import annotations

import pytest

from tests.realcli.install import RealClis, RealCliUnavailable, ensure_installed


@pytest.fixture(scope="session")
def real_clis() -> RealClis:
    """The pinned CLIs; the tier fails (never skips) when they cannot be installed."""
    try:
        return ensure_installed()
    except RealCliUnavailable as exc:
        pytest.fail(f"real-CLI tier cannot run: {exc}", pytrace=False)
