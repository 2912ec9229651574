"""Where Switchboard keeps its files.

State lives under ``$SWITCHBOARD_HOME`` (default: the XDG state dir), config
under the XDG config dir (or ``$SWITCHBOARD_CONFIG``). The generation pointer
``state/current`` names the one committed registry; a registry file lives in
its generation's own folder so a reset never touches the old file.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

# ``state/current`` holds one generation id (a UUID and a newline).
MAX_POINTER_BYTES = 4096


@dataclass(frozen=True)
class Home:
    root: Path
    config_path: Path

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> Home:
        env = dict(os.environ if env is None else env)
        if env.get("SWITCHBOARD_HOME"):
            root = Path(env["SWITCHBOARD_HOME"])
        else:
            xdg_state = env.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
            root = Path(xdg_state) / "switchboard"
        if env.get("SWITCHBOARD_CONFIG"):
            config = Path(env["SWITCHBOARD_CONFIG"])
        elif env.get("SWITCHBOARD_HOME"):
            config = root / "config.toml"
        else:
            xdg_config = env.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
            config = Path(xdg_config) / "switchboard" / "config.toml"
        return cls(root=root, config_path=config)

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
            from core.errors import RegistryUnavailable

            raise RegistryUnavailable(
                f"{self.current_pointer} is larger than {MAX_POINTER_BYTES} bytes, so it is "
                "not a generation pointer; restore it (it holds one generation id) or run "
                "`switchboard reset`", code="pointer_invalid")
        text = data.decode("utf-8", errors="replace").strip()
        return text or None
