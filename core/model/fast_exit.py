"""What a hook process leaves open for its ``os._exit`` to drop.

``navigator/hook_entry.py`` ends the hook process with ``os._exit`` (no
interpreter teardown) and turns this on. The session file's connection is
then held here instead of closed: closing the last connection to a WAL
database checkpoints it, and that checkpoint's fsync was the slowest and most
variable step of a tool hook (1 to 15 ms on a busy disk). Left open, the
committed transaction stays in the WAL, exactly as after a crash, which SQLite
is built for; the next connection reads it, and the WAL is checkpointed by
SQLite's own autocheckpoint (see ``WAL_AUTOCHECKPOINT_PAGES``), by the session's
last hook (which closes) and by any other writer's close.
"""

from __future__ import annotations

from typing import Any

#: Pages of WAL after which a commit checkpoints (SQLite's default is 1000, 4 MB):
#: a held-open session file's WAL stays near 1 MB, one checkpoint per ~35 tool hooks.
WAL_AUTOCHECKPOINT_PAGES = 256
# The -wal's size limit is set on every session connection: storage.session_db.

enabled = False
_held: list[Any] = []


def hold_until_exit(resource: Any) -> bool:
    """Keep ``resource`` referenced until the process exits; False when not enabled
    (an in-process caller, a test): the caller closes it as usual."""
    if not enabled:
        return False
    _held.append(resource)
    return True
