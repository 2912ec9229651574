"""Cross-process locks beside a tmux socket.

Two processes of one home (the navigator, a CLI command, a hook) may both
find a view without a window and both create one; tmux itself has no lock
for "create unless present". An advisory ``flock`` on a private file next to
the socket serializes them per server, without the registry (whose write
transaction must not be held across tmux processes). Kept apart from the
stage so the stage only says *what* it serializes, not how.
"""

from __future__ import annotations

import fcntl
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from core.model.files import create_private_file, private_dir
from core.tmux.errors import TmuxCommandFailed

POLL_SECONDS = 0.01
"""How often a waiting process retries the lock (non-blocking, so it can time out)."""


def views_lock_path(socket_path: str) -> Path:
    """The lock file that serializes view-window creation on ``socket_path``."""
    return Path(f"{socket_path}.views.lock")


@contextmanager
def exclusive_flock(path: Path, timeout: float) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``path`` (created private) for the block.

    Raises TmuxCommandFailed, naming the file, when another process holds it
    for longer than ``timeout`` seconds.
    """
    private_dir(path.parent)
    create_private_file(path)
    with open(path, "a") as handle:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise TmuxCommandFailed(
                        f"another process holds {path} for over {timeout:.0f} s; "
                        "try again") from None
                time.sleep(POLL_SECONDS)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
