"""Defaults written once: the config's and every part that falls back to them.

The config (``core.config.config.TmuxConfig``), the tmux adapter and the navigator's
layout all need the same names and widths when nothing else was configured; each
reads them from here, below all of them.
"""

from __future__ import annotations

VIEW_SESSION = "switchboard"
"""The tmux session that holds the views' windows (``[tmux] view_session``)."""
HOLDING_SESSION = "_sb_holding"
"""The tmux session where parked agent panes wait (``[tmux] holding_session``)."""
NAVIGATOR_WIDTH = 40
"""Columns of a view's navigator pane (``[tmux] navigator_width``)."""
