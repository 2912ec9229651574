"""Where Switchboard keeps its files.

State lives under ``$SWITCHBOARD_HOME`` (default: the XDG state dir), config
under the XDG config dir (or ``$SWITCHBOARD_CONFIG``; with only
``$SWITCHBOARD_HOME`` set, inside that home). The generation pointer
``state/current`` names the one committed registry; a registry file lives in
its generation's own folder so a reset never touches the old file.

Every process Switchboard starts (an agent pane, its hooks and MCP server,
the navigator pane, a tmux key binding) gets both locations as absolute
paths (``Home.child_env``), so it never re-derives them from a cwd, a tmux
server's stale environment or a provider's cleared environment.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

ENV_HOME = "SWITCHBOARD_HOME"
ENV_CONFIG = "SWITCHBOARD_CONFIG"

# ``state/current`` holds one generation id (a UUID and a newline).
MAX_POINTER_BYTES = 4096


def _user_home(env: dict[str, str]) -> str:
    return env.get("HOME") or str(Path.home())


def _absolute(value: str, env: dict[str, str]) -> Path:
    """A leading ``~`` expanded from ``env``'s HOME, then absolute (relative to the cwd)."""
    if value == "~" or value.startswith("~/"):
        value = _user_home(env) + value[1:]
    return Path(os.path.abspath(value))


def _xdg_dir(env: dict[str, str], name: str, fallback: tuple[str, ...]) -> Path:
    """An XDG base directory; a relative or empty value is ignored, as the XDG spec says."""
    value = env.get(name, "")
    if value and os.path.isabs(value):
        return Path(value)
    return Path(_user_home(env), *fallback)


DEMO_FOLDER = "switchboard-demo"
"""The demo's home under the XDG state dir (``switchboard demo`` without ``--home``)."""


def default_demo_root(env: dict[str, str] | None = None) -> Path:
    """Where ``switchboard demo`` keeps its home unless ``--home`` names another.

    Here, not in the demo's own module, so opening a home that is not initialized
    can say that the demo's is (the person who tried the demo and then typed a
    command outside it reached an empty default home)."""
    env = dict(os.environ if env is None else env)
    return _xdg_dir(env, "XDG_STATE_HOME", (".local", "state")) / DEMO_FOLDER


class Home(NamedTuple):
    root: Path
    config_path: Path

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> Home:
        env = dict(os.environ if env is None else env)
        if env.get(ENV_HOME):
            root = _absolute(env[ENV_HOME], env)
        else:
            root = _xdg_dir(env, "XDG_STATE_HOME", (".local", "state")) / "switchboard"
        if env.get(ENV_CONFIG):
            config = _absolute(env[ENV_CONFIG], env)
        elif env.get(ENV_HOME):
            config = root / "config.toml"
        else:
            config = _xdg_dir(env, "XDG_CONFIG_HOME", (".config",)) / "switchboard" \
                / "config.toml"
        return cls(root=root, config_path=config)

    def child_env(self) -> dict[str, str]:
        """The variables that make a child process resolve exactly this home.

        Both are given: with ``SWITCHBOARD_HOME`` alone a child would look for
        the config inside the home, which is wrong for the default XDG layout.
        """
        return {ENV_HOME: str(self.root), ENV_CONFIG: str(self.config_path)}

    @property
    def state_dir(self) -> Path:
        return self.root / "state"

    @property
    def current_pointer(self) -> Path:
        return self.state_dir / "current"

    def registry_path(self, generation_id: str) -> Path:
        return self.state_dir / generation_id / "registry.sqlite3"

    @property
    def broker_path(self) -> Path:
        return self.root / "broker.sqlite3"

    @property
    def run_dir(self) -> Path:
        """Per-launch files (hook settings, capability-free launch scripts)."""
        return self.root / "run"

    def read_current_generation(self) -> str | None:
        """The generation ``state/current`` names; read with a bound (it holds one id)."""
        try:
            with open(self.current_pointer, "rb") as handle:
                data = handle.read(MAX_POINTER_BYTES + 1)
        except FileNotFoundError:
            return None
        if len(data) > MAX_POINTER_BYTES:
            from core.model.errors import RegistryUnavailable

            raise RegistryUnavailable(
                f"{self.current_pointer} is larger than {MAX_POINTER_BYTES} bytes, so it is "
                "not a generation pointer; restore it (it holds one generation id) or run "
                "`switchboard reset`", code="pointer_invalid")
        text = data.decode("utf-8", errors="replace").strip()
        return text or None
