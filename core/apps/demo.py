"""The embedded demo: a private home, a private tmux server, fake agents.

``switchboard demo`` builds (or reuses) a demo home with one project run by
the fake provider, a workspace and two tasks, so a newcomer can push, go
back, complete and recover without any account or real agent.
"""

from __future__ import annotations

import os
import shlex
import sys
import time
import uuid
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from core.config.config import (
    CheckoutConfig,
    Config,
    ProjectConfig,
    ProviderConfig,
    TmuxConfig,
    default_config,
)
from core.config.home import Home, default_demo_root
from core.config.registry import init_registry
from core.context.requests import new_request_id
from core.install.hooks_install import launch_hook_command
from core.model.enums import Provider
from core.model.files import own_dir
from core.providers.fake.argv import FAKE_PROVIDERS
from core.providers.traits import traits
from core.tmux.attach_line import attach_line

if TYPE_CHECKING:
    from core.engine.engine import Engine

DEMO_PROJECT_ID = "d3e10000-0000-4000-8000-000000000001"
DEMO_CHECKOUT_ID = "d3e10000-0000-4000-8000-000000000002"


@dataclass(frozen=True)
class DemoSession:
    home: Path
    socket_path: str
    view_id: str
    window_id: str
    attach_command: str


def fake_command(provider: Provider) -> tuple[str, ...]:
    # Launches that carry their hooks as -c overrides (which the fake agent does not
    # read) give it the same hook command directly.
    hooks = (("--hook-command", shlex.join(launch_hook_command()))
             if traits(provider).hooks_as_launch_overrides else ())
    return (sys.executable, "-m", "core.providers.fake.agent", "--agent-command",
            f"{sys.executable} -m navigator.cli agent", *hooks, "--provider", provider.value)


def default_demo_home() -> Path:
    """The demo's home without ``--home``: XDG state/switchboard-demo."""
    return default_demo_root()


def demo_template(root: Path) -> Config:
    """The demo's config: fake agents for every provider, one project over
    ``root``/src/demo (made here), the private tmux server at ``root``/tmux.sock."""
    src = root / "src" / "demo"
    src.mkdir(parents=True, exist_ok=True)
    template = default_config(generation_id="", host_id=str(uuid.uuid4()), display_name="demo")
    return replace(
        template,
        providers={p: ProviderConfig(command=fake_command(p), enabled=p.value in FAKE_PROVIDERS)
                   for p in Provider},
        checkouts=(CheckoutConfig(checkout_id=DEMO_CHECKOUT_ID, path=str(src)),),
        projects=(ProjectConfig(project_id=DEMO_PROJECT_ID, name="demo", root=str(src),
                                checkout_id=DEMO_CHECKOUT_ID),),
        tmux=TmuxConfig(socket_path=str(root / "tmux.sock")))


def build(root: Path) -> DemoSession:
    """Create the demo home on first run; start its agents; return how to attach."""
    from core.engine.open import open_engine

    own_dir(root)
    os.environ["SWITCHBOARD_HOME"] = str(root)
    os.environ["SWITCHBOARD_CONFIG"] = str(root / "config.toml")
    home = Home(root=root, config_path=root / "config.toml")
    socket = str(root / "tmux.sock")
    if home.read_current_generation() is None:
        init_registry(home, template=demo_template(root))
    engine = open_engine(home, with_stage=True)
    route = engine.project_enter(new_request_id(), "demo")
    titles = _task_titles(engine)
    # The workspace's agent is started once, when it has never had a session: a second
    # `switchboard demo` within the seconds before the seeder pushed a task (no titles
    # yet) used to start it again and fail ("already has a active runtime").
    started = engine.conn.execute("SELECT current_session_key FROM frames WHERE frame_id = ?",
                                  (route.frame_id,)).fetchone()[0]
    if started is None:
        engine.frame_start(new_request_id(), route.frame_id)
    else:
        from core.reconcile.reconcile import reconcile
        reconcile(engine)
    if len(titles) < len(DEMO_TASKS):
        _start_seeder(root)
    view = engine.conn.execute("SELECT tmux_window_id FROM user_views WHERE view_id = ?",
                               (route.view_id,)).fetchone()
    attach = attach_line(socket, view["tmux_window_id"])
    return DemoSession(root, socket, route.view_id, view["tmux_window_id"], attach)


def handover_command(demo_socket: str, window_id: str, own_socket: str,
                     own_session: str) -> str | None:
    """The shell command a person's tmux client runs in its own place (``tmux
    detach-client -E``) to show the demo, then come back.

    ``switchboard demo`` typed in a pane of the person's own tmux server cannot
    ``switch-client`` to the demo's private server (a client belongs to one
    server), and an attach inside the pane nests a second tmux with the same
    prefix. So the person's client leaves their server (which keeps running) and
    the same terminal attaches to the demo; when that attach ends (prefix d, or
    ``switchboard demo --stop``) the terminal attaches again to the session it
    came from. tmux runs the command with its ``default-shell``, which may be fish
    or csh: every value goes in single quotes, the one quoting those shells share;
    a value holding a quote or a backslash (read differently by fish) makes this
    None, and the caller prints the attach command instead.
    """
    values = (demo_socket, window_id, own_socket, own_session)
    if any("'" in value or "\\" in value or not value.isprintable() for value in values):
        return None
    attach = "exec env -u TMUX -u TMUX_PANE tmux -S '{}' attach-session -t '{}'"
    return (attach.format(demo_socket, window_id).removeprefix("exec ") + "; "
            + attach.format(own_socket, own_session))


DEMO_TASKS = (("Write the parser", "Write a tokenizer and parser for the config format."),
              ("Add tests", "Add property tests for the parser's round trip."))
"""The demo's two tasks, pushed from the workspace in this order (the second stays shown)."""

SEED_LOG = "demo-seed.log"


def _task_titles(engine: Engine) -> set[str]:
    rows = engine.conn.execute("SELECT title FROM frames WHERE role = 'task'").fetchall()
    return {row[0] for row in rows}


def _start_seeder(root: Path) -> None:
    """Push the demo's tasks in a process of its own, so the person attaches at once.

    Each push waits for the new task's agent to claim its brief (a few seconds with
    the fake agent) before the next transition may run; done in ``build`` that kept
    a newcomer in front of a blank terminal for over ten seconds. The navigator
    shows the workspace at once and each task as it starts. A seeder that is
    already running (a second ``switchboard demo``) holds the lock and this one
    leaves at once; one stopped halfway is resumed by the next ``switchboard demo``.
    """
    import subprocess

    log = os.open(root / SEED_LOG, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
    try:
        subprocess.Popen([sys.executable, "-m", "core.apps.demo", "seed", str(root)],
                         stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                         start_new_session=True, close_fds=True)
    finally:
        os.close(log)


def seed(root: Path) -> None:
    """Push each demo task that does not exist yet, waiting for its claim in between."""
    import fcntl

    from core.engine.open import open_engine

    lock = os.open(root / (SEED_LOG + ".lock"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(lock)
        return
    os.environ["SWITCHBOARD_HOME"] = str(root)
    os.environ["SWITCHBOARD_CONFIG"] = str(root / "config.toml")
    engine = open_engine(Home(root=root, config_path=root / "config.toml"), with_stage=True)
    workspace = engine.conn.execute(
        "SELECT frame_id FROM frames WHERE role = 'workspace' AND project_id = ?",
        (DEMO_PROJECT_ID,)).fetchone()[0]
    view = engine.conn.execute("SELECT view_id FROM frame_placements WHERE frame_id = ?",
                               (workspace,)).fetchone()[0]
    for index, (title, brief) in enumerate(DEMO_TASKS):
        if title in _task_titles(engine):
            continue
        # No wait for the workspace: its agent reports no Stop before its first turn, and
        # a push from an agent that is not working runs at once.
        pushed = engine.frame_push(new_request_id(), workspace, title, brief)
        _wait_ready(engine, pushed.target_frame_id)
        if index < len(DEMO_TASKS) - 1:
            engine.frame_back(new_request_id(), view)


def _wait_ready(engine: Engine, frame_id: str, timeout: float = 30.0) -> None:
    """Until the frame's agent is ready (its claim turn ended), or ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        row = engine.conn.execute(
            "SELECT s.activity FROM frames f JOIN provider_sessions s"
            " ON s.session_key = f.current_session_key WHERE f.frame_id = ?",
            (frame_id,)).fetchone()
        if row is not None and row[0] == "ready":
            return
        time.sleep(0.1)


def is_demo_home(root: Path) -> bool:
    """Whether ``root`` holds the demo's own config (the demo project's id in it)."""
    config = root / "config.toml"
    return config.is_file() and DEMO_PROJECT_ID in config.read_text(encoding="utf-8",
                                                                    errors="replace")


def reopen_command(root: Path) -> str:
    """The command that opens this home's view again from a new shell, in backquotes.

    Bare ``switchboard`` reaches the default home, never the demo's: a hint shown in
    the demo (the navigator left by ctrl+q) names ``switchboard demo``, with the
    ``--home`` it was given, or the person is sent to an empty home."""
    from core.model.hints import command

    if not is_demo_home(root):
        return command()
    if root == default_demo_root():
        return command("demo")
    return command("demo", "--home", str(root))


@dataclass(frozen=True)
class DemoStopped:
    home: Path
    server_was_running: bool
    removed: bool


def stop(root: Path, *, reset: bool = False) -> DemoStopped:
    """End the demo: its private tmux server (and so its fake agents) goes away.

    ``reset`` also deletes the demo home, so the next ``switchboard demo`` starts
    fresh. Only a folder the demo built is deleted: it must hold the demo's
    config naming the demo project, never an arbitrary ``--home``.
    """
    import shutil
    import subprocess

    from core.model.errors import ConfigError

    socket = root / "tmux.sock"
    running = False
    if socket.exists():
        done = subprocess.run(["tmux", "-S", str(socket), "kill-server"],
                              capture_output=True, text=True, timeout=10)
        running = done.returncode == 0
    removed = False
    if reset and root.exists():
        if not is_demo_home(root):
            raise ConfigError(f"{root} does not look like a Switchboard demo home (no demo "
                              "config in it); not deleting it", code="demo_home_invalid")
        shutil.rmtree(root)
        removed = True
    return DemoStopped(home=root, server_was_running=running, removed=removed)


if __name__ == "__main__":  # python -m core.apps.demo seed HOME (started by build)
    if len(sys.argv) == 3 and sys.argv[1] == "seed":
        seed(Path(sys.argv[2]))
