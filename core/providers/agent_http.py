"""The launch side of the agent tools over MCP streamable HTTP (issue 38.2).

One ``switchboard server`` per home serves the agent tools on 127.0.0.1 (``core.server``).
This module is what a launch needs of it, kept low in the layers so the launcher can
use it: where the server's files are, whether it runs (its ``flock``), starting it
detached when it does not, and the per-launch bearer token.

Files, all in ``<run folder>/server`` (0700, checked by ``own_dir``):

- ``server.lock``: held (``flock``) by the running server for its whole life, so
  "running" is a fact the kernel keeps: a server killed with -9 releases it at once.
- ``server.json`` (0600): ``{"pid", "port", "started_at"}``, written once listening.
- ``server.log`` (0600): one line per refused request or failed call; never a token.
- ``tokens/<sha256 of the token>`` (0600): ``{"env": {...}}``, the launch's tool
  environment (what the tools read from the pane environment over stdio), or
  ``{"ended_at": ms}`` once a newer launch of the same session replaced it (stale).

Light to import (the turn-start hook of an HTTP launch probes the lock): subprocess
and secrets load only when a server is started or a token made.

The raw token exists only in the launch's MCP config (Claude, a 0600 file) or pane
environment (Codex, ``SWITCHBOARD_MCP_TOKEN``), like the capability it stands for.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from core.model.digest import sha256_hex
from core.model.errors import EnvironmentFailure
from core.model.files import own_dir, write_private

SERVER_FOLDER = "server"
LOCK_NAME = "server.lock"
INFO_NAME = "server.json"
LOG_NAME = "server.log"
PORT_HINT_NAME = "server.port"
TOKENS_FOLDER = "tokens"
SESSION_TOKEN_NAME = "mcp-http-token"
"""In a session's run folder: the digest of its launch's current token, so the next
launch of that session ends it (a resume never keeps its predecessor's authority)."""
ENV_TOKEN = "SWITCHBOARD_MCP_TOKEN"
"""Codex reads the bearer token from this pane variable (``bearer_token_env_var``)."""
MCP_PATH = "/mcp"
START_WAIT_S = 10.0
"""How long a front end waits for a server it started to write its port."""
INFO_MAX_BYTES = 4096
TOKEN_MAX_BYTES = 1024 * 1024
TOKEN_RE = re.compile(r"[A-Za-z0-9_-]{43}")
"""``secrets.token_urlsafe(32)``: anything else is not a token of ours."""
SERVER_MODULE = "core.server.main"


class ServerUnavailable(EnvironmentFailure):
    """The home's server could not be started or reached."""

    code = "server_unavailable"


@dataclass(frozen=True)
class ServerInfo:
    """A running server as its port file says (``server.json``)."""

    pid: int
    port: int
    started_at: float

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}{MCP_PATH}"


@dataclass(frozen=True)
class HttpEndpoint:
    """One launch's agent-tool endpoint: the server's URL and this launch's token."""

    url: str
    token: str

    def __repr__(self) -> str:  # never a token in a log or a traceback
        return f"HttpEndpoint(url={self.url!r}, token=<hidden>)"


def server_dir(run_dir: Path) -> Path:
    """The server's private folder in the home's run folder (made 0700, or refused)."""
    return own_dir(own_dir(run_dir) / SERVER_FOLDER)


def tokens_dir(run_dir: Path) -> Path:
    return own_dir(server_dir(run_dir) / TOKENS_FOLDER)


def token_digest(token: str) -> str:
    return sha256_hex(token.encode("ascii", "replace"))


def lock_held(run_dir: Path) -> bool:
    """Whether a server holds this home's lock now (a probe: taken and released)."""
    from core.model.flocks import lock_is_held

    return lock_is_held(server_dir(run_dir) / LOCK_NAME)


def read_info(run_dir: Path) -> ServerInfo | None:
    """The port file, if it is this user's private regular file and well formed."""
    path = server_dir(run_dir) / INFO_NAME
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid() or \
                info.st_mode & 0o077:
            return None
        data = os.read(fd, INFO_MAX_BYTES + 1)
    finally:
        os.close(fd)
    try:
        raw = json.loads(data)
        found = ServerInfo(int(raw["pid"]), int(raw["port"]), float(raw["started_at"]))
    except (ValueError, KeyError, TypeError):
        return None
    return found if 0 < found.port < 65536 else None


def running(run_dir: Path) -> ServerInfo | None:
    """The running server of this home, or None (no lock holder, or no port yet).

    A port file whose process is gone is a killed server's, left until its successor
    (holding the lock now, not yet listening) replaces it: not a running one."""
    if not lock_held(run_dir):
        return None
    found = read_info(run_dir)
    if found is None:
        return None
    try:
        os.kill(found.pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        return None  # another user's process by that number: not our server
    return found


def read_port_hint(run_dir: Path) -> int:
    """The port this home's last server listened on (0: none, or unreadable).

    A restarted server listens there again when it is free, so agents launched before
    a crash (their URL fixed in their MCP config) reach the new one."""
    path = server_dir(run_dir) / PORT_HINT_NAME
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError:
        return 0
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid() or \
                info.st_mode & 0o077:
            return 0
        data = os.read(fd, 16)
    finally:
        os.close(fd)
    text = data.decode("ascii", "replace").strip()
    return int(text) if text.isdigit() and 1024 <= int(text) < 65536 else 0


#: The server's tuning knobs: of Switchboard's variables only these (and the home's own)
#: reach a server a launch starts, so a bench's ``SWITCHBOARD_PARK_AFTER=off`` or a test's
#: ``SWITCHBOARD_SSH`` holds whoever starts it first. Never a capability or token.
SERVER_KNOBS = ("SWITCHBOARD_RECONCILE_INTERVAL", "SWITCHBOARD_PARK_AFTER", "SWITCHBOARD_SSH")


START_POLL_S = 0.005
"""How often a front end that started the server looks for its port file (a lock probe
and a small read: a coarser poll only added its half to every cold start)."""


@dataclass(frozen=True)
class ServerStart:
    """A front end's start of the home's server, under way (or a server found running):
    ``wait`` returns it once its port file is written. Split from the start so a launch
    registers its token meanwhile: the token is files only, and the server reads them
    per request."""

    run_dir: Path
    found: ServerInfo | None
    deadline: float
    wait_s: float

    def wait(self) -> ServerInfo:
        if self.found is not None:
            return self.found
        while True:
            found = running(self.run_dir)
            if found is not None:
                return found
            if time.monotonic() >= self.deadline:
                break
            time.sleep(START_POLL_S)
        raise ServerUnavailable(f"`switchboard server` did not start within {self.wait_s:g} "
                                f"s; see {server_dir(self.run_dir) / LOG_NAME} or run "
                                "`switchboard server`")


def start_server(run_dir: Path, home_env: Mapping[str, str],
                 wait_s: float = START_WAIT_S) -> ServerStart:
    """Start the home's server detached (its own session, fork+exec) unless one runs;
    ``ServerStart.wait`` for its port.

    Two front ends starting it at once both spawn one; the second finds the lock
    held and exits, and both read the first one's port file."""
    import shlex
    import subprocess
    import sys

    found = running(run_dir)
    if found is not None:
        return ServerStart(run_dir, found, 0.0, wait_s)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("SWITCHBOARD_") or k in SERVER_KNOBS}
    env.update(home_env)
    folder = server_dir(run_dir)
    with contextlib.suppress(FileNotFoundError):
        (folder / INFO_NAME).unlink()  # a killed server's port: not to be read as new
    # Through ``sh -c '... &'``: the shell exits at once (waited for here) and the server
    # is nobody's child (init's), in a session of its own, so no front end keeps a
    # zombie of it and none of their signals reach it.
    command = f"{shlex.quote(sys.executable)} -m {SERVER_MODULE} &"
    try:
        subprocess.run(["/bin/sh", "-c", command], env=env, cwd="/",  # noqa: S603
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True,
                       timeout=wait_s, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        raise ServerUnavailable(f"cannot start `switchboard server`: {exc}; run "
                                "`switchboard server` to see why") from None
    return ServerStart(run_dir, None, time.monotonic() + wait_s, wait_s)


def ensure_server(run_dir: Path, home_env: Mapping[str, str],
                  wait_s: float = START_WAIT_S) -> ServerInfo:
    """The home's server, started detached when none runs (``start_server``), once its
    port file is written."""
    return start_server(run_dir, home_env, wait_s).wait()


ENV_TRANSPORT = "SWITCHBOARD_AGENT_TOOLS"
"""``http`` in the pane environment of a launch whose tools are at the home's server:
its turn-start hook starts the server again when it is not running."""


def ensure_for_turn(run_dir: Path, home_env: Mapping[str, str]) -> None:
    """A turn of an HTTP launch is starting (its UserPromptSubmit hook): the model may
    call the tools next, so a server that was killed is started again now, on its old
    port (``server.port``). Never raises: the hook's own work must not fail for it,
    and a call that still finds no server gets an error the model can read."""
    with contextlib.suppress(EnvironmentFailure, OSError):
        if not lock_held(run_dir):
            ensure_server(run_dir, home_env)


def register_token(run_dir: Path, session_dir: Path, env: Mapping[str, str]) -> str:
    """A fresh token for one launch, stored hashed with the launch's tool environment;
    the session's previous launch's token is ended (a stale token gets 401)."""
    import secrets

    token = secrets.token_urlsafe(32)
    folder = tokens_dir(run_dir)
    digest = token_digest(token)
    write_private(folder / digest, json.dumps({"env": dict(env)}, sort_keys=True))
    marker = session_dir / SESSION_TOKEN_NAME
    with contextlib.suppress(OSError):
        previous = marker.read_text(encoding="ascii").strip()
        if re.fullmatch(r"[0-9a-f]{64}", previous) and previous != digest and \
                (folder / previous).exists():
            end_token(run_dir, previous)
    write_private(marker, digest + "\n")
    _prune(folder)
    return token


ENDED_KEEP_S = 24 * 3600
"""How long an ended token's record stays (so its agent is told "stale", not "unknown")."""
TOKEN_KEEP_S = 31 * 24 * 3600
"""A token record untouched this long is past its capability's 30 days: removed."""


def _prune(folder: Path) -> None:
    """Drop ended tokens' records after a day and any record after its capability's
    lifetime: the folder does not grow with every launch for ever."""
    now = time.time()
    with contextlib.suppress(OSError):
        for entry in os.scandir(folder):
            with contextlib.suppress(OSError, ValueError):
                age = now - entry.stat(follow_symlinks=False).st_mtime
                if age > TOKEN_KEEP_S or (age > ENDED_KEEP_S and _ended(Path(entry.path))):
                    os.unlink(entry.path)


def _ended(path: Path) -> bool:
    with open(path, "rb") as handle:
        record = json.loads(handle.read(4096))
    return isinstance(record, dict) and "ended_at" in record and "env" not in record


def withdraw_token(run_dir: Path, token: str) -> None:
    """Remove the record of a token that was never handed out (its launch was refused
    after registering it): no file keeps its launch's tool environment."""
    with contextlib.suppress(FileNotFoundError):
        (tokens_dir(run_dir) / token_digest(token)).unlink()


def end_token(run_dir: Path, digest: str) -> None:
    """Mark a token stale: its environment (the capability) is dropped, the name kept so
    the server can say why it refuses it."""
    write_private(tokens_dir(run_dir) / digest,
                  json.dumps({"ended_at": int(time.time() * 1000)}))


__all__ = ["ENV_TOKEN", "ENV_TRANSPORT", "HttpEndpoint", "ServerInfo", "ServerStart",
           "ServerUnavailable", "end_token", "ensure_for_turn", "ensure_server", "lock_held",
           "read_info", "register_token", "running", "server_dir", "start_server",
           "token_digest", "tokens_dir", "withdraw_token"]
