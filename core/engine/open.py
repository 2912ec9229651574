"""Open the engine the way commands that run transitions do.

The lean opens (a reader for navigators, the hook's open) are in
``core.context.session``; this one builds the whole ``Engine`` and, when asked,
attaches the tmux stage, so it sits above both.
"""

from __future__ import annotations

from core.config.home import Home
from core.engine.engine import Engine


def open_engine(home: Home | None = None, *, with_stage: bool = False,
                expected_generation: str | None = None) -> Engine:
    """Open the published registry; attach the tmux stage when asked and configured."""
    from core.config.registry import open_current

    opened = open_current(home, expected_generation=expected_generation)
    engine = Engine(conn=opened.conn, config=opened.config, home=opened.home)
    if with_stage:
        from core.runtime.stage import attach_stage
        attach_stage(engine, opened.home)
    return engine
