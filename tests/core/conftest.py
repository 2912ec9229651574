"""Fixtures shared by the engine's tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from core.config.capabilities import ENV_CAPABILITY, ENV_GENERATION
from core.config.home import ENV_HOME
from tests.core.test_hook_handler import LiveSurface, launch_live_surface


@pytest.fixture
def live(tmp_path: Path, tmux_socket: Path,
         monkeypatch: pytest.MonkeyPatch) -> Iterator[LiveSurface]:
    """One launched, bound fake-Claude frame on a private tmux server, with a capability
    minted for it: what a hook or agent-tool call of a real launch finds. The home is
    ``tmp_path``; no tmux or capability of the outer environment leaks in. A module
    that needs more (``test_hook_open``, ``test_fork``) defines its own ``live``."""
    monkeypatch.setenv(ENV_HOME, str(tmp_path))
    for name in ("TMUX", "TMUX_PANE", ENV_CAPABILITY, ENV_GENERATION):
        monkeypatch.delenv(name, raising=False)
    surface = launch_live_surface(tmp_path, tmux_socket)
    yield surface
    surface.engine.conn.close()
