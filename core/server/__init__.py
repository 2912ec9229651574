"""``switchboard server``: one long-lived process per home (issue 38.1).

It serves the agent tools over MCP streamable HTTP on 127.0.0.1 (``http.py``) and
runs the housekeeping pass every interval (``housekeeping.py``: reconcile, WAL
checkpoint, the tmux attention segment, the parking policy, the remote followers),
so navigators are views only. Front ends start it on demand (``start.py``); it exits
when the home's tmux server has been gone a while, or its lock file goes
(``lifetime.py``). It holds no truth of its own: SQLite stays the truth, and killing
it at any moment loses nothing (the next front end or hook starts it again).
"""
