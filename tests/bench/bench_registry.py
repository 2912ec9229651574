"""Registry benchmark: host-state build over a large registry, and named-operation commits.

Run: ``python -m tests.bench.bench_registry [--views 50] [--frames 1000] [--sessions 5000]``.

The registry is a real file in a temporary home. Views and frames are created
only through the engine's named operations: one ``project_enter`` per view
(its workspace), then ``frame_push`` (claimed by the child, then ``frame_back``)
until the frame count is reached; a few tasks are then completed (handoff
claimed, settled) or closed by hand so every state shape is present. Each push
runs the start bundle, so it also creates one provider session. The remaining
provider sessions are bulk rows inserted with raw SQL (named operations
have no "import N sessions" path), attached to task frames as rollover
memberships so frames carry several sessions as in real use.

Figures (issue 2 targets):

- host state: ``core.state.state_builder.build_host_state(engine)`` (rows to the
  typed HostState v1); median <= 50 ms. Canonical encoding of that envelope
  and ``build_navigator_state`` are printed for information.
- named op: one ``view_mode`` commit (request record, CAS on revision, bump),
  alternating modes with fresh request ids; median <= 5 ms. ``frame_reopen``
  and a full ``view_focus`` transition (prepare, claim, inspect, commit) are
  printed for information.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from core.context.requests import new_request_id
from core.engine.engine import Engine
from core.model.enums import ViewMode
from core.model.ports import FixedClock, SequentialIds
from core.runtime.claims import claim_for_frame, settle_after_stop
from storage.connection import write_transaction
from tests.factories import HOST_ID, make_engine, project_config

TARGET_HOST_STATE_MS = 50.0
TARGET_NAMED_OP_MS = 5.0


def populate(root: Path, views: int, frames: int, sessions: int) -> tuple[Engine, dict]:
    names = tuple(f"project-{i:02d}" for i in range(views))
    template = project_config(root / "src", names)
    engine = make_engine(root / "home", clock=FixedClock(), ids=SequentialIds(),
                         projects=template.projects, checkouts=template.checkouts)
    routes = {name: engine.project_enter(new_request_id(), name) for name in names}
    tasks: list[tuple[str, str]] = []  # (frame, view)
    for index in range(frames - views):
        route = routes[names[index % views]]
        pushed = engine.frame_push(new_request_id(), route.frame_id, f"task {index:04d}",
                                   "benchmark brief")
        claim_for_frame(engine, pushed.target_frame_id, None)
        engine.frame_back(new_request_id(), route.view_id)
        engine.clock.advance(10)  # type: ignore[attr-defined]
        tasks.append((pushed.target_frame_id, route.view_id))

    # some history: completed-and-returned tasks and closed-by-hand tasks
    shapes = max(1, len(tasks) // 20)
    completed = tasks[:shapes]
    closed = tasks[shapes:2 * shapes]
    for frame_id, view_id in completed:
        engine.view_focus(new_request_id(), view_id, frame_id)
        returned = engine.frame_complete(new_request_id(), frame_id, "done", "review")
        claim_for_frame(engine, returned.target_frame_id, None)
        settle_after_stop(engine, returned.target_frame_id)
    for frame_id, _view_id in closed:
        engine.frame_close(new_request_id(), frame_id)

    # bulk provider sessions (raw SQL, see the module docstring)
    existing = engine.conn.execute("SELECT COUNT(*) FROM provider_sessions").fetchone()[0]
    extra = max(0, sessions - existing)
    open_tasks = [f for f, _v in tasks[2 * shapes:]] or [f for f, _v in tasks]
    now = engine.now()
    with write_transaction(engine.conn) as conn:
        ordinals = {r[0]: r[1] for r in conn.execute(
            "SELECT frame_id, MAX(ordinal) FROM frame_sessions GROUP BY frame_id")}
        for index in range(extra):
            frame_id = open_tasks[index % len(open_tasks)]
            provider_session_id = f"bulk-{index:06d}"
            key = f"{HOST_ID}:codex:{provider_session_id}"
            conn.execute(
                "INSERT INTO provider_sessions (session_key, host_id, provider,"
                " provider_session_id, name, pinned, runtime_presence, resumability, activity,"
                " activity_reason, created_at, last_observed_at, updated_at)"
                " VALUES (?, ?, 'codex', ?, ?, 0, 'stopped', 'resumable', 'completed',"
                " 'turn_complete', ?, ?, ?)",
                (key, HOST_ID, provider_session_id, f"session {index}", now, now, now))
            ordinals[frame_id] = ordinals.get(frame_id, 0) + 1
            conn.execute(
                "INSERT INTO frame_sessions (frame_session_id, frame_id, session_key, ordinal,"
                " membership_reason, joined_at) VALUES (?, ?, ?, ?, 'rollover', ?)",
                (new_request_id(), frame_id, key, ordinals[frame_id], now))
    engine.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    engine.conn.execute("ANALYZE")
    shape = {table: engine.conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
             for table in ("user_views", "frames", "provider_sessions", "frame_sessions",
                           "view_transitions", "control_turns", "request_records")}
    shape["completed_tasks"] = len(completed)
    shape["closed_tasks"] = len(closed)
    shape["first_view"] = next(iter(routes.values())).view_id
    shape["closed_ids"] = [f for f, _v in closed]
    shape["focus_pair"] = tasks[-1]
    return engine, shape


def timed(call: Callable[[], object], rounds: int) -> list[float]:
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        call()
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def summary(samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
    return (f"median {statistics.median(samples):7.2f} ms  p95 {p95:7.2f} ms  "
            f"max {max(samples):7.2f} ms  (n={len(samples)})")


def host_state_figures(engine: Engine, rounds: int) -> tuple[str, list[float]]:
    try:
        from core.state.state_builder import build_host_state, build_navigator_state
    except ModuleNotFoundError:
        from core.state.queries import list_frames, list_views

        print("   core.state.state_builder is missing: timing list_frames + list_views instead")
        return "list_frames+list_views", timed(
            lambda: (list_frames(engine.conn), list_views(engine.conn)), rounds)

    timed(lambda: build_host_state(engine), 3)  # warm the page cache
    samples = timed(lambda: build_host_state(engine), rounds)
    try:
        from core.state.envelope import encode_canonical

        state = build_host_state(engine)
        encoded = encode_canonical(state)
        print(f"   encode HostState ({len(encoded) / 1024:.0f} KiB canonical JSON): "
              f"{summary(timed(lambda: encode_canonical(state), max(3, rounds // 4)))}")
    except Exception as exc:  # informational only
        print(f"   encode HostState: not measured ({exc!r})")
    print(f"   build_navigator_state: "
          f"{summary(timed(lambda: build_navigator_state(engine), max(3, rounds // 4)))}")
    return "build_host_state", samples


def named_op_figures(engine: Engine, shape: dict, rounds: int) -> list[float]:
    view_id = shape["first_view"]
    modes = [ViewMode.DIRECT, ViewMode.NAVIGATOR]
    counter = iter(range(10**9))

    def toggle() -> None:
        engine.clock.advance(1)  # type: ignore[attr-defined]
        engine.view_mode(new_request_id(), view_id, modes[next(counter) % 2])

    timed(toggle, 5)
    samples = timed(toggle, rounds)

    closed = iter(shape["closed_ids"])
    reopen = timed(lambda: engine.frame_reopen(new_request_id(), next(closed)),
                   len(shape["closed_ids"]))
    print(f"   frame_reopen: {summary(reopen)}")
    frame_id, focus_view = shape["focus_pair"]
    workspace = engine.conn.execute("SELECT parent_frame_id FROM frames WHERE frame_id = ?",
                                    (frame_id,)).fetchone()[0]
    targets = iter([frame_id, workspace] * rounds)
    focus = timed(lambda: engine.view_focus(new_request_id(), focus_view, next(targets)),
                  max(10, rounds // 4))
    print(f"   view_focus (3 transactions, no tmux): {summary(focus)}")
    return samples


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench_registry", description=__doc__.splitlines()[0])
    parser.add_argument("--views", type=int, default=50)
    parser.add_argument("--frames", type=int, default=1000)
    parser.add_argument("--sessions", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--keep", action="store_true", help="keep the temporary home")
    args = parser.parse_args(argv)

    root = Path(tempfile.mkdtemp(prefix="sb-bench-registry-"))
    try:
        started = time.perf_counter()
        engine, shape = populate(root, args.views, args.frames, args.sessions)
        size = sum(p.stat().st_size for p in (root / "home" / "state").rglob("*") if p.is_file())
        print(f"registry: {shape['user_views']} views, {shape['frames']} frames "
              f"({shape['completed_tasks']} completed, {shape['closed_tasks']} closed), "
              f"{shape['provider_sessions']} provider sessions, {shape['frame_sessions']} "
              f"memberships, {shape['view_transitions']} transitions, "
              f"{shape['request_records']} requests; {size / 1e6:.1f} MB; built in "
              f"{time.perf_counter() - started:.1f} s")

        what, host = host_state_figures(engine, max(10, args.rounds // 10))
        host_median = statistics.median(host)
        print(f"host state ({what}): {summary(host)}  target <= {TARGET_HOST_STATE_MS:.0f} ms"
              f"  {'OK' if host_median <= TARGET_HOST_STATE_MS else 'OVER TARGET'}")

        ops = named_op_figures(engine, shape, args.rounds)
        op_median = statistics.median(ops)
        print(f"named op commit (view_mode): {summary(ops)}  target <= "
              f"{TARGET_NAMED_OP_MS:.0f} ms  "
              f"{'OK' if op_median <= TARGET_NAMED_OP_MS else 'OVER TARGET'}")
        engine.conn.close()
        within = host_median <= TARGET_HOST_STATE_MS and op_median <= TARGET_NAMED_OP_MS
        return 0 if within else 1
    finally:
        if args.keep:
            print(f"kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
