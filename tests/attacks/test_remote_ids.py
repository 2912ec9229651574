"""Issue 37 item 5: a remote HostState that reuses this host's project, view, frame and
recovery ids (only its host id is new) is valid evidence, and it can never crash a
navigator nor make this host's state invalid.

The attack is performed for real: the local demo home's own HostState, with its host
id swapped for the remote's, is served by an ``ssh`` stand-in and fetched through
``remote refresh``'s code path (every envelope rule applies, and it passes them: a
remote's ids are its own business). Before the fix, the navigator died at start
(``DuplicateIds`` in the Views list) and ``state navigator --json`` failed
``envelope_invalid``. Demo homes share their fixed ids, so two demo hosts do this
without any hostile intent; both remotes here carry the same ids as well.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from core.apps.client import EngineClient
from core.config.config import RemoteConfig, render_config
from core.config.registry import open_current
from core.engine.engine import Engine
from core.model.files import write_private
from core.state.envelope import decode_checked, encode_canonical
from core.state.remotes import refresh
from core.state.state_builder import build_host_state, build_navigator_state
from core.state.state_types import NavigatorState, qualified_key
from navigator.app import SwitchboardApp
from navigator.widgets.frames import FrameTree, frame_key, project_key
from navigator.widgets.recoveries import RecoveryList
from navigator.widgets.views import ViewList
from tests.navigator.helpers import notices, settle
from tests.navigator.scenario import Scenario, build_demo

TWINS = {"twin-a": "44444444-4444-4444-8444-444444444444",
         "twin-b": "55555555-5555-4555-8555-555555555555"}


def _configure(engine: Engine, home_config: Path, remotes: tuple[RemoteConfig, ...]) -> None:
    """The remotes in the config file (what a person edits) and in the open engine."""
    engine.config = replace(engine.config, remotes=remotes)
    write_private(home_config, render_config(engine.config))


def _serve(folder: Path, name: str, document: bytes) -> Path:
    """An ``ssh`` stand-in that prints ``document`` as the remote's ``state host``."""
    body = folder / f"{name}.json"
    body.write_bytes(document + b"\n")
    script = folder / f"ssh-{name}"
    script.write_text(f"#!/bin/sh\nexec cat {body}\n")
    script.chmod(0o755)
    return script


@pytest.fixture
def twins(sb_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Scenario:
    """The demo home, following two remotes whose documents reuse every local id."""
    demo = build_demo(sb_home)
    engine = demo.engine
    remotes = tuple(RemoteConfig(name=name, host_id=host_id, ssh_target=f"dev@{name}.example")
                    for name, host_id in TWINS.items())
    _configure(engine, demo.home.config_path, remotes)
    own = encode_canonical(build_host_state(engine))
    for name, host_id in TWINS.items():
        forged = own.replace(engine.host_id.encode(), host_id.encode())
        monkeypatch.setenv("SWITCHBOARD_SSH", str(_serve(tmp_path, name, forged)))
        result = refresh(engine, name)
        assert (result.reachability, result.error) == ("online", None)  # it is valid
    stored = engine.conn.execute("SELECT COUNT(*) FROM host_state_cache").fetchone()[0]
    assert stored == 2
    return demo


def _ids(state: NavigatorState, host_id: str) -> tuple[set[str], set[str]]:
    return ({v.view_id for v in state.views if v.host_id == host_id},
            {p.project_id for p in state.projects if p.host_id == host_id})


def test_navigator_state_keeps_every_host_and_stays_valid(twins: Scenario) -> None:
    engine = twins.engine
    state = build_navigator_state(engine)
    assert decode_checked(encode_canonical(state), schema=NavigatorState) == state
    local_views, local_projects = _ids(state, engine.host_id)
    assert local_views and local_projects
    for host_id in TWINS.values():  # the same ids, each on its own host
        assert _ids(state, host_id) == (local_views, local_projects)
    # the CLI a frontend reads: a valid envelope, not envelope_invalid
    env = {**os.environ, "SWITCHBOARD_HOME": str(twins.home.root),
           "SWITCHBOARD_CONFIG": str(twins.home.config_path)}
    done = subprocess.run([sys.executable, "-m", "navigator.cli", "state", "navigator",
                           "--json"], capture_output=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr.decode()
    shown = decode_checked(done.stdout.strip(), schema=NavigatorState)
    assert {h.host_id for h in shown.hosts} == {engine.host_id, *TWINS.values()}
    assert len(shown.views) == 3 * len(local_views)
    assert json.loads(done.stdout)["localHostId"] == engine.host_id


def test_id_rules_still_hold_within_one_host(twins: Scenario) -> None:
    """Per-host keys do not loosen the envelope: one host repeating an id is refused."""
    state = build_navigator_state(twins.engine)
    twin = next(iter(TWINS.values()))
    again = next(v for v in state.views if v.host_id == twin)
    with pytest.raises(Exception, match="duplicates an earlier viewId of host"):
        decode_checked(encode_canonical(replace(state, views=(*state.views, again))),
                       schema=NavigatorState)
    # the twin's views keep naming frames only the local host still has: refused, a
    # reference never resolves on another host
    bare = tuple(replace(p, frames=()) if p.host_id == twin else p for p in state.projects)
    with pytest.raises(Exception, match=f"which is not a frame of host {twin}"):
        decode_checked(encode_canonical(replace(state, projects=bare)), schema=NavigatorState)


async def test_the_navigator_starts_and_shows_every_host(twins: Scenario) -> None:
    engine = twins.engine
    app = SwitchboardApp(twins.client, poll_interval=3600)
    async with app.run_test(size=(100, 40)) as pilot:
        await settle(pilot)
        assert app.is_running
        state = app.navigator_state
        assert state is not None and {h.host_id for h in state.hosts} == {
            engine.host_id, *TWINS.values()}
        local_views, local_projects = _ids(state, engine.host_id)
        views = app.query_one(ViewList)
        shown = {views.get_option_at_index(i).id for i in range(views.option_count)}
        for host_id in (engine.host_id, *TWINS.values()):
            for view_id in local_views:
                key = view_id if host_id == engine.host_id else qualified_key(host_id, view_id)
                assert state.row_key(host_id, view_id) == key
                assert key in shown
                assert views.view(key) is not None and views.view(key).host_id == host_id
        nodes = app.query_one(FrameTree).frame_nodes()
        for host_id in (engine.host_id, *TWINS.values()):
            for project_id in local_projects:
                key = project_id if host_id == engine.host_id \
                    else qualified_key(host_id, project_id)
                assert project_key(key) in nodes
        workspace = twins.frames["alpha"]
        remote_node = nodes[frame_key(qualified_key(TWINS["twin-a"], workspace))]
        assert "@" not in str(nodes[frame_key(workspace)].parent.label)  # bare: this host's
        assert remote_node.data is not None and "@" in str(remote_node.parent.label)
        # a remote recovery reusing the local one's id is its own row, never run here
        recoveries = app.query_one(RecoveryList)
        assert recoveries.option_count == 3
        recoveries.focus()
        recoveries.highlight_key(qualified_key(TWINS["twin-b"], twins.recoveries[0]))
        await pilot.press("enter")
        await settle(pilot)
        assert app.is_running
        assert any("read-only cache" in m for _, m in notices(app)), notices(app)
    state_row = engine.conn.execute("SELECT state FROM recoveries WHERE recovery_id = ?",
                                    (twins.recoveries[0],)).fetchone()
    assert state_row["state"] == "open"  # enter on the twin's row ran nothing local


async def test_removing_a_remote_drops_its_cached_rows(twins: Scenario) -> None:
    engine = twins.engine
    kept = RemoteConfig(name="twin-b", host_id=TWINS["twin-b"], ssh_target="dev@twin-b.example")
    _configure(engine, twins.home.config_path, (kept,))
    # what twin-a left is evidence of nobody's now: never shown, and pruned
    state = build_navigator_state(engine)
    assert {h.host_id for h in state.hosts} == {engine.host_id, TWINS["twin-b"]}
    assert twins.client.remote_actions().prune() == 1
    rows = engine.conn.execute("SELECT remote_name FROM host_state_cache").fetchall()
    assert [r[0] for r in rows] == ["twin-b"]
    # with every remote removed, the next navigator start (the one that follows remotes,
    # as ``switchboard ui`` runs it) drops the rest: nothing stays, nor in the status counts
    _configure(engine, twins.home.config_path, ())
    opened = open_current(twins.home)
    client = EngineClient(engine=Engine(conn=opened.conn, config=opened.config),
                          home=twins.home)
    app = SwitchboardApp(client, poll_interval=3600, start_server=True)
    async with app.run_test(size=(100, 40)) as pilot:
        await settle(pilot)
        assert app.is_running
        assert app.navigator_state is not None
        assert [h.host_id for h in app.navigator_state.hosts] == [engine.host_id]
    assert engine.conn.execute("SELECT COUNT(*) FROM host_state_cache").fetchone()[0] == 0


def test_a_renamed_remote_never_shows_its_old_row(twins: Scenario, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The old name's row and the new one's name the same host: one host row, valid."""
    engine = twins.engine
    renamed = (RemoteConfig(name="twin-a2", host_id=TWINS["twin-a"],
                            ssh_target="dev@twin-a.example"),
               RemoteConfig(name="twin-b", host_id=TWINS["twin-b"],
                            ssh_target="dev@twin-b.example"))
    _configure(engine, twins.home.config_path, renamed)
    own = encode_canonical(build_host_state(engine))
    forged = own.replace(engine.host_id.encode(), TWINS["twin-a"].encode())
    monkeypatch.setenv("SWITCHBOARD_SSH", str(_serve(tmp_path, "twin-a2", forged)))
    assert refresh(engine, "twin-a2").error is None
    assert engine.conn.execute("SELECT COUNT(*) FROM host_state_cache").fetchone()[0] == 3
    state = build_navigator_state(engine)
    assert decode_checked(encode_canonical(state), schema=NavigatorState) == state
    assert sorted(h.host_id for h in state.hosts) == sorted([engine.host_id, *TWINS.values()])


def test_keys_on_a_twin_frame_act_on_the_twin_never_on_the_local_frame(twins: Scenario) -> None:
    """The tree's frame of another host is targeted on that host, though its bare id is
    a local frame's too: t, p and y go to the twin's engine, local keys are refused."""
    from navigator.targeting import (
        Panel,
        RemoteFrame,
        Selection,
        frame_for_key,
        remote_frame_for_key,
        task_for_key,
    )

    engine = twins.engine
    state = build_navigator_state(engine)
    twin = TWINS["twin-a"]
    task = twins.frames["Fix login"]
    project = next(p for p in state.projects if p.host_id == twin
                   and any(f.frame_id == task for f in p.frames))
    frame = next(f for f in project.frames if f.frame_id == task)
    on_twin = Selection(focused=Panel.TREE, tree_project_id=state.row_key(twin, project.project_id),
                        tree_frame=frame)
    remote = remote_frame_for_key(state, on_twin)
    assert isinstance(remote, RemoteFrame) and remote.host_id == twin
    assert remote.frame.frame_id == task
    refused = frame_for_key(state, on_twin, "x")
    assert not isinstance(refused, type(frame)) and "read-only cache" in refused.text
    assert "read-only cache" in task_for_key(state, on_twin, "complete").text
    # the same bare id picked on this host's project stays local
    local = Selection(focused=Panel.TREE, tree_project_id=project.project_id, tree_frame=frame)
    assert remote_frame_for_key(state, local) is None
    assert frame_for_key(state, local, "x") == frame
