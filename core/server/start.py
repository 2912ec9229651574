"""A front end makes sure its home's server runs: a cheap probe, a start when needed.

A navigator calls ``ensure_running`` as it starts (in a worker: a start takes a few
tenths of a second). The probe is one ``flock`` test on the server's lock; only a
home without a server pays for a start. The home's variables and the server's tuning
knobs (``housekeeping.TUNING_ENV``) are all of Switchboard's environment it gets.
"""

from __future__ import annotations

import os

from core.config.home import Home
from core.providers.agent_http import ServerInfo, ensure_server, lock_held, running
from core.server.housekeeping import TUNING_ENV


def server_env(home: Home) -> dict[str, str]:
    """What a started server is given of Switchboard's variables."""
    knobs = {name: os.environ[name] for name in TUNING_ENV if name in os.environ}
    return home.child_env() | knobs


def ensure_running(home: Home) -> ServerInfo | None:
    """The running server's port file (None when a probe found it running and did not
    read it), after starting one if none held the lock."""
    if lock_held(home.run_dir):
        return None
    return running(home.run_dir) or ensure_server(home.run_dir, server_env(home))


__all__ = ["ensure_running", "server_env"]
