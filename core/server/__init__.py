"""``switchboard server``: one long-lived process per home (issue 38.1).

Today it serves the agent tools over MCP streamable HTTP on 127.0.0.1 (``http.py``);
the reconcile loop, remote followers, attention publishing, turn-end work and the
parking policy still run where they did (not moved yet). It holds no truth of its own:
SQLite stays the truth, and killing it loses nothing (the next launch starts it).
"""
