"""The one ssh connection per remote host, and the requests that share it.

The follower (``core.remote.follower``) runs one long-lived
``ssh -M TARGET switchboard state host --follow --json``: that ssh is the
connection's ControlMaster, so a request the person makes on a remote frame
(focus, message, push) rides the same TCP connection and authentication as a
short multiplexed session (``ssh -S CONTROL TARGET switchboard ...``) instead of
opening a second connection. When no follower runs, ssh falls back to a
connection of its own (ControlMaster=no with a missing socket connects
directly), so an action never depends on the follower being up.

Remote words are data: ssh joins them with spaces for the remote shell, so each
one is shell-quoted here. The remote engine decides everything on its host;
whatever it prints comes back bounded and spelled out, never trusted.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path

from core.config.config import RemoteConfig
from core.config.home import Home
from core.model.errors import SwitchboardError
from core.model.text import shown

#: Seconds a request on a remote frame may take (a push launches an agent there).
REQUEST_TIMEOUT_S = 60.0
#: How much of a remote answer is kept (it is shown, never parsed for authority).
MAX_REPLY_BYTES = 64 * 1024
#: A unix socket path longer than this does not fit ``sun_path`` (108 bytes with the
#: NUL, and ssh appends a temporary suffix while it binds the master socket).
MAX_SOCKET_PATH = 80


def ssh_program() -> str:
    """``ssh``, or ``$SWITCHBOARD_SSH`` (a wrapper with its own -F, as the tests use)."""
    return os.environ.get("SWITCHBOARD_SSH", "ssh")


def control_path(home: Home, remote: RemoteConfig) -> str:
    """The ControlMaster socket of this home's connection to ``remote``.

    Under the home's run folder when the path is short enough for a unix socket,
    else in an owner-only folder under /tmp named by a digest of the home and the
    remote (deep homes, such as a test's tmp_path, overflow ``sun_path``)."""
    digest = hashlib.sha256(f"{home.root}\0{remote.name}".encode()).hexdigest()[:16]
    folder = home.run_dir / "remote"
    path = folder / f"{digest}.ctl"
    if len(os.fsencode(path)) > MAX_SOCKET_PATH:
        folder = Path("/tmp") / f"sb-ssh-{os.getuid()}"
        path = folder / f"{digest}.ctl"
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    info = os.lstat(folder)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise SwitchboardError(f"{folder} is not a private folder of this user (owner, mode "
                               "0700); remove it so Switchboard can make its own",
                               code="control_folder_unsafe")
    return os.fspath(path)


def _base(remote: RemoteConfig, home: Home, *, master: bool) -> list[str]:
    return [ssh_program(), "-o", "BatchMode=yes",
            "-o", f"ControlMaster={'yes' if master else 'no'}",
            "-o", f"ControlPath={control_path(home, remote)}",
            "-o", "ControlPersist=no"]


def follow_argv(remote: RemoteConfig, home: Home, *, alive_interval_s: int = 3) -> list[str]:
    """The follower's one ssh: master of the connection, streaming HostState documents.
    ServerAlive probes end it when the network (not only the remote) goes away."""
    return [*_base(remote, home, master=True),
            "-o", f"ServerAliveInterval={alive_interval_s}", "-o", "ServerAliveCountMax=2",
            remote.ssh_target, "switchboard", "state", "host", "--follow", "--json"]


def request_argv(remote: RemoteConfig, home: Home, words: list[str]) -> list[str]:
    """``ssh TARGET switchboard WORDS...`` over the follower's connection when it is up."""
    return [*_base(remote, home, master=False), remote.ssh_target, "switchboard",
            *(shlex.quote(word) for word in words)]


@dataclass(frozen=True)
class RemoteReply:
    """What the remote CLI printed (bounded, spelled out): shown to the person only."""

    remote_name: str
    words: tuple[str, ...]
    output: str


def run_request(remote: RemoteConfig, home: Home, words: list[str], *,
                timeout: float = REQUEST_TIMEOUT_S) -> RemoteReply:
    """Run one CLI request on the remote host; its refusal comes back as a one-line
    SwitchboardError naming the host."""
    argv = request_argv(remote, home, words)
    try:
        done = subprocess.run(argv, capture_output=True, timeout=timeout,
                              stdin=subprocess.DEVNULL, check=False)
    except FileNotFoundError as exc:
        raise SwitchboardError(f"cannot run ssh for {remote.name}: {exc}",
                               code="remote_unreachable") from exc
    except subprocess.TimeoutExpired as exc:
        raise SwitchboardError(f"{remote.name} did not answer within {timeout:.0f} s",
                               code="remote_timeout") from exc
    out = shown(done.stdout[:MAX_REPLY_BYTES].decode("utf-8", "replace").strip())
    if done.returncode != 0:
        lines = done.stderr[:MAX_REPLY_BYTES].decode("utf-8", "replace").strip().splitlines()
        tail = shown(lines[-1])[:300] if lines else f"exit status {done.returncode}"
        code = "remote_unreachable" if done.returncode == 255 else "remote_refused"
        raise SwitchboardError(f"{remote.name}: {tail}", code=code)
    return RemoteReply(remote.name, tuple(words), out[:2000])
