"""Several Switchboard homes as remote hosts, each behind its own real sshd on loopback.

The harness of the remote-open tests (``test_remote_open``), for many hosts: each
host is a home with its own host id, its own sshd (Debian's openssh-server; keys
made here, ``SetEnv`` pointing the remote ``switchboard`` at that home) and a
``Host hN`` entry in one ssh_config that a ``$SWITCHBOARD_SSH`` wrapper passes to
ssh. A host can be stopped (its sshd and every session process it started end,
as when a machine goes away) and started again on the same port.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from core.config.config import Config, RemoteConfig
from core.config.home import Home
from core.config.registry import init_registry, open_current
from core.context.requests import new_request_id
from core.engine.engine import Engine
from core.model.session_enums import Activity, ActivityReason, MembershipReason, Provider
from storage.connection import write_transaction
from storage.operations import frames as frame_ops
from storage.operations import sessions as session_ops
from tests.factories import project_config

REPO_ROOT = Path(__file__).resolve().parents[2]
SSHD = "/usr/sbin/sshd"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def host_template(root: Path, host_id: str, display: str, names: tuple[str, ...]) -> Config:
    """A config whose host and project ids are this host's own (ids are unique across
    hosts; the shared factory numbers them per home)."""
    template = project_config(root / "src", names=names)
    return replace(template, host=replace(template.host, host_id=host_id,
                                          display_name=display),
                   projects=tuple(replace(p, project_id=str(uuid.uuid4()))
                                  for p in template.projects))


@dataclass
class Host:
    name: str
    host_id: str
    home: Path
    folder: Path
    port: int
    server: subprocess.Popen[bytes] | None = None

    @property
    def remote(self) -> RemoteConfig:
        return RemoteConfig(name=self.name, host_id=self.host_id, ssh_target=self.name)

    def engine(self) -> Engine:
        opened = open_current(Home(root=self.home, config_path=self.home / "config.toml"))
        return Engine(conn=opened.conn, config=opened.config)

    def start(self) -> None:
        self.server = subprocess.Popen(
            [SSHD, "-D", "-e", "-f", str(self.folder / "sshd_config")],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return
            except OSError:
                if self.server.poll() is not None:
                    raise AssertionError("sshd exited: " + self.server.stderr.read()
                                         .decode()[-500:]) from None
                time.sleep(0.05)
        raise AssertionError(f"sshd for {self.name} did not listen")

    def stop(self) -> None:
        """The machine goes away: its sshd and every process its sessions started."""
        if self.server is None:
            return
        for pid in descendants(self.server.pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.server.kill()
        self.server.wait(timeout=10)
        if self.server.stderr is not None:
            self.server.stderr.close()
        self.server = None


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (children first found, then theirs), from /proc."""
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                stat = handle.read()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        parents.setdefault(ppid, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


@dataclass
class Hosts:
    folder: Path
    wrapper: Path
    hosts: list[Host] = field(default_factory=list)

    def close(self) -> None:
        for host in self.hosts:
            host.stop()
            subprocess.run(["tmux", "-S", str(host.folder / "tmux.sock"), "kill-server"],
                           capture_output=True)
        shutil.rmtree(self.folder, ignore_errors=True)


def make_hosts(count: int, build: Callable[[int, Host], None]) -> Hosts:
    """``count`` hosts h0..hN; ``build(index, host)`` creates each host's home."""
    if not Path(SSHD).exists():
        raise AssertionError("sshd is not installed; `make test` installs openssh-server")
    folder = Path(tempfile.mkdtemp(prefix="sbh-", dir="/tmp"))  # short: socket paths
    for name in ("host_key", "user_key"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f",
                        str(folder / name)], check=True)
    shutil.copy(folder / "user_key.pub", folder / "authorized_keys")
    Path("/run/sshd").mkdir(exist_ok=True)  # sshd's privilege separation directory
    user = os.environ.get("USER") or "root"
    bin_dir = Path(sys.executable).parent
    wrapper = folder / "ssh"
    hosts = Hosts(folder, wrapper)
    config = []
    try:
        for index in range(count):
            name = f"h{index}"
            host_folder = folder / name
            host_folder.mkdir()
            (host_folder / "user").mkdir()
            (host_folder / "bin").mkdir()  # a test may put its own `switchboard` first
            host = Host(name=name, host_id=str(uuid.uuid4()), home=host_folder / "home",
                        folder=host_folder, port=free_port())
            build(index, host)
            (host_folder / "sshd_config").write_text(
                f"Port {host.port}\nListenAddress 127.0.0.1\nHostKey {folder / 'host_key'}\n"
                f"AuthorizedKeysFile {folder / 'authorized_keys'}\nStrictModes no\n"
                "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n"
                "PermitRootLogin prohibit-password\nMaxSessions 50\n"
                f"PidFile {host_folder / 'sshd.pid'}\n"
                f"SetEnv PATH={host_folder / 'bin'}:{bin_dir}:/usr/local/bin:/usr/bin:/bin "
                f"SWITCHBOARD_HOME={host.home} SWITCHBOARD_CONFIG={host.home / 'config.toml'} "
                f"PYTHONPATH={REPO_ROOT} HOME={host_folder / 'user'} TERM=xterm-256color\n")
            config.append(
                f"Host {name}\n  HostName 127.0.0.1\n  Port {host.port}\n  User {user}\n"
                f"  IdentityFile {folder / 'user_key'}\n  IdentitiesOnly yes\n"
                "  StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n"
                "  LogLevel ERROR\n")
            hosts.hosts.append(host)
            host.start()
        (folder / "ssh_config").write_text("".join(config))
        wrapper.write_text(f"#!/bin/sh\nexec ssh -F {folder / 'ssh_config'} \"$@\"\n")
        wrapper.chmod(0o755)
    except BaseException:
        hosts.close()
        raise
    return hosts


def plain_home(names: tuple[str, ...] = ("gamma",)) -> Callable[[int, Host], None]:
    """A host whose home has these projects and nothing running (no tmux)."""
    def build(index: int, host: Host) -> None:
        init_registry(Home(root=host.home, config_path=host.home / "config.toml"),
                      template=host_template(host.home, host.host_id, f"host-{index}", names))
    return build


def add_agents(host: Host, count: int) -> list[tuple[str, str]]:
    """``count`` live agents on the host, one workspace frame per project, each working:
    the registry rows a launched agent's hooks leave (no tmux needed to publish them).
    Returns (frame id, session key) pairs."""
    engine = host.engine()
    try:
        agents = []
        for project in engine.config.projects[:count]:
            route = engine.project_enter(new_request_id(), project.name)
            now = engine.now()
            with write_transaction(engine.conn) as conn:
                key = session_ops.insert_session(
                    conn, host_id=host.host_id, provider=Provider.CLAUDE,
                    provider_session_id=str(uuid.uuid4()), project_id=project.project_id,
                    checkout_id=project.checkout_id, name=None, purpose=None, now=now)
                session_ops.insert_membership(conn, frame_session_id=str(uuid.uuid4()),
                                              frame_id=route.frame_id, key=key,
                                              reason=MembershipReason.STARTED, now=now)
                frame_ops.set_current_session(conn, route.frame_id, key, now)
                session_ops.record_activity(conn, key, activity=Activity.WORKING,
                                            reason=ActivityReason.UNKNOWN,
                                            runtime_presence="live", turn_id=None,
                                            provider_version=None, now=now)
            agents.append((route.frame_id, key))
        return agents
    finally:
        engine.conn.close()


def set_activity(host: Host, key: str, activity: Activity, reason: ActivityReason) -> None:
    """What the agent's next hook records on its host."""
    engine = host.engine()
    try:
        with write_transaction(engine.conn) as conn:
            session_ops.record_activity(conn, key, activity=activity, reason=reason,
                                        runtime_presence="live", turn_id=None,
                                        provider_version=None, now=engine.now())
    finally:
        engine.conn.close()


def live_home(names: tuple[str, ...] = ("gamma",)) -> Callable[[int, Host], None]:
    """A host whose providers are fake agents on its own tmux server (in its folder)."""
    from core.config.config import ProviderConfig, TmuxConfig
    from tests.integration.journey_env import fake_provider_command

    def build(index: int, host: Host) -> None:
        template = host_template(host.home, host.host_id, f"host-{index}", names)
        template = replace(
            template, tmux=TmuxConfig(socket_path=str(host.folder / "tmux.sock")),
            providers={p: ProviderConfig(command=fake_provider_command(p.value))
                       for p in Provider})
        init_registry(Home(root=host.home, config_path=host.home / "config.toml"),
                      template=template)
    return build


def end_followers() -> None:
    """End the followers this test process started (ensure_followers spawns them as
    its children), by pid, and reap them."""
    for pid in descendants(os.getpid()):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                argv = handle.read().split(b"\0")
        except OSError:
            continue
        if b"core.remote.follower" not in argv:
            continue
        try:
            os.kill(pid, signal.SIGTERM)
            os.waitpid(pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
