"""Cached remote HostState: fetched through a real subprocess, validated, never trusted."""

from __future__ import annotations

import os
import stat
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from core.config.config import RemoteConfig
from core.config.home import Home
from core.config.registry import init_registry, open_current
from core.context.requests import new_request_id
from core.engine.engine import Engine
from core.state.envelope import decode_checked, encode_canonical
from core.state.remotes import refresh
from core.state.state_builder import build_navigator_state
from core.state.state_types import NavigatorState
from tests.factories import make_engine, project_config

REMOTE_HOST = "44444444-4444-4444-8444-444444444444"
REMOTE_PROJECT = "66666666-6666-4666-8666-666666666666"


def _remote_home(root: Path) -> Home:
    """A second, real Switchboard home standing in for the remote machine."""
    home = Home(root=root, config_path=root / "config.toml")
    template = project_config(root / "src", names=("gamma",))
    # ids are UUIDs, unique across hosts; the shared factory numbers them per home
    template = replace(template, host=replace(template.host, host_id=REMOTE_HOST,
                                              display_name="far-away"),
                       projects=tuple(replace(p, project_id=REMOTE_PROJECT)
                                      for p in template.projects))
    init_registry(home, template=template)
    opened = open_current(home)
    remote = Engine(conn=opened.conn, config=opened.config)
    route = remote.project_enter(new_request_id(), "gamma")
    remote.frame_push(new_request_id(), route.frame_id, "Remote task", "do it remotely")
    return home


def _fake_ssh(folder: Path, remote_home: Path, *, exit_code: int = 0,
              body: str | None = None) -> Path:
    """An `ssh` stand-in that runs the remote command against another local home."""
    script = folder / "fake-ssh"
    run = (f"exec env SWITCHBOARD_HOME={remote_home} SWITCHBOARD_CONFIG="
           f"{remote_home / 'config.toml'} {sys.executable} -m navigator.cli state host --json")
    if body is not None:
        run = f"printf '%s' '{body}'"
    if exit_code:
        run = f"echo 'ssh: connect to host b.example port 22: Connection refused' >&2; " \
              f"exit {exit_code}"
    script.write_text(f"#!/bin/sh\n{run}\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return script


@pytest.fixture
def local(tmp_path: Path) -> Engine:
    remote = RemoteConfig(name="b", host_id=REMOTE_HOST, ssh_target="dev@b.example")
    return make_engine(tmp_path / "local", remotes=(remote,))


def test_refresh_caches_a_validated_remote_state(local: Engine, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    remote_home = _remote_home(tmp_path / "remote")
    monkeypatch.setenv("SWITCHBOARD_SSH", str(_fake_ssh(tmp_path, remote_home.root)))
    result = refresh(local, "b")
    assert (result.reachability, result.error) == ("online", None)
    state = build_navigator_state(local)
    assert [h.host_id for h in state.hosts] == sorted([local.host_id, REMOTE_HOST])
    remote_row = next(h for h in state.hosts if h.host_id == REMOTE_HOST)
    assert (remote_row.display_name, remote_row.stale) == ("far-away", False)
    remote_views = [v for v in state.views if v.host_id == REMOTE_HOST]
    assert [v.title for v in remote_views] == ["Remote task"]
    assert [c.title for c in remote_views[0].breadcrumb] == ["gamma", "Remote task"]
    # the whole envelope (local + cached) still passes every reference rule
    assert decode_checked(encode_canonical(state), schema=NavigatorState) == state
    # cached rows never become local rows: nothing about gamma exists in the registry
    assert local.conn.execute("SELECT COUNT(*) FROM frames").fetchone()[0] == 0


def test_failed_refresh_keeps_the_last_state_and_marks_it_stale(
        local: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    remote_home = _remote_home(tmp_path / "remote")
    monkeypatch.setenv("SWITCHBOARD_SSH", str(_fake_ssh(tmp_path, remote_home.root)))
    refresh(local, "b")
    monkeypatch.setenv("SWITCHBOARD_SSH", str(_fake_ssh(tmp_path, remote_home.root,
                                                        exit_code=255)))
    result = refresh(local, "b")
    assert result.reachability == "offline"
    assert "Connection refused" in result.error
    row = next(h for h in build_navigator_state(local).hosts if h.host_id == REMOTE_HOST)
    assert (row.stale, row.reachability) == (True, "offline")


def test_remote_answering_as_another_host_is_refused(local: Engine, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    other = _remote_home(tmp_path / "remote")
    bad = local.config.remotes[0]
    local.config = replace(local.config, remotes=(replace(
        bad, host_id="55555555-5555-4555-8555-555555555555"),))
    monkeypatch.setenv("SWITCHBOARD_SSH", str(_fake_ssh(tmp_path, other.root)))
    result = refresh(local, "b")
    assert result.reachability == "offline"
    assert "not the configured" in result.error
    assert local.conn.execute("SELECT COUNT(*) FROM host_state_cache").fetchone()[0] == 0


def test_envelope_with_a_sensitive_field_is_refused(local: Engine, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    remote_home = _remote_home(tmp_path / "remote")
    env = dict(os.environ, SWITCHBOARD_HOME=str(remote_home.root),
               SWITCHBOARD_CONFIG=str(remote_home.root / "config.toml"))
    import subprocess
    good = subprocess.run([sys.executable, "-m", "navigator.cli", "state", "host", "--json"],
                          env=env, capture_output=True, text=True, check=True).stdout.strip()
    forged = good[:-1] + ',"sessionToken":"abc"}'
    monkeypatch.setenv("SWITCHBOARD_SSH", str(_fake_ssh(tmp_path, remote_home.root,
                                                        body=forged)))
    result = refresh(local, "b")
    assert result.reachability == "offline"
    assert "sessionToken" in result.error
    assert local.conn.execute("SELECT COUNT(*) FROM host_state_cache").fetchone()[0] == 0
