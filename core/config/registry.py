"""Create, reset and open the registry for a Switchboard home.

``init`` and ``reset --confirm-generation`` are the only paths that create a
committed empty registry and publish the generation pointer. Normal open checks
that config, pointer and database metadata agree and never creates state.
"""

from __future__ import annotations

import shlex
import sqlite3
from dataclasses import dataclass, replace
from pathlib import Path

from core.config.config import (
    INIT_EVIDENCE_DAYS,
    Config,
    RetentionConfig,
    default_config,
    load_config,
    parse_config,
    render_config,
)
from core.config.home import ENV_HOME, Home, default_demo_root
from core.model.errors import RegistryUnavailable, SwitchboardError
from core.model.files import write_private
from core.model.ports import Clock, IdSource, SystemClock, Uuid4Ids
from storage.registry_file import create_registry, open_registry, publish_pointer


@dataclass(frozen=True)
class InitResult:
    generation_id: str
    host_id: str
    registry_path: str
    config_path: str


def _write_config(home: Home, config: Config) -> None:
    write_private(home.config_path, render_config(config))


def init_registry(home: Home, *, template: Config | None = None, clock: Clock | None = None,
                  ids: IdSource | None = None, tmux_socket: str | None = None) -> InitResult:
    """Create the first committed registry; refuses when one is already published.

    ``tmux_socket`` names the tmux server views open on, unless the config
    already names one (None keeps the config's choice or the private default).
    """
    clock = clock or SystemClock()
    ids = ids or Uuid4Ids()
    current = home.read_current_generation()
    if current is not None:
        raise SwitchboardError(
            f"already initialized (generation {current}); use "
            f"`switchboard reset --confirm-generation {shlex.quote(current)}` to start over",
            code="already_initialized")
    if template is None and home.config_path.exists():
        template = _load_template(home)
    return _publish(home, template, clock, ids, tmux_socket)


def _load_template(home: Home) -> Config:
    """A config to publish: its generation_id may be absent (init binds a new one)."""
    from core.config.config import MAX_CONFIG_BYTES
    from core.model.files import read_bounded

    data = read_bounded(home.config_path, MAX_CONFIG_BYTES, "config file")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SwitchboardError(f"{home.config_path}: is not UTF-8 text (byte {exc.start}); "
                               "fix or remove it, then retry", code="config_syntax") from None
    return parse_config(text, source=str(home.config_path), allow_missing_generation=True)


def reset_registry(home: Home, *, confirm_generation: str, clock: Clock | None = None,
                   ids: IdSource | None = None) -> InitResult:
    """Replace the current generation with a new empty one; the old file is kept."""
    current = home.read_current_generation()
    if current is None:
        raise SwitchboardError("nothing to reset; run `switchboard init`", code="not_initialized")
    if confirm_generation != current:
        raise SwitchboardError(
            f"--confirm-generation {confirm_generation} does not match the current "
            f"generation {current}; nothing was changed", code="generation_mismatch")
    template = _load_template(home) if home.config_path.exists() else None
    return _publish(home, template, clock or SystemClock(), ids or Uuid4Ids())


def _publish(home: Home, template: Config | None, clock: Clock, ids: IdSource,
             tmux_socket: str | None = None) -> InitResult:
    generation_id = ids.new_id()
    if template is None:
        import socket  # here: every agent-tool call opens the registry, none publishes one

        config = default_config(generation_id=generation_id, host_id=ids.new_id(),
                                display_name=socket.gethostname()[:128] or "localhost")
        # A first config says how long closed frames' evidence is kept, so `prune`
        # works as written; one a person wrote keeps what it says.
        config = replace(config, retention=RetentionConfig(evidence_days=INIT_EVIDENCE_DAYS))
    else:
        config = template.with_generation(generation_id)
    if tmux_socket and config.tmux.socket_path is None:
        config = replace(config, tmux=replace(config.tmux, socket_path=tmux_socket))
    path = home.registry_path(generation_id)
    create_registry(path, generation_id=generation_id, host_id=config.host.host_id,
                    now_ms=clock.now_ms())
    _write_config(home, config)
    publish_pointer(home.current_pointer, generation_id)
    return InitResult(generation_id, config.host.host_id, str(path), str(home.config_path))


def not_initialized_message(home: Home, demo_root: Path | None = None) -> str:
    """Why a command found no registry, in one line, and what to do.

    After ``switchboard demo`` a person who detaches and types ``switchboard`` (or
    ``restore``, ``prune``, ``usage``, ``recovery``) in a new shell reaches the default
    home, which is empty: when the demo's home (``demo_root``, default XDG
    state/switchboard-demo) is initialized, the line names it, the command that
    reattaches to it and the variable that runs this command on it. Nothing is
    opened in its place: a command meant for the person's own home must never act
    on another one unasked. Only the existence of the demo's pointer is looked at.
    """
    demo = default_demo_root() if demo_root is None else demo_root
    here = f"Switchboard is not initialized in {home.root}"
    if demo != home.root and (demo / "state" / "current").is_file():
        return (f"{here}; the demo's home is {demo}: `switchboard demo` reattaches to "
                f"it, and {ENV_HOME}={shlex.quote(str(demo))} before this command runs it "
                "on the demo; `switchboard init` makes a home of your own")
    return f"{here}; run `switchboard init`"


@dataclass(frozen=True)
class OpenRegistry:
    home: Home
    config: Config
    conn: sqlite3.Connection


def open_current(home: Home | None = None, *, expected_generation: str | None = None,
                 readonly: bool = False) -> OpenRegistry:
    """Open the published registry after config, pointer and metadata agree."""
    home = home or Home.from_env()
    current = home.read_current_generation()
    if current is None:
        raise RegistryUnavailable(not_initialized_message(home))
    config = load_config(home.config_path)
    if config.generation_id != current:
        raise RegistryUnavailable(
            f"config generation {config.generation_id} does not match state/current "
            f"{current}; nothing was opened")
    if expected_generation is not None and expected_generation != current:
        raise RegistryUnavailable(
            f"expected generation {expected_generation} but the current one is {current}")
    if not home.registry_path(current).exists():
        # `init` refuses here (a generation is published), so sending the person there
        # sent them round in a circle: the way out is a new generation.
        from core.model.hints import command

        raise RegistryUnavailable(
            f"the registry of generation {current} is gone ({home.registry_path(current)} "
            f"does not exist); {command('reset', '--confirm-generation', current)} starts "
            "a new empty one and keeps the config")
    conn, _meta = open_registry(home.registry_path(current), expected_generation=current,
                                expected_host=config.host.host_id, readonly=readonly)
    return OpenRegistry(home=home, config=config, conn=conn)
