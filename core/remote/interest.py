"""Who wants remote hosts followed, and the one follower per host (see
``core.remote.follower``): locks and the on-demand start, kept apart from the
follower itself so a navigator that starts followers imports nothing heavy
(no subprocess, no envelope code)."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path

from core.config.config import Config, RemoteConfig
from core.config.home import Home
from core.model.flocks import lock_is_held


def _digest(home: Home, remote: RemoteConfig) -> str:
    return hashlib.sha256(f"{home.root}\0{remote.name}".encode()).hexdigest()[:16]


def remote_dir(home: Home) -> Path:
    folder = home.run_dir / "remote"
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    return folder


def lock_path(home: Home, remote: RemoteConfig) -> Path:
    return remote_dir(home) / f"{_digest(home, remote)}.follow.lock"


def log_path(home: Home, remote: RemoteConfig) -> Path:
    return remote_dir(home) / f"{_digest(home, remote)}.follow.log"


def interest_path(home: Home) -> Path:
    return remote_dir(home) / "interest.lock"


def open_lock(path: Path) -> int:
    return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)


@contextlib.contextmanager
def interest(home: Home) -> Iterator[None]:
    """Hold the shared interest lock: followers keep running while it is held."""
    fd = open_lock(interest_path(home))
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)
        yield
    finally:
        os.close(fd)


_HELD: dict[str, int] = {}


def hold_interest(home: Home) -> int:
    """The interest lock for a process's whole life (the navigator): the descriptor
    stays open (once per home); the kernel drops the lock when the process ends."""
    key = os.fspath(home.root)
    if key not in _HELD:
        fd = open_lock(interest_path(home))
        fcntl.flock(fd, fcntl.LOCK_SH)
        _HELD[key] = fd
    return _HELD[key]


def anyone_interested(home: Home) -> bool:
    fd = open_lock(interest_path(home))
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing drops a lock taken here
    return False


def follower_running(home: Home, remote: RemoteConfig) -> bool:
    return lock_is_held(lock_path(home, remote))


def follower_argv(remote_name: str) -> list[str]:
    return [sys.executable, "-m", "core.remote.follower", remote_name]


def ensure_followers(home: Home, config: Config) -> list[tuple[str, int]]:
    """Start a follower for every configured remote that has none; returns (name, pid)
    of each started.
    Cheap when all run (one lock test per remote); a start that races another one
    loses on the lock and exits at once."""
    from core.model.spawn import spawn_detached

    started = []
    repo_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ) | home.child_env()
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (repo_root, env.get("PYTHONPATH", "")) if p)
    for remote in config.remotes:
        if follower_running(home, remote):
            continue
        pid = spawn_detached(follower_argv(remote.name), env,
                             log_path=os.fspath(log_path(home, remote)))
        started.append((remote.name, pid))
    return started
