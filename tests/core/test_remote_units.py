"""The live-remote pieces without ssh: the follow stream on a real registry, the argv
the remote shell gets, the control socket's folder, and the follower locks."""

from __future__ import annotations

import fcntl
import io
import json
import os
import shlex
import shutil
import threading
import time
from pathlib import Path

import pytest

from core.config.config import RemoteConfig
from core.config.home import Home
from core.config.registry import open_current
from core.context.requests import new_request_id
from core.context.session import open_reader
from core.engine.engine import Engine
from core.model.errors import SwitchboardError
from core.remote import interest as interest_module
from core.remote.channel import control_path, request_argv
from core.remote.interest import (
    anyone_interested,
    follower_running,
    hold_interest,
    interest,
    lock_path,
    open_lock,
)
from core.remote.publish import follow
from tests.factories import make_engine

REMOTE = RemoteConfig(name="far", host_id="44444444-4444-4444-8444-444444444444",
                      ssh_target="me@far")


class Lines(io.RawIOBase):
    """A writable stream that keeps what the follow loop writes, line by line."""

    def __init__(self) -> None:
        self.data = b""

    def writable(self) -> bool:
        return True

    def write(self, b) -> int:  # type: ignore[override]
        self.data += bytes(b)
        return len(b)


def _home(root: Path) -> Home:
    return Home(root=root, config_path=root / "config.toml")


def test_the_stream_sends_the_state_at_once_then_only_changes_and_heartbeats(
        tmp_path: Path) -> None:
    root = tmp_path / "h"
    engine = make_engine(root)
    engine.conn.close()
    reader = open_reader(_home(root))
    out = Lines()
    worker = threading.Thread(target=follow, args=(reader, out), kwargs={
        "heartbeat_s": 0.2, "refresh_s": 60, "rebuild_s": 60, "max_seconds": 2.5})
    worker.start()
    time.sleep(1.0)
    first = out.data.split(b"\n")[0]
    assert json.loads(first)["host"]["hostId"] == engine.host_id
    docs = [line for line in out.data.split(b"\n") if line.strip()]
    assert len(docs) == 1 and out.data.count(b"\n") >= 3  # heartbeats while nothing moves
    opened = open_current(_home(root))  # another connection's write, as a hook's would be
    writer = Engine(conn=opened.conn, config=opened.config)
    writer.project_enter(new_request_id(), "alpha")
    writer.conn.close()
    worker.join(5)
    docs = [json.loads(line) for line in out.data.split(b"\n") if line.strip()]
    assert len(docs) == 2 and len(docs[1]["views"]) == 1 == len(docs[1]["frames"])
    reader.conn.close()


def test_remote_words_are_data_on_the_remote_shell(tmp_path: Path) -> None:
    argv = request_argv(REMOTE, _home(tmp_path / "h"),
                        ["frame", "message", "f", "--text=$(touch x); 'q' -x\nline"])
    assert argv[argv.index("me@far") + 1] == "switchboard"
    words = shlex.split(" ".join(argv[argv.index("me@far") + 2:]))  # what the shell parses
    assert words == ["frame", "message", "f", "--text=$(touch x); 'q' -x\nline"]
    assert "-o" in argv and "ControlMaster=no" in argv and "BatchMode=yes" in argv


def test_the_control_socket_folder_is_private_and_short(tmp_path: Path) -> None:
    short = Path("/tmp") / f"sbu-{os.getpid()}"
    try:
        path = control_path(_home(short), REMOTE)
        assert path.startswith(str(short / "run" / "remote")) and len(path) <= 80
        os.chmod(short / "run" / "remote", 0o755)
        with pytest.raises(SwitchboardError, match="not a private folder"):
            control_path(_home(short), REMOTE)
    finally:
        shutil.rmtree(short, ignore_errors=True)
    deep = control_path(_home(tmp_path / ("d" * 60) / "home"), REMOTE)
    assert deep.startswith(f"/tmp/sb-ssh-{os.getuid()}/") and len(deep) <= 80


def test_one_follower_per_host_and_interest_lives_with_its_holder(tmp_path: Path) -> None:
    home = _home(tmp_path / "h")
    assert not follower_running(home, REMOTE) and not anyone_interested(home)
    fd = open_lock(lock_path(home, REMOTE))
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    assert follower_running(home, REMOTE)
    os.close(fd)
    assert not follower_running(home, REMOTE)
    with interest(home):
        assert anyone_interested(home)
    assert not anyone_interested(home)
    held = hold_interest(home)
    assert hold_interest(home) == held and anyone_interested(home)  # once per home
    os.close(interest_module._HELD.pop(os.fspath(home.root)))
    assert not anyone_interested(home)
    assert oct(os.stat(lock_path(home, REMOTE)).st_mode & 0o777) == "0o600"
