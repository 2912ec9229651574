"""Open the engine the way every front end does: from the environment's home."""

from __future__ import annotations

from core.engine import Engine
from core.home import Home
from core.registry import open_current


def open_engine(home: Home | None = None, *, with_stage: bool = False) -> Engine:
    """Open the published registry; attach the tmux stage when asked and configured."""
    opened = open_current(home)
    engine = Engine(conn=opened.conn, config=opened.config)
    engine.home = opened.home  # type: ignore[attr-defined]
    if with_stage:
        from core.stage import attach_stage
        attach_stage(engine, opened.home)
    return engine
