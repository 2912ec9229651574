"""Home resolution in every layout, and the environment a launch hands to its children.

The bug this guards: ``switchboard init`` in the default XDG layout puts the
config in ``~/.config/switchboard``; an agent launched with only
``SWITCHBOARD_HOME`` looked for it inside the state home and every hook said
``config_missing``. A child (agent pane, hook, MCP server started by Codex
with a cleared environment, navigator pane) must resolve the very same home
from what the launch gives it, whatever its own cwd or inherited variables.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from core.config.capabilities import AGENT_TOOL_ENV
from core.config.config import ProviderConfig, TmuxConfig
from core.config.home import ENV_CONFIG, ENV_HOME, Home
from core.config.registry import init_registry, open_current
from core.engine.open import open_engine
from core.model.enums import Provider
from core.providers.fake.mcp import CODEX_DEFAULT_ENV
from core.runtime.launcher import launch_home_env
from core.runtime.stage import attach_stage
from tests.factories import project_config
from tests.integration.journey_env import fake_provider_command


@dataclass(frozen=True)
class Layout:
    name: str
    env: dict[str, str]
    root: str
    config: str


def layouts(base: Path) -> list[Layout]:
    """Every way a person can place Switchboard's files (paths under ``base``)."""
    home = str(base / "person")
    return [
        Layout("default-xdg", {"HOME": home},
               f"{home}/.local/state/switchboard", f"{home}/.config/switchboard/config.toml"),
        Layout("custom-xdg", {"HOME": home, "XDG_STATE_HOME": f"{base}/st",
                              "XDG_CONFIG_HOME": f"{base}/cfg"},
               f"{base}/st/switchboard", f"{base}/cfg/switchboard/config.toml"),
        Layout("switchboard-home", {"HOME": home, ENV_HOME: f"{base}/sb"},
               f"{base}/sb", f"{base}/sb/config.toml"),
        Layout("switchboard-config", {"HOME": home, ENV_CONFIG: f"{base}/etc/sb.toml"},
               f"{home}/.local/state/switchboard", f"{base}/etc/sb.toml"),
        Layout("both", {"HOME": home, ENV_HOME: f"{base}/sb", ENV_CONFIG: f"{base}/c.toml",
                        "XDG_STATE_HOME": f"{base}/ignored-st"},
               f"{base}/sb", f"{base}/c.toml"),
    ]


LAYOUT_NAMES = [layout.name for layout in layouts(Path("/x"))]


def layout_named(base: Path, name: str) -> Layout:
    return next(layout for layout in layouts(base) if layout.name == name)


@pytest.mark.parametrize("name", LAYOUT_NAMES)
def test_each_layout_resolves_its_state_and_config(tmp_path: Path, name: str) -> None:
    layout = layout_named(tmp_path, name)
    home = Home.from_env(layout.env)
    assert (str(home.root), str(home.config_path)) == (layout.root, layout.config)


def test_relative_values_are_made_absolute_or_ignored(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    home = Home.from_env({"HOME": "/h", ENV_HOME: "sb", ENV_CONFIG: "~/c.toml"})
    assert (home.root, home.config_path) == (tmp_path / "sb", Path("/h/c.toml"))
    # The XDG spec: a relative base directory is invalid and ignored.
    xdg = Home.from_env({"HOME": "/h", "XDG_STATE_HOME": "rel", "XDG_CONFIG_HOME": "rel"})
    assert (str(xdg.root), str(xdg.config_path)) == \
        ("/h/.local/state/switchboard", "/h/.config/switchboard/config.toml")


def test_home_dir_comes_from_the_given_env_not_the_process(tmp_path: Path) -> None:
    home = Home.from_env({"HOME": str(tmp_path)})
    assert home.root == tmp_path / ".local" / "state" / "switchboard"


@pytest.mark.parametrize("name", LAYOUT_NAMES)
def test_child_env_alone_resolves_the_same_home(tmp_path: Path, name: str) -> None:
    home = Home.from_env(layout_named(tmp_path, name).env)
    # A child with a different HOME and stale XDG dirs (a tmux server started before
    # the person set them) still lands on the same files.
    stale = {"HOME": str(tmp_path / "elsewhere"), "XDG_STATE_HOME": "/var/stale",
             "XDG_CONFIG_HOME": "/var/stale-config"}
    assert Home.from_env({**stale, **home.child_env()}) == home
    assert Home.from_env(home.child_env()) == home


def _initialised_engine(tmp_path: Path, env: dict[str, str]):
    """``switchboard init`` for a layout, then an engine opened the way the CLI does."""
    home = Home.from_env(env)
    template = replace(
        project_config(tmp_path / "src"),
        providers={p: ProviderConfig(command=fake_provider_command(p.value)) for p in Provider},
        tmux=TmuxConfig(socket_path=str(tmp_path / "tmux.sock")))
    init_registry(home, template=template)
    return home, open_engine(Home.from_env(env))


@pytest.mark.parametrize("name", LAYOUT_NAMES)
def test_launch_env_opens_the_same_registry_in_every_child(tmp_path: Path, name: str) -> None:
    layout = layout_named(tmp_path, name)
    home, engine = _initialised_engine(tmp_path, layout.env)
    try:
        launch = launch_home_env(engine)
        assert launch == {ENV_HOME: layout.root, ENV_CONFIG: layout.config}
        # What the pane gets: the tmux server's environment (here: nothing of ours)
        # overlaid with the launch env. Hooks and `switchboard agent` inherit it.
        pane_env = {"HOME": str(tmp_path / "other-home"), **launch}
        assert Home.from_env(pane_env) == home
        assert open_current(Home.from_env(pane_env)).config.generation_id == \
            engine.config.generation_id
        # Codex starts its MCP server with a cleared environment: its defaults plus
        # the env_vars allow-list the launch names.
        allowed = set(CODEX_DEFAULT_ENV) | set(AGENT_TOOL_ENV)
        mcp_env = {k: v for k, v in pane_env.items() if k in allowed}
        assert Home.from_env(mcp_env) == home
        # The navigator pane of the view window and the prefix+S key binding.
        stage = attach_stage(engine, home)
        spawn = stage.navigator_spawn("view-1")
        assert Home.from_env({"HOME": "/nowhere", **spawn.env}) == home
        binding = stage.navigator_key().shell_command
        assert f"{ENV_HOME}={layout.root}" in binding
        assert f"{ENV_CONFIG}={layout.config}" in binding
    finally:
        engine.conn.close()


def test_launch_env_is_absolute_with_a_relative_switchboard_home(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The agent runs in the project's root, not where init ran: relative is wrong."""
    monkeypatch.chdir(tmp_path)
    _, engine = _initialised_engine(tmp_path, {"HOME": str(tmp_path), ENV_HOME: "rel-sb"})
    try:
        launch = launch_home_env(engine)
        assert launch == {ENV_HOME: str(tmp_path / "rel-sb"),
                          ENV_CONFIG: str(tmp_path / "rel-sb" / "config.toml")}
    finally:
        engine.conn.close()
