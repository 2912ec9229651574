"""Restore benchmark: a fleet back after `tmux kill-server`, with the command a person types.

Run: ``python -m tests.bench.bench_restore [--projects 3] [--agents 4]``.

A private tmux server and a real registry: P projects entered, each with A live
fake agents (the workspace plus A-1 pushed tasks, each claimed by its own agent,
the view back on the workspace so the tasks are parked). The agents' hooks are
the real `switchboard hook`, so every session has its evidence file. Then the
server is killed and ``switchboard restore`` runs as a subprocess; timed from
its start to every agent's pane showing its resumed session.

Checked, not just timed: every agent resumed by its exact id (the launch is a
``resume`` of the same session key, the pane prints that id, and the session's
own evidence file, named by the id, holds a second ``session_started``), in the
place it had (the workspace in main, the tasks parked); 0 duplicates (no new
provider session, no new evidence folder, one agent pane per frame). A second
restore must change nothing. The floor is one ``switchboard open`` of a view
whose window stands (the CLI's and the registry's fixed cost), measured in the
same run.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from core.config.config import AutomationConfig, ProviderConfig, TmuxConfig
from core.config.home import ENV_HOME, Home
from core.config.registry import init_registry
from core.context.requests import new_request_id
from core.engine.engine import Engine
from core.engine.open import open_engine
from core.model.enums import Provider
from storage.session_db import open_session_db_readonly, session_db_path
from tests.factories import project_config
from tests.integration.journey_env import fake_provider_command
from tests.waiting import retry_until

TARGET_S = 30.0


def _tmux(socket: Path, *args: str) -> str:
    return subprocess.run(["tmux", "-S", str(socket), *args], capture_output=True,
                          text=True).stdout


def _cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE",
                                                            "SWITCHBOARD_VIEW_ID")}
    env.update(SWITCHBOARD_HOME=str(root), SWITCHBOARD_CONFIG=str(root / "config.toml"))
    return subprocess.run([sys.executable, "-m", "navigator.cli", *args], env=env,
                          capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)


def _state(engine: Engine, table: str, key: str, value: str) -> str | None:
    row = engine.conn.execute(f"SELECT state FROM {table} WHERE {key} = ?",  # noqa: S608
                              (value,)).fetchone()
    return None if row is None else str(row[0])


def _pane(engine: Engine, frame: str) -> str | None:
    row = engine.conn.execute(
        "SELECT s.pane_id FROM frame_placements p JOIN surfaces s ON s.surface_id = p.surface_id"
        " WHERE p.frame_id = ? AND p.state <> 'orphaned' AND s.lifecycle_state = 'live'",
        (frame,)).fetchone()
    return None if row is None else str(row[0])


def _session(engine: Engine, frame: str) -> str:
    return str(engine.conn.execute("SELECT current_session_key FROM frames WHERE frame_id = ?",
                                   (frame,)).fetchone()[0])


def _starts_in_file(root: Path, key: str) -> int:
    """``session_started`` events in the session's own evidence file (named by its id)."""
    path = session_db_path(root, key)
    if not path.exists():
        return 0
    conn = open_session_db_readonly(path)
    try:
        return int(conn.execute("SELECT COUNT(*) FROM events WHERE type = 'session_started'"
                                " AND session_id = ?", (key,)).fetchone()[0])
    finally:
        conn.close()


def build_fleet(root: Path, socket: Path, projects: int, agents: int
                ) -> tuple[Engine, dict[str, tuple[str, str]]]:
    """P views x A live agents; frame -> (view, 'main'|'parked')."""
    names = tuple(f"p{i:02d}" for i in range(projects))
    template = replace(project_config(root / "src", names),
                       providers={p: ProviderConfig(command=fake_provider_command(p.value))
                                  for p in Provider},
                       tmux=TmuxConfig(socket_path=str(socket)),
                       automation=replace(AutomationConfig(), initial_max_depth=1))
    home = Home(root=root, config_path=root / "config.toml")
    init_registry(home, template=template)
    engine = open_engine(home, with_stage=True)
    places: dict[str, tuple[str, str]] = {}
    for name in names:
        route = engine.project_enter(new_request_id(), name)
        started = engine.frame_start(new_request_id(), route.frame_id)
        if not retry_until(lambda s=started: _state(engine, "launch_intents", "launch_id",
                                                    s.launch_id) == "bound", 30.0):
            raise SystemExit(f"{name}'s workspace agent never bound")
        places[route.frame_id] = (route.view_id, "main")
        for index in range(agents - 1):
            pushed = engine.frame_push(new_request_id(), route.frame_id, f"task {index}",
                                       "Benchmark brief: say hello.")
            if not retry_until(lambda p=pushed: _state(
                    engine, "view_transitions", "transition_id", p.transition_id)
                    == "completed", 60.0):
                raise SystemExit(f"{name}'s push {index} did not complete")
            back = engine.frame_back(new_request_id(), route.view_id)
            if not retry_until(lambda b=back: _state(
                    engine, "view_transitions", "transition_id", b.transition_id)
                    in ("completed", None), 60.0):
                raise SystemExit(f"{name}'s back {index} did not complete")
            places[pushed.target_frame_id] = (route.view_id, "parked")
    return engine, places


def run(projects: int, agents: int) -> dict[str, float]:
    folder = Path(tempfile.mkdtemp(prefix="sbrestore-", dir="/tmp"))
    socket, root = folder / "tmux.sock", folder / "home"
    root.mkdir()
    saved = os.environ.get(ENV_HOME)
    os.environ[ENV_HOME] = str(root)
    for name in ("TMUX", "TMUX_PANE"):
        os.environ.pop(name, None)
    try:
        print(f"setting up {projects} projects x {agents} live agents ...", flush=True)
        engine, places = build_fleet(root, socket, projects, agents)
        keys = {frame: _session(engine, frame) for frame in places}
        for key in keys.values():
            if not retry_until(lambda k=key: _starts_in_file(root, k) == 1, 30.0):
                raise SystemExit(f"session {key} has no evidence of its start")
        folders = sorted(p.name for p in (root / "sessions").iterdir())
        sessions = engine.conn.execute("SELECT COUNT(*) FROM provider_sessions").fetchone()[0]
        launches = engine.conn.execute("SELECT COUNT(*) FROM launch_intents").fetchone()[0]
        first_view = next(iter(places.values()))[0]
        project = engine.conn.execute("SELECT project_id FROM user_views WHERE view_id = ?",
                                      (first_view,)).fetchone()[0]
        engine.conn.close()
        floor = min(_timed_open(root, project) for _ in range(3))

        pid = int(_tmux(socket, "display-message", "-p", "#{pid}").strip())
        _tmux(socket, "kill-server")
        retry_until(lambda: not Path(f"/proc/{pid}").exists(), 10.0)
        started = time.perf_counter()
        done = _cli(root, "restore")
        command_s = time.perf_counter() - started
        if done.returncode != 0:
            raise SystemExit(f"restore failed ({done.returncode}): {done.stderr or done.stdout}")
        fresh = open_engine(Home(root=root, config_path=root / "config.toml"), with_stage=True)

        def all_resumed() -> bool:
            for frame, key in keys.items():
                pane = _pane(fresh, frame)
                if pane is None or f"session: {key.rsplit(':', 1)[1]} (resumed)" not in \
                        _tmux(socket, "capture-pane", "-p", "-J", "-t", pane):
                    return False
            return True

        if not retry_until(all_resumed, 60.0, interval=0.05):
            raise SystemExit("not every agent shows its resumed session")
        back_s = time.perf_counter() - started
        if not retry_until(lambda: all(_starts_in_file(root, k) == 2 for k in keys.values()),
                           30.0):
            counts = {k: _starts_in_file(root, k) for k in keys.values()}
            raise SystemExit(f"session files do not show one resume each: {counts}")
        figures = _check(fresh, root, places, keys, folders, sessions, launches)
        figures.update(command_s=command_s, back_s=back_s, floor_s=floor)
        again = _cli(root, "restore")
        if again.returncode != 0 or "nothing to restore" not in again.stdout:
            raise SystemExit(f"a second restore did something: {again.stdout}{again.stderr}")
        fresh.conn.close()
        fresh = open_engine(Home(root=root, config_path=root / "config.toml"), with_stage=True)
        if _check(fresh, root, places, keys, folders, sessions, launches)["duplicates"]:
            raise SystemExit("the second restore made a duplicate")
        fresh.conn.close()
        return figures
    finally:
        _tmux(socket, "kill-server")
        if saved is None:
            os.environ.pop(ENV_HOME, None)
        else:
            os.environ[ENV_HOME] = saved
        shutil.rmtree(folder, ignore_errors=True)


def _timed_open(root: Path, project: str) -> float:
    started = time.perf_counter()
    done = _cli(root, "open", project, "--no-attach")
    if done.returncode != 0:
        raise SystemExit(f"open failed: {done.stderr}")
    return time.perf_counter() - started


def _check(engine: Engine, root: Path, places: dict[str, tuple[str, str]],
           keys: dict[str, str], folders: list[str], sessions: int,
           launches: int) -> dict[str, float]:
    """Exact ids, places and no duplicates; raises SystemExit naming what is wrong."""
    wrong: list[str] = []
    for frame, (_view, place) in places.items():
        key = _session(engine, frame)
        launch = engine.conn.execute(
            "SELECT action, target_session_key, session_key FROM launch_intents"
            " WHERE frame_id = ? ORDER BY created_at DESC LIMIT 1", (frame,)).fetchone()
        if key != keys[frame] or tuple(launch) != ("resume", key, key):
            wrong.append(f"{frame[:8]} not resumed by exact id: {tuple(launch)}")
        state = engine.conn.execute("SELECT state FROM frame_placements WHERE frame_id = ?"
                                    " AND state <> 'orphaned'", (frame,)).fetchone()[0]
        if state != {"main": "active", "parked": "parked"}[place]:
            wrong.append(f"{frame[:8]} is {state}, was {place}")
    new_sessions = engine.conn.execute("SELECT COUNT(*) FROM provider_sessions").fetchone()[0]
    new_folders = sorted(p.name for p in (root / "sessions").iterdir())
    relaunches = engine.conn.execute("SELECT COUNT(*) FROM launch_intents").fetchone()[0]
    live = engine.conn.execute("SELECT COUNT(*) FROM surfaces WHERE lifecycle_state = 'live'"
                               ).fetchone()[0]
    duplicates = (new_sessions - sessions) + len(set(new_folders) - set(folders)) + \
        max(0, live - len(places)) + max(0, relaunches - launches - len(places))
    if wrong:
        raise SystemExit("; ".join(wrong[:4]))
    return {"agents": float(len(places)), "duplicates": float(duplicates)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--projects", type=int, default=3)
    parser.add_argument("--agents", type=int, default=4)
    args = parser.parse_args(argv)
    f = run(args.projects, args.agents)
    ok = f["back_s"] <= TARGET_S and f["duplicates"] == 0
    print(f"restore after kill-server, {args.projects} projects x {args.agents} agents")
    print(f"  all {f['agents']:.0f} agents back        {f['back_s']:6.2f} s   target <= "
          f"{TARGET_S:g} s: {'OK' if f['back_s'] <= TARGET_S else 'OVER'}   (the command "
          f"itself {f['command_s']:.2f} s; floor: one `switchboard open` {f['floor_s']:.2f} s"
          f" = {f['back_s'] / f['floor_s']:.1f} x)")
    print(f"  resumed by exact id       {f['agents']:.0f}/{f['agents']:.0f} (launch, pane and "
          "session file agree)")
    print(f"  duplicates                {f['duplicates']:.0f}   target 0: "
          f"{'OK' if f['duplicates'] == 0 else 'OVER'}")
    print("  second restore            no-op")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
