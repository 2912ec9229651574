"""A front end makes sure its home's server runs: a cheap probe, a start when needed.

A navigator calls ``ensure_running`` as it starts (in a worker: a start takes a few
tenths of a second). The probe is one ``flock`` test on the server's lock; only a
home without a server pays for a start. ``agent_http.start_server`` is the one start
(a launch's too, which registers its token while the server starts; ``ensure_server``
starts and waits): it gives the server the home's variables and the server's tuning
knobs (``agent_http.SERVER_KNOBS``), nothing else of Switchboard's environment.
"""

from __future__ import annotations

from core.config.home import Home
from core.providers.agent_http import ServerInfo, ensure_server, lock_held


def ensure_running(home: Home) -> ServerInfo | None:
    """The running server's port file (None when a probe found it running and did not
    read it), after starting one if none held the lock."""
    if lock_held(home.run_dir):
        return None
    return ensure_server(home.run_dir, home.child_env())


__all__ = ["ensure_running"]
