"""Acting on a remote frame: the remote engine's own CLI requests over the host's ssh
connection (real sshd on loopback, a real remote home with a fake agent in its own
tmux server). The remote host decides; the local registry never changes."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from core.config.home import Home
from core.context.requests import new_request_id
from core.engine.engine import Engine
from core.engine.open import open_engine
from core.model.errors import SwitchboardError
from core.model.results import RouteResult
from core.model.session_enums import Activity, ActivityReason
from core.remote.actions import RemoteActions
from core.remote.interest import ensure_followers, hold_interest
from storage.connection import write_transaction
from storage.operations import sessions as sessions_ops
from tests.integration.journey_env import make_live_engine, tmux, type_line
from tests.integration.remote_hosts import Host, end_followers, live_home, make_hosts
from tests.waiting import retry_until


@dataclass
class Far:
    host: Host
    route: RouteResult
    far: Engine
    socket: Path
    main: str
    engine: Engine
    home: Home


@pytest.fixture
def far(tmp_path: Path, tmux_socket: Path, monkeypatch) -> Iterator[Far]:
    """A remote host with a live fake agent in its workspace (turn finished), and a
    local home that has it configured as a remote."""
    hosts = make_hosts(1, live_home(("gamma",)))
    host = hosts.hosts[0]
    remote_socket = host.folder / "tmux.sock"
    try:
        remote_home = Home(root=host.home, config_path=host.home / "config.toml")
        monkeypatch.setenv("SWITCHBOARD_HOME", str(host.home))
        monkeypatch.setenv("SWITCHBOARD_CONFIG", str(host.home / "config.toml"))
        far = open_engine(remote_home, with_stage=True)
        route = far.project_enter(new_request_id(), "gamma")
        started = far.frame_start(new_request_id(), route.frame_id)
        assert retry_until(lambda: far.conn.execute(
            "SELECT state FROM launch_intents WHERE launch_id = ?",
            (started.launch_id,)).fetchone()[0] == "bound", 30)
        main = far.conn.execute("SELECT main_pane_id FROM user_views").fetchone()[0]
        type_line(remote_socket, main, "hello")
        assert retry_until(lambda: far.conn.execute(
            "SELECT activity FROM provider_sessions").fetchone()[0] == "ready", 30)

        root = tmp_path / "local"
        monkeypatch.setenv("SWITCHBOARD_SSH", str(hosts.wrapper))
        monkeypatch.setenv("SWITCHBOARD_HOME", str(root))
        monkeypatch.setenv("SWITCHBOARD_CONFIG", str(root / "config.toml"))
        engine = make_live_engine(root, tmux_socket, remotes=(host.remote,))
        yield Far(host, route, far, remote_socket, main, engine,
                  Home(root=root, config_path=root / "config.toml"))
    finally:
        end_followers()
        hosts.close()


def test_a_message_and_a_new_task_reach_a_remote_frame(far: Far, tmp_path: Path) -> None:
    host, route, engine, home, main = far.host, far.route, far.engine, far.home, far.main
    remote_socket = far.socket
    hold_interest(home)
    ensure_followers(home, engine.config)
    assert retry_until(lambda: (engine.conn.execute(
        "SELECT reachability FROM host_state_cache").fetchone() or [None])[0] == "online",
        30)
    local_before = engine.conn.execute("SELECT COUNT(*) FROM frames").fetchone()[0]
    actions = RemoteActions(home, engine.config)
    canary = tmp_path / "pwned"

    # a message: typed into the remote agent's pane by the remote broker
    text = f"from afar $(touch {canary}) 'quoted' -x"
    reply = actions.message(host.host_id, route.frame_id, text)
    assert reply.output.startswith("message "), reply
    assert retry_until(lambda: "from afar" in tmux(remote_socket, "capture-pane", "-p",
                                                   "-J", "-t", main), 20)
    with sqlite3.connect(f"file:{far.far.home.broker_path}?mode=ro", uri=True) as broker:
        bodies = [r[0] for r in broker.execute("SELECT text FROM messages")]
    assert text in bodies
    assert not canary.exists()

    # its prompt answered from here: the remote engine presses the keys in its pane
    type_line(remote_socket, main, "/notice Allow the build?")
    type_line(remote_socket, main, "next")
    assert retry_until(lambda: "Enter to select" in tmux(remote_socket, "capture-pane", "-p",
                                                         "-t", main), 20)
    assert retry_until(lambda: far.far.conn.execute(
        "SELECT activity FROM provider_sessions").fetchone()[0] == "ready", 20)
    with pytest.raises(SwitchboardError, match="h0: .*not waiting for an answer"):
        actions.answer(host.host_id, route.frame_id, True)
    key = far.far.conn.execute("SELECT session_key FROM provider_sessions").fetchone()[0]
    with write_transaction(far.far.conn) as conn:  # its permission hook: it asks
        sessions_ops.record_activity(conn, key, activity=Activity.NEEDS_INPUT,
                                     reason=ActivityReason.PERMISSION, runtime_presence="live",
                                     turn_id=None, provider_version=None, now=far.far.now())
    reply = actions.answer(host.host_id, route.frame_id, True)
    assert reply.output == "answered yes: Yes, set auto mode as my default permission mode"
    assert retry_until(lambda: "✓ Yes, set auto mode" in tmux(
        remote_socket, "capture-pane", "-p", "-t", main), 20)

    # a new task: pushed by the remote engine, seen locally through the follower
    reply = actions.push(host.host_id, route.frame_id, "-Remote child",
                         f"Do it over there; $(touch {canary})")
    assert reply.output.startswith("push "), reply
    assert retry_until(lambda: "-Remote child" in engine.conn.execute(
        "SELECT state_json FROM host_state_cache").fetchone()[0], 20)
    assert far.far.conn.execute("SELECT COUNT(*) FROM frames WHERE title = '-Remote child'"
                            ).fetchone()[0] == 1
    assert not canary.exists()
    # the remote engine decides: a refused request comes back as one line naming it
    try:
        actions.message(host.host_id, "77777777-7777-4777-8777-777777777777", "hi")
    except SwitchboardError as exc:
        assert exc.message.startswith("h0: ") and "\n" not in exc.message
    else:
        raise AssertionError("a message to an unknown remote frame was not refused")
    # nothing local moved
    assert engine.conn.execute("SELECT COUNT(*) FROM frames").fetchone()[0] == local_before


async def test_the_navigator_messages_and_enters_a_remote_frame(far: Far) -> None:
    """The navigator follows the remote (its own follower), shows its frame with its
    badge beside the local ones, sends t's message to the remote engine, and enter
    opens the remote view in a local window. (Waits are generous: a loaded 2-core
    machine runs sshd, the follower, both engines and the app at once.)"""
    from core.apps.client import EngineClient
    from navigator.app import SwitchboardApp
    from navigator.widgets.frames import frame_key
    from tests.navigator.helpers import notices, settle, tree, wait_until

    # One registry connection in this process: opening a second one reads the file's
    # header with a plain open/close, which drops this process's POSIX locks on it
    # (storage.registry_file._check_header), and another process's close then deletes
    # the WAL under the first connection.
    far.engine.conn.close()
    client = EngineClient.open(far.home, with_stage=True)
    app = SwitchboardApp(client, poll_interval=0.1, start_server=True)
    frame_id = far.route.frame_id
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: frame_key(frame_id) in tree(app).frame_nodes(), 60)
        node = tree(app).frame_nodes()[frame_key(frame_id)]
        assert node.data.badge == "ready"
        assert "@host-0" in str(node.parent.label)
        # the remote agent now asks for permission (its hook records it on its host):
        # the badge here follows live
        key = far.far.conn.execute("SELECT session_key FROM provider_sessions").fetchone()[0]
        with write_transaction(far.far.conn) as conn:
            sessions_ops.record_activity(conn, key, activity=Activity.NEEDS_INPUT,
                                         reason=ActivityReason.PERMISSION,
                                         runtime_presence="live", turn_id=None,
                                         provider_version=None, now=far.far.now())
        await wait_until(pilot, lambda: tree(app).frame_nodes()[frame_key(frame_id)]
                         .data.badge == "needs_input", 60)
        with write_transaction(far.far.conn) as conn:  # answered there; its turn ended
            sessions_ops.record_activity(conn, key, activity=Activity.READY,
                                         reason=ActivityReason.TURN_COMPLETE,
                                         runtime_presence="live", turn_id=None,
                                         provider_version=None, now=far.far.now())
        await wait_until(pilot, lambda: tree(app).frame_nodes()[frame_key(frame_id)]
                         .data.badge == "ready", 60)
        tree(app).focus()
        tree(app).select_key(frame_key(frame_id))
        await pilot.press("t")
        await pilot.pause()
        await pilot.press(*"hello over ssh")
        await pilot.press("enter")
        await settle(pilot)
        await wait_until(pilot, lambda: any("on host-0 sent" in m for _, m in notices(app)),
                         60)
        assert not [m for s, m in notices(app) if s == "error"], notices(app)
        assert retry_until(lambda: "hello over ssh" in tmux(
            far.socket, "capture-pane", "-p", "-J", "-t", far.main), 60)
        # enter: the remote view opens in a local window over ssh -t
        tree(app).select_key(frame_key(frame_id))
        await pilot.press("enter")
        await settle(pilot)
        await wait_until(pilot, lambda: "h0:gamma" in tmux(
            Path(far.engine.config.tmux.socket_path or ""), "list-windows", "-a", "-F",
            "#{window_name}"), 60)
        assert not [m for s, m in notices(app) if s == "error"], notices(app)
    client.shutdown()
