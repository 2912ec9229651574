"""Navigator fixtures: real registries in a temporary SWITCHBOARD_HOME.

Each registry is built once per session through the engine and frozen; every
test gets its own copy (building one costs most of a second, copying a few ms).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.navigator.scenario import Scenario, build_demo, new_scenario


@pytest.fixture(scope="session")
def _demo_template(tmp_path_factory: pytest.TempPathFactory) -> Scenario:
    scenario = build_demo(tmp_path_factory.mktemp("demo-template") / "home")
    scenario.freeze()
    return scenario


@pytest.fixture(scope="session")
def _empty_template(tmp_path_factory: pytest.TempPathFactory) -> Scenario:
    scenario = new_scenario(tmp_path_factory.mktemp("empty-template") / "home")
    scenario.freeze()
    return scenario


@pytest.fixture
def demo(sb_home: Path, _demo_template: Scenario) -> Scenario:
    """alpha (workspace, Fix login working, Write docs needs input, Old spike in History),
    beta entered, one safe_auto recovery."""
    return _demo_template.clone(sb_home)


@pytest.fixture
def empty(sb_home: Path, _empty_template: Scenario) -> Scenario:
    """alpha and beta configured; nothing entered yet."""
    return _empty_template.clone(sb_home)
