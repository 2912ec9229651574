"""A cheap, fully real world for transition tests: a registry, a private tmux server,
fake providers whose hooks and agent tools are no-ops (so the test decides when a
claim or a Stop happens), and one checker that says whether tmux and the registry
agree.

Agents still run in real panes (bracketed paste, echo), so what tmux delivered
is visible with capture-pane.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from core.config.capabilities import ENV_CAPABILITY
from core.config.config import ControlTurnsConfig, ProviderConfig, TmuxConfig
from core.config.home import Home
from core.config.registry import init_registry
from core.context.requests import new_request_id
from core.engine.engine import Engine
from core.engine.open import open_engine
from core.model.enums import Activity, ActivityReason, Provider
from core.runtime.claims import claim_for_frame
from core.runtime.stage import CONTROL_TEMPLATE
from storage.connection import write_transaction
from storage.operations import sessions as sessions_ops
from storage.operations import views as views_ops
from tests.factories import project_config
from tests.integration.journey_env import fake_provider_command, tmux
from tests.waiting import retry_until, retry_value

NAVIGATOR_STAND_IN = ["sleep", "600"]
"""The navigator pane's program in these tests: Textual start-up is not what is tested."""


def quiet_provider_command(provider: str) -> tuple[str, ...]:
    """The fake provider with no-op hooks and agent tools."""
    return (sys.executable, "-m", "core.providers.fake.agent", "--hook-command", "true",
            "--agent-command", "true", "--provider", provider)


def live_provider_command(provider: str) -> tuple[str, ...]:
    """The fake provider whose hooks and agent tools reach this registry."""
    return fake_provider_command(provider)


class OffsetClock:
    """System time shifted forward: a fresh engine that sees every lease as expired."""

    def __init__(self, offset_ms: int) -> None:
        self.offset_ms = offset_ms

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000 + self.offset_ms


def home_of(root: Path) -> Home:
    return Home(root=root, config_path=root / "config.toml")


def make_engine(root: Path, socket: Path, *, quiet: bool = True,
                watchdog_seconds: float | None = None,
                provider_command: Callable[[str], tuple[str, ...]] | None = None) -> Engine:
    """init a registry wired to the private server ``socket``; open it with a stage."""
    template = project_config(root / "src")
    command = provider_command or (quiet_provider_command if quiet else live_provider_command)
    template = replace(
        template,
        providers={p: ProviderConfig(command=command(p.value)) for p in Provider},
        tmux=TmuxConfig(socket_path=str(socket)))
    if watchdog_seconds is not None:
        template = replace(template, control_turns=replace(
            ControlTurnsConfig(), watchdog_timeout_seconds=watchdog_seconds))
    init_registry(home_of(root), template=template)
    return open_stage_engine(root)


def open_stage_engine(root: Path, clock: object | None = None) -> Engine:
    """A fresh engine (new connection, new stage) on the same registry."""
    engine = open_engine(home_of(root), with_stage=True)
    if clock is not None:
        engine.clock = clock  # type: ignore[assignment]
    engine.stage.navigator_command = list(NAVIGATOR_STAND_IN)
    return engine


@dataclass
class World:
    """Ids of one view with a workspace (and optionally one pushed task)."""

    root: Path
    socket: Path
    view_id: str
    workspace_id: str
    child_id: str | None = None

    def ids(self) -> dict[str, str | None]:
        return {"view_id": self.view_id, "workspace_id": self.workspace_id,
                "child_id": self.child_id}


def build_world(root: Path, socket: Path, *, with_child: bool = True,
                quiet: bool = True) -> tuple[Engine, World]:
    """Workspace started in main; with_child: a task pushed, its brief claimed, in main."""
    engine = make_engine(root, socket, quiet=quiet)
    route = engine.project_enter(new_request_id(), "alpha")
    engine.frame_start(new_request_id(), route.frame_id)
    world = World(root, socket, route.view_id, route.frame_id)
    wait_prompt(socket, pane_of(engine, route.frame_id))
    if with_child:
        pushed = engine.frame_push(new_request_id(), route.frame_id, "Task", "The brief")
        world.child_id = pushed.target_frame_id
        wait_prompt(socket, pane_of(engine, world.child_id))
        claim_for_frame(engine, world.child_id, session_of(engine, world.child_id))
    return engine, world


def wait_prompt(socket: Path, pane: str | None) -> None:
    """Wait until the provider in ``pane`` shows its idle prompt.

    Only then could a real trusted Stop have happened; a line typed earlier
    lands in a cooked tty and is echoed twice (by the tty and by the agent).
    """
    assert pane is not None
    assert retry_until(lambda: screen(socket, pane).rstrip().endswith(">"), 5.0,
                       interval=0.02), screen(socket, pane)


def session_of(engine: Engine, frame_id: str) -> str:
    return engine.conn.execute("SELECT current_session_key FROM frames WHERE frame_id = ?",
                               (frame_id,)).fetchone()[0]


def pane_of(engine: Engine, frame_id: str) -> str | None:
    row = engine.conn.execute(
        "SELECT s.pane_id FROM frame_placements p JOIN surfaces s ON s.surface_id = p.surface_id"
        " WHERE p.frame_id = ? AND p.state <> 'orphaned' AND s.lifecycle_state = 'live'",
        (frame_id,)).fetchone()
    return row[0] if row else None


def mark_ready(engine: Engine, frame_id: str) -> None:
    """What a trusted Stop hook records (the quiet provider's hooks are no-ops)."""
    with write_transaction(engine.conn) as conn:
        sessions_ops.record_activity(conn, session_of(engine, frame_id), activity=Activity.READY,
                                     reason=ActivityReason.TURN_COMPLETE,
                                     runtime_presence="live", turn_id=None,
                                     provider_version=None, now=engine.now())




def screen(socket: Path, pane: str) -> str:
    """The pane's visible text plus history, joined so wrapped lines stay whole."""
    return tmux(socket, "capture-pane", "-p", "-J", "-S", "-200", "-t", pane)


def control_lines(socket: Path) -> dict[str, int]:
    """pane -> how often the control line is on screen, for every provider pane."""
    counts: dict[str, int] = {}
    for line in tmux(socket, "list-panes", "-a", "-F", "#{pane_id} #{@sb_role}").splitlines():
        pane, _, role = line.partition(" ")
        if role == "provider":
            counts[pane] = screen(socket, pane).count(CONTROL_TEMPLATE)
    return counts


def forge_reused_pane(socket: Path, holding: str, old_pane: str, surface_id: str) -> None:
    """On a new server on ``socket``, make panes until ``old_pane`` is issued again and
    dress it up as ours: holding session tag, ``@sb_surface``, provider role, fenced."""

    def reissued() -> bool:
        # The first new-session can race the old server's exit: make sure it exists.
        if subprocess.run(["tmux", "-S", str(socket), "has-session", "-t", f"={holding}"],
                          capture_output=True).returncode != 0:
            tmux(socket, "-f", "/dev/null", "new-session", "-d", "-s", holding, "cat")
        elif old_pane not in tmux(socket, "list-panes", "-a", "-F", "#{pane_id}").split():
            tmux(socket, "new-window", "-d", "-t", f"={holding}:", "cat")
        return old_pane in tmux(socket, "list-panes", "-a", "-F", "#{pane_id}").split()

    assert retry_until(reissued, 30,
                       interval=0.02), tmux(socket, "list-panes", "-a", "-F", "#{pane_id}")
    for option in (("-t", f"={holding}", "@sb_holding", "1"),
                   ("-p", "-t", old_pane, "@sb_surface", surface_id),
                   ("-p", "-t", old_pane, "@sb_role", "provider")):
        tmux(socket, "set-option", *option)
    tmux(socket, "select-pane", "-d", "-t", old_pane)


def problems(engine: Engine, view_id: str) -> list[str]:
    """Every way tmux and the registry disagree for one view (empty = consistent).

    Exactly one pane in main; the registry's main locator, active placement and
    mode match it; parked/staged runtimes sit fenced in the holding session; no
    transition is left executing; at most one submission per control turn; no
    brief or handoff is lost (claimed, or its transition can still be claimed,
    or a recovery tells the person); every uncertain turn has an open recovery.
    """
    found: list[str] = []
    conn = engine.conn
    snap = engine.stage.snapshot()
    view = views_ops.get_view(conn, view_id)
    layout = snap.view(view_id) if snap is not None else None
    if layout is None:
        return ["the view has no tmux window"]
    if layout.main is None:
        found.append(f"main is not exactly one pane: {[p.pane_id for p in layout.extra_panes]}")
        return found
    if view["main_pane_id"] != layout.main.pane_id:
        found.append(f"registry main {view['main_pane_id']} but tmux main {layout.main.pane_id}")
    if layout.mode != view["mode"]:
        found.append(f"registry mode {view['mode']} but tmux shows {layout.mode}")
    active = views_ops.active_placement(conn, view_id)
    if active is not None:
        if active["frame_id"] != view["active_frame_id"]:
            found.append("the active placement is not the view's active frame")
        expected = pane_of(engine, active["frame_id"])
        if expected != layout.main.pane_id:
            found.append(f"active frame's pane {expected} is not in main ({layout.main.pane_id})")
    elif layout.main.role is None or layout.main.role.value != "placeholder":
        found.append(f"no active placement but main shows {layout.main.pane_id}")
    for row in conn.execute(
            "SELECT p.frame_id, p.state, s.pane_id, s.surface_id FROM frame_placements p"
            " JOIN surfaces s ON s.surface_id = p.surface_id WHERE p.view_id = ?"
            " AND p.state IN ('parked', 'staged') AND s.lifecycle_state = 'live'", (view_id,)):
        pane = snap.pane(row["pane_id"])
        if pane is None or pane.surface_id != row["surface_id"]:
            found.append(f"{row['state']} pane {row['pane_id']} is gone")
        elif not pane.parked or not pane.input_off:
            found.append(f"{row['state']} pane {row['pane_id']} is not parked and fenced")
    # Only the view's server: a locator of a restarted server names someone else's pane.
    for row in conn.execute("SELECT surface_id, pane_id FROM surfaces"
                            " WHERE lifecycle_state = 'retired' AND pane_id IS NOT NULL"
                            " AND tmux_server_id IS ?", (view["tmux_server_id"],)):
        pane = snap.pane(row["pane_id"])
        if pane is not None and pane.surface_id == row["surface_id"]:
            found.append(f"retired surface's pane {row['pane_id']} still runs")
    executing = conn.execute("SELECT kind, transport_phase FROM view_transitions"
                             " WHERE state = 'executing'").fetchall()
    found += [f"{k} left executing at {p}" for k, p in executing]
    for row in conn.execute("SELECT control_turn_id, state, submission_count FROM control_turns"):
        if row["submission_count"] > 1:
            found.append(f"control turn submitted {row['submission_count']} times")
        if row["state"] == "uncertain" and not _open_recovery(conn, row["control_turn_id"]):
            found.append("an uncertain control turn has no open recovery")
    for pane, count in control_lines(Path(engine.stage.socket_path)).items():
        if count > 1:
            found.append(f"the control line reached {pane} {count} times")
    for table in ("transition_briefs", "completion_handoffs"):
        for row in conn.execute(
                f"SELECT r.first_claimed_at, t.state, t.view_id FROM {table} r"
                " JOIN view_transitions t ON t.transition_id = r.transition_id"):
            # A cancelled transition's record was withdrawn on purpose, not lost; a failed
            # push's brief is claimed by its task's next start (core.runtime.claims).
            claimable = row["state"] in ("presented", "awaiting_claim", "settling", "completed",
                                         "cancelled") or \
                (table == "transition_briefs" and row["state"] == "failed")
            if row["first_claimed_at"] is None and not claimable and \
                    not _open_recovery(conn, row["view_id"]):
                found.append(f"a {table[:-1]} can no longer be claimed and no recovery says so")
    return found


def _open_recovery(conn, subject_id: str) -> bool:  # noqa: ANN001
    return conn.execute("SELECT 1 FROM recoveries WHERE subject_id = ? AND state = 'open'",
                        (subject_id,)).fetchone() is not None


def run_cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``switchboard ARGS`` for the home at ``root``, as a person outside tmux runs it."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("TMUX", "TMUX_PANE", "SWITCHBOARD_VIEW_ID")}
    env.update(SWITCHBOARD_HOME=str(root), SWITCHBOARD_CONFIG=str(root / "config.toml"))
    return subprocess.run([sys.executable, "-m", "navigator.cli", *args], env=env,
                          capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)


def pane_env(engine: Engine, frame_id: str) -> dict[str, str]:
    """The environment the provider in the frame's pane runs with (its capability).

    Read once the pane's process has exec'd: between tmux's fork and the exec,
    /proc shows the server's environment, which has no capability (a hook run
    with it is an unmanaged no-op; the scale bench's binds lost one in ~200).
    """
    pid = engine.conn.execute(
        "SELECT s.process_id FROM frame_placements p JOIN surfaces s"
        " ON s.surface_id = p.surface_id WHERE p.frame_id = ? AND p.state <> 'orphaned'",
        (frame_id,)).fetchone()[0]

    def read() -> dict[str, str]:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
        return dict(item.split("=", 1) for item in raw.decode().split("\0") if "=" in item)

    return retry_value(read, lambda env: ENV_CAPABILITY in env, 10.0, interval=0.02)
