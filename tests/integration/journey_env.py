"""A real Switchboard home wired to a private tmux server and the fake provider."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path

from core.config.config import ProviderConfig, TmuxConfig
from core.config.home import Home
from core.config.registry import init_registry
from core.engine.engine import Engine
from core.engine.open import open_engine
from core.model.enums import Provider
from tests.factories import project_config


def fake_provider_command(provider: str) -> tuple[str, ...]:
    return (sys.executable, "-m", "core.providers.fake.agent", "--agent-command",
            f"{sys.executable} -m navigator.cli agent", *fake_codex_hooks(provider),
            "--provider", provider)


def fake_codex_hooks(provider: str) -> tuple[str, ...]:
    """Codex launches carry their hooks as ``-c hooks.<Event>`` overrides, which the
    fake agent does not read yet (it reads ``$CODEX_HOME``/``.codex`` files only):
    give it the same hook command directly."""
    if provider != "codex":
        return ()
    return ("--hook-command", f"{sys.executable} -m navigator.cli hook")


def make_live_engine(root: Path, socket: Path, **config_changes: object) -> Engine:
    """A registry whose providers are fake agents on the private server ``socket``;
    ``config_changes`` replace top-level config sections (control_turns, automation)."""
    home = Home(root=root, config_path=root / "config.toml")
    template = project_config(root / "src")
    template = replace(
        template,
        providers={p: ProviderConfig(command=fake_provider_command(p.value)) for p in Provider},
        tmux=TmuxConfig(socket_path=str(socket)))
    if config_changes:
        template = replace(template, **config_changes)
    init_registry(home, template=template)
    return open_engine(home, with_stage=True)


def tmux(socket: Path, *args: str) -> str:
    return subprocess.run(["tmux", "-S", str(socket), *args], capture_output=True,
                          text=True).stdout


def pane_ids(socket: Path) -> list[str]:
    """Every pane id on the server (a pane that exited is gone from it)."""
    return tmux(socket, "list-panes", "-a", "-F", "#{pane_id}").split()


def one(engine: Engine, sql: str, *args: object) -> tuple | None:
    """The first row of a registry query as a tuple, or None."""
    row = engine.conn.execute(sql, args).fetchone()
    return None if row is None else tuple(row)


def type_line(socket: Path, pane: str, text: str) -> None:
    tmux(socket, "send-keys", "-t", pane, "-l", text)
    tmux(socket, "send-keys", "-t", pane, "Enter")
