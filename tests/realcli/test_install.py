"""The tier's own ground: the pinned versions are what runs."""

from __future__ import annotations

import subprocess

from tests.realcli.install import CLAUDE_VERSION, CODEX_VERSION, RealClis


def test_pinned_versions_run(real_clis: RealClis) -> None:
    claude = subprocess.run([str(real_clis.claude), "--version"], capture_output=True,
                            text=True, timeout=60)
    codex = subprocess.run([str(real_clis.codex), "--version"], capture_output=True,
                           text=True, timeout=60)
    assert CLAUDE_VERSION in claude.stdout, claude.stdout + claude.stderr
    assert CODEX_VERSION in codex.stdout, codex.stdout + codex.stderr
