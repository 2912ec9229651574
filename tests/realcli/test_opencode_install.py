"""OpenCode of the tested window runs from the real-CLI cache (installed with npm)."""

from __future__ import annotations

import subprocess

from tests.realcli.install import (
    OPENCODE_TESTED,
    RealCliUnavailable,
    cache_root,
    ensure_opencode,
)


def test_each_opencode_of_the_window_is_installed_and_says_its_version() -> None:
    for version in OPENCODE_TESTED:
        try:
            binary = ensure_opencode(version)
        except RealCliUnavailable as exc:  # the tier fails, never skips
            raise AssertionError(f"real-CLI tier cannot run: {exc}") from None
        assert binary == (cache_root() / f"opencode-{version}" / "node_modules" / ".bin"
                          / "opencode")
        done = subprocess.run([str(binary), "--version"], capture_output=True, text=True,
                              timeout=60)
        assert done.returncode == 0 and done.stdout.strip() == version, done.stderr
