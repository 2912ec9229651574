"""Builders for real registries in a temporary home (no mocks: real SQLite files)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from core.config.config import CheckoutConfig, Config, ProjectConfig, default_config
from core.config.home import Home
from core.config.registry import init_registry, open_current
from core.engine.engine import Engine
from core.model.ports import FixedClock, SequentialIds

HOST_ID = "11111111-1111-4111-8111-111111111111"


def project_config(root: Path, names: tuple[str, ...] = ("alpha", "beta")) -> Config:
    """A config template with one checkout and project per name."""
    base = default_config(generation_id="", host_id=HOST_ID, display_name="test-host")
    projects, checkouts = [], []
    for index, name in enumerate(names, start=1):
        checkout_id = f"22222222-2222-4222-8222-{index:012d}"
        project_id = f"33333333-3333-4333-8333-{index:012d}"
        path = root / name
        path.mkdir(parents=True, exist_ok=True)
        checkouts.append(CheckoutConfig(checkout_id=checkout_id, path=str(path)))
        projects.append(ProjectConfig(project_id=project_id, name=name, root=str(path),
                                      checkout_id=checkout_id))
    return replace(base, projects=tuple(projects), checkouts=tuple(checkouts))


def make_engine(home_root: Path, *, clock: FixedClock | None = None,
                ids: SequentialIds | None = None, **config_changes) -> Engine:
    """init a registry under ``home_root`` and open an engine on it."""
    home = Home(root=home_root, config_path=home_root / "config.toml")
    template = project_config(home_root / "src")
    if config_changes:
        template = replace(template, **config_changes)
    init_registry(home, template=template)
    opened = open_current(home)
    return Engine(conn=opened.conn, config=opened.config, clock=clock or FixedClock(),
                  ids=ids or SequentialIds())
