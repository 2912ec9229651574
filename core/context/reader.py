"""RegistryReader: an open registry and its config, which is all a read needs.

A navigator rebuilds its state from the registry on every change but runs a
request only when a person presses a key, so it opens a reader and takes the
``Engine`` (a reader that also runs requests) on its first request: the engine
module, the storage operations it drives and the modules they bring (``secrets``
and every hash module behind it) stay out of a navigator nobody types into.
Read functions (``core.state.state_builder`` and friends) take a reader, so the
CLI's engine serves them just as well.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from core.config.config import Config
from core.model.ports import Clock, SystemClock

if TYPE_CHECKING:
    from core.config.home import Home


@dataclass
class RegistryReader:
    """One registry connection, the config it was opened under, and a clock."""

    conn: sqlite3.Connection
    config: Config
    clock: Clock = field(default_factory=SystemClock)
    home: Home | None = None  # set by core.context.session; None for a bare engine

    @property
    def host_id(self) -> str:
        return self.config.host.host_id

    @property
    def generation_id(self) -> str:
        return self.config.generation_id

    def now(self) -> int:
        return self.clock.now_ms()
