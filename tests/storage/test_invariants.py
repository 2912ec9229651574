"""Every "one X per Y" of the contract is a database constraint, so racers cannot both win.

Each uniqueness is exercised three ways on a real registry file: a second row
in one connection, two threads with separate connections released together by
a barrier, and (for the whole project route) two processes. Exactly one writer
wins; the other receives the domain error named for the invariant. Partial
indexes are also checked to free again once the first row leaves the counted
state, so they are neither too loose nor too strict.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from core.config.home import Home
from core.config.registry import open_current
from core.engine.engine import Engine
from core.model.errors import Conflict, InvariantViolation, SwitchboardError
from core.model.ports import FixedClock, SequentialIds
from storage.connection import connect, write_transaction
from tests.factories import make_engine
from tests.storage import registry_rows as rows

Ctx = dict[str, str]


@dataclass(frozen=True)
class Uniqueness:
    """One invariant: rows the racers need, the contending write, and how to count."""

    name: str
    contender: Callable[[sqlite3.Connection, int, Ctx], None]
    count_sql: str
    setup: Callable[[sqlite3.Connection, Ctx], None] = lambda conn, ctx: None
    # Moves the winner out of the counted state, after which a new row is allowed.
    release: Callable[[sqlite3.Connection, Ctx], None] | None = None


def _ids(ctx: Ctx, *names: str) -> None:
    for name in names:
        ctx[name] = rows.new_id()


def _setup_two_tasks(conn: sqlite3.Connection, ctx: Ctx) -> None:
    _ids(ctx, "frame0", "frame1")
    rows.insert_frame(conn, ctx["frame0"])
    rows.insert_frame(conn, ctx["frame1"])


def _setup_surfaces(conn: sqlite3.Connection, ctx: Ctx, session: str | None) -> None:
    for i in (0, 1):
        _ids(ctx, f"launch{i}", f"surface{i}")
        rows.insert_launch(conn, ctx[f"launch{i}"])
        rows.insert_surface(conn, ctx[f"surface{i}"], launch_id=ctx[f"launch{i}"],
                            session_key=session)


def _setup_held_race(conn: sqlite3.Connection, ctx: Ctx) -> None:
    """Two projects on one checkout, each with a released context and a workspace."""
    _ids(ctx, "context3", "workspace3")
    rows.insert_context(conn, ctx["context3"], project_id=rows.PROJECT_3)
    rows.insert_workspace(conn, ctx["workspace3"], context_id=ctx["context3"],
                          project_id=rows.PROJECT_3)
    ctx["contexts"] = json.dumps([[rows.CONTEXT, rows.WORKSPACE],
                                  [ctx["context3"], ctx["workspace3"]]])


def _acquire(conn: sqlite3.Connection, i: int, ctx: Ctx) -> None:
    context_id, frame_id = json.loads(ctx["contexts"])[i]
    ctx[f"won_context{i}"] = context_id
    conn.execute("UPDATE work_contexts SET claim_state = 'held', foreground_frame_id = ?,"
                 " claim_generation = claim_generation + 1 WHERE work_context_id = ?"
                 " AND claim_state = 'released'", (frame_id, context_id))


def _release_held(conn: sqlite3.Connection, ctx: Ctx) -> None:
    conn.execute("UPDATE work_contexts SET claim_state = 'released', foreground_frame_id = NULL,"
                 " claim_generation = claim_generation + 1 WHERE claim_state = 'held'")


def _setup_transition(kind: str) -> Callable[[sqlite3.Connection, Ctx], None]:
    def setup(conn: sqlite3.Connection, ctx: Ctx) -> None:
        _ids(ctx, "transition")
        rows.insert_transition(conn, ctx["transition"], kind=kind)
    return setup


def _setup_owning(conn: sqlite3.Connection, ctx: Ctx) -> None:
    _ids(ctx, "view1")
    rows.insert_view(conn, ctx["view1"])
    ctx["view0"] = rows.VIEW


def _setup_surface_placements(conn: sqlite3.Connection, ctx: Ctx) -> None:
    _setup_two_tasks(conn, ctx)
    _ids(ctx, "launch", "surface")
    rows.insert_launch(conn, ctx["launch"])
    rows.insert_surface(conn, ctx["surface"], launch_id=ctx["launch"])


def _setup_two_sessions(conn: sqlite3.Connection, ctx: Ctx) -> None:
    _ids(ctx, "frame", "psid0", "psid1")
    rows.insert_frame(conn, ctx["frame"])
    ctx["session0"] = rows.insert_session(conn, ctx["psid0"])
    ctx["session1"] = rows.insert_session(conn, ctx["psid1"])


def _workspace_contender(conn: sqlite3.Connection) -> None:
    context_id = rows.new_id()
    rows.insert_context(conn, context_id, project_id=rows.PROJECT_3)
    rows.insert_workspace(conn, rows.new_id(), context_id=context_id, project_id=rows.PROJECT_3)


def _setup_request(conn: sqlite3.Connection, ctx: Ctx) -> None:
    _ids(ctx, "request")


CASES: list[Uniqueness] = [
    Uniqueness(
        "one_workspace_per_project",
        lambda conn, i, ctx: _workspace_contender(conn),
        f"SELECT COUNT(*) FROM frames WHERE project_id = '{rows.PROJECT_3}'"
        " AND role = 'workspace'"),
    Uniqueness(
        "one_frame_per_session",
        lambda conn, i, ctx: rows.insert_membership(conn, ctx[f"frame{i}"], rows.SESSION, 1),
        f"SELECT COUNT(*) FROM frame_sessions WHERE session_key = '{rows.SESSION}'",
        setup=_setup_two_tasks),
    Uniqueness(
        "one_membership_per_ordinal",
        lambda conn, i, ctx: rows.insert_membership(conn, ctx["frame"], ctx[f"session{i}"], 1),
        "SELECT COUNT(*) FROM frame_sessions WHERE ordinal = 1",
        setup=_setup_two_sessions),
    Uniqueness(
        "one_held_context_per_checkout", _acquire,
        f"SELECT COUNT(*) FROM work_contexts WHERE checkout_id = '{rows.CHECKOUT}'"
        " AND claim_state = 'held'",
        setup=_setup_held_race, release=_release_held),
    Uniqueness(
        "one_live_surface_per_session",
        lambda conn, i, ctx: rows.make_live(conn, ctx[f"surface{i}"], f"%{10 + i}"),
        f"SELECT COUNT(*) FROM surfaces WHERE session_key = '{rows.SESSION}'"
        " AND lifecycle_state = 'live'",
        setup=lambda conn, ctx: _setup_surfaces(conn, ctx, rows.SESSION),
        release=lambda conn, ctx: conn.execute(
            "UPDATE surfaces SET lifecycle_state = 'dead' WHERE lifecycle_state = 'live'")),
    Uniqueness(
        "one_live_surface_per_pane",
        lambda conn, i, ctx: rows.make_live(conn, ctx[f"surface{i}"], "%9"),
        "SELECT COUNT(*) FROM surfaces WHERE pane_id = '%9' AND lifecycle_state = 'live'",
        setup=lambda conn, ctx: _setup_surfaces(conn, ctx, None)),
    Uniqueness(
        "one_pending_launch_per_session",
        lambda conn, i, ctx: rows.insert_launch(conn, rows.new_id(), session_key=rows.SESSION),
        f"SELECT COUNT(*) FROM launch_intents WHERE session_key = '{rows.SESSION}'"
        " AND state IN ('planned', 'authorized', 'started')",
        release=lambda conn, ctx: conn.execute(
            "UPDATE launch_intents SET state = 'failed' WHERE state = 'planned'")),
    Uniqueness(
        "one_nonterminal_transition_per_view",
        lambda conn, i, ctx: rows.insert_transition(conn, rows.new_id()),
        f"SELECT COUNT(*) FROM view_transitions WHERE view_id = '{rows.VIEW}'"
        " AND state NOT IN ('completed', 'cancelled', 'superseded', 'failed')",
        release=lambda conn, ctx: conn.execute(
            "UPDATE view_transitions SET state = 'cancelled' WHERE state = 'prepared'")),
    Uniqueness(
        "one_active_placement_per_view",
        lambda conn, i, ctx: rows.insert_placement(conn, rows.new_id(), frame_id=ctx[f"frame{i}"],
                                                   state="active"),
        f"SELECT COUNT(*) FROM frame_placements WHERE view_id = '{rows.VIEW}'"
        " AND state = 'active'",
        setup=_setup_two_tasks,
        release=lambda conn, ctx: conn.execute(
            "UPDATE frame_placements SET state = 'parked', generation = generation + 1"
            " WHERE state = 'active'")),
    Uniqueness(
        "one_owning_placement_per_frame",
        lambda conn, i, ctx: rows.insert_placement(conn, rows.new_id(), frame_id=rows.WORKSPACE,
                                                   view_id=ctx[f"view{i}"],
                                                   state="stopped_affinity"),
        f"SELECT COUNT(*) FROM frame_placements WHERE frame_id = '{rows.WORKSPACE}'"
        " AND state <> 'orphaned'",
        setup=_setup_owning,
        release=lambda conn, ctx: conn.execute(
            "UPDATE frame_placements SET state = 'orphaned', generation = generation + 1")),
    Uniqueness(
        "one_placement_per_surface",
        lambda conn, i, ctx: rows.insert_placement(conn, rows.new_id(), frame_id=ctx[f"frame{i}"],
                                                   state="parked", surface_id=ctx["surface"]),
        "SELECT COUNT(*) FROM frame_placements WHERE surface_id IS NOT NULL"
        " AND state <> 'orphaned'",
        setup=_setup_surface_placements),
    Uniqueness(
        "one_brief_per_push",
        lambda conn, i, ctx: rows.insert_brief(conn, rows.new_id(),
                                               transition_id=ctx["transition"]),
        "SELECT COUNT(*) FROM transition_briefs", setup=_setup_transition("push")),
    Uniqueness(
        "one_handoff_per_completion",
        lambda conn, i, ctx: rows.insert_handoff(conn, rows.new_id(),
                                                 transition_id=ctx["transition"]),
        "SELECT COUNT(*) FROM completion_handoffs",
        setup=_setup_transition("complete_return")),
    Uniqueness(
        "one_control_turn_per_transition",
        lambda conn, i, ctx: rows.insert_control_turn(conn, rows.new_id(),
                                                      transition_id=ctx["transition"]),
        "SELECT COUNT(*) FROM control_turns", setup=_setup_transition("complete_return")),
    Uniqueness(
        "one_active_lease_per_view",
        lambda conn, i, ctx: rows.insert_lease(conn, rows.new_id()),
        "SELECT COUNT(*) FROM desktop_attachment_leases WHERE state = 'offered'",
        release=lambda conn, ctx: conn.execute(
            "UPDATE desktop_attachment_leases SET state = 'expired'")),
    Uniqueness(
        "one_fingerprint_per_request",
        lambda conn, i, ctx: rows.insert_request(conn, ctx["request"], fingerprint=f"fp-{i}"),
        "SELECT COUNT(*) FROM request_records", setup=_setup_request),
    Uniqueness(
        "one_live_view_per_project",
        lambda conn, i, ctx: rows.insert_view(conn, rows.new_id(), project_id=rows.PROJECT),
        f"SELECT COUNT(*) FROM user_views WHERE project_id = '{rows.PROJECT}'"
        " AND state <> 'retired'",
        release=lambda conn, ctx: conn.execute(
            "UPDATE user_views SET state = 'retired', revision = revision + 1"
            f" WHERE project_id = '{rows.PROJECT}'")),
    Uniqueness(
        "one_open_recovery_per_subject",
        lambda conn, i, ctx: rows.insert_recovery(conn, rows.new_id(), subject_id="view-1"),
        "SELECT COUNT(*) FROM recoveries WHERE subject_id = 'view-1' AND state = 'open'",
        release=lambda conn, ctx: conn.execute(
            "UPDATE recoveries SET state = 'resolved'")),
]
BY_NAME = {case.name: case for case in CASES}


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return rows.build_template(tmp_path_factory.mktemp("invariants-template"))


@pytest.fixture
def registry(template: Path, tmp_path: Path) -> Path:
    return rows.fresh_copy(template, tmp_path)


def _prepare(path: Path, case: Uniqueness) -> Ctx:
    ctx: Ctx = {}
    conn = connect(path)
    try:
        with write_transaction(conn):
            case.setup(conn, ctx)
    finally:
        conn.close()
    return ctx


def _count(path: Path, case: Uniqueness) -> int:
    conn = connect(path)
    try:
        return conn.execute(case.count_sql).fetchone()[0]
    finally:
        conn.close()


def test_every_contract_uniqueness_is_covered() -> None:
    """The contract's list under "Storage constraints and CAS enforce", by name."""
    contract = {
        "one_workspace_per_project", "one_frame_per_session", "one_held_context_per_checkout",
        "one_live_surface_per_session", "one_pending_launch_per_session",
        "one_nonterminal_transition_per_view", "one_active_placement_per_view",
        "one_owning_placement_per_frame", "one_brief_per_push", "one_handoff_per_completion",
        "one_control_turn_per_transition", "one_active_lease_per_view",
        "one_fingerprint_per_request",
    }
    assert contract <= set(BY_NAME)


@pytest.mark.parametrize("name", sorted(BY_NAME))
def test_second_row_is_refused(registry: Path, name: str) -> None:
    case = BY_NAME[name]
    ctx = _prepare(registry, case)
    conn = connect(registry)
    with write_transaction(conn):
        case.contender(conn, 0, ctx)
    conn.execute("BEGIN")
    with pytest.raises(sqlite3.IntegrityError, match="^UNIQUE constraint failed"):
        case.contender(conn, 1, ctx)
    conn.execute("ROLLBACK")
    with pytest.raises(InvariantViolation) as refused, write_transaction(conn):
        case.contender(conn, 1, ctx)
    assert refused.value.code == name
    conn.close()
    assert _count(registry, case) == 1


@pytest.mark.parametrize("name", sorted(BY_NAME))
def test_two_threads_race_and_exactly_one_wins(registry: Path, name: str) -> None:
    case = BY_NAME[name]
    ctx = _prepare(registry, case)
    barrier = threading.Barrier(2)
    outcomes: list[object] = [None, None]

    def racer(i: int) -> None:
        conn = connect(registry)  # a separate connection per racer
        try:
            barrier.wait(timeout=10)
            with write_transaction(conn):
                case.contender(conn, i, dict(ctx))
            outcomes[i] = "won"
        except SwitchboardError as exc:
            outcomes[i] = exc
        finally:
            conn.close()

    threads = [threading.Thread(target=racer, args=(i,)) for i in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert outcomes.count("won") == 1, outcomes
    loser = next(o for o in outcomes if o != "won")
    assert isinstance(loser, InvariantViolation), loser
    assert loser.code == name
    assert _count(registry, case) == 1


@pytest.mark.parametrize("name", sorted(c.name for c in CASES if c.release is not None))
def test_partial_index_frees_when_the_winner_leaves(registry: Path, name: str) -> None:
    case = BY_NAME[name]
    ctx = _prepare(registry, case)
    conn = connect(registry)
    with write_transaction(conn):
        case.contender(conn, 0, ctx)
    with write_transaction(conn):
        assert case.release is not None
        case.release(conn, ctx)
    assert _count(registry, case) == 0
    with write_transaction(conn):
        case.contender(conn, 1, ctx)
    conn.close()
    assert _count(registry, case) == 1


# --------------------------------------------------------------------------- foreground


def test_held_context_needs_an_open_member_foreground(registry: Path) -> None:
    """One foreground frame per held context, and it is an open member of it."""
    conn = connect(registry)
    other_context, stranger = rows.new_id(), rows.new_id()
    with write_transaction(conn):
        rows.insert_context(conn, other_context, project_id=rows.PROJECT_2,
                            checkout_id=rows.CHECKOUT_2)
        rows.insert_workspace(conn, stranger, context_id=other_context,
                              project_id=rows.PROJECT_2)
    with pytest.raises(InvariantViolation) as refused, write_transaction(conn):
        conn.execute("UPDATE work_contexts SET claim_state = 'held',"
                     " claim_generation = claim_generation + 1 WHERE work_context_id = ?",
                     (rows.CONTEXT,))
    assert refused.value.code == "held_context_has_foreground"
    with pytest.raises(InvariantViolation) as refused, write_transaction(conn):
        conn.execute("UPDATE work_contexts SET claim_state = 'held', foreground_frame_id = ?,"
                     " claim_generation = claim_generation + 1 WHERE work_context_id = ?",
                     (stranger, rows.CONTEXT))
    assert refused.value.code == "foreground_is_open_member"
    closed = rows.new_id()
    with write_transaction(conn):
        rows.insert_frame(conn, closed)
        conn.execute("UPDATE frames SET lifecycle_state = 'closing', close_reason = 'dismissed'"
                     " WHERE frame_id = ?", (closed,))
    with pytest.raises(InvariantViolation) as refused, write_transaction(conn):
        conn.execute("UPDATE work_contexts SET claim_state = 'held', foreground_frame_id = ?,"
                     " claim_generation = claim_generation + 1 WHERE work_context_id = ?",
                     (closed, rows.CONTEXT))
    assert refused.value.code == "foreground_is_open_member"
    conn.close()


# --------------------------------------------------------------------------- engine races


def _home(root: Path) -> Home:
    return Home(root=root, config_path=root / "config.toml")


def _second_engine(root: Path, prefix: str) -> Engine:
    opened = open_current(_home(root))
    return Engine(conn=opened.conn, config=opened.config, clock=FixedClock(),
                  ids=SequentialIds(prefix=prefix))


def _race(calls: list[Callable[[], object]]) -> list[object]:
    barrier = threading.Barrier(len(calls))
    outcomes: list[object] = [None] * len(calls)

    def run(i: int) -> None:
        try:
            barrier.wait(timeout=10)
            outcomes[i] = calls[i]()
        except SwitchboardError as exc:
            outcomes[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    return outcomes


@pytest.fixture
def two_engines(tmp_path: Path) -> Iterator[tuple[Engine, Engine]]:
    first = make_engine(tmp_path)
    second = _second_engine(tmp_path, "00000000-0000-4000-9000-")
    yield first, second
    first.conn.close()
    second.conn.close()


def test_threads_entering_one_project_converge(two_engines: tuple[Engine, Engine]) -> None:
    first, second = two_engines
    outcomes = _race([lambda: first.project_enter("10000000-0000-4000-8000-000000000001",
                                                  "alpha"),
                      lambda: second.project_enter("10000000-0000-4000-8000-000000000002",
                                                   "alpha")])
    assert not any(isinstance(o, Exception) for o in outcomes), outcomes
    assert outcomes[0].view_id == outcomes[1].view_id
    assert outcomes[0].frame_id == outcomes[1].frame_id
    conn = first.conn
    assert conn.execute("SELECT COUNT(*) FROM frames WHERE role = 'workspace'").fetchone()[0] == 1
    assert conn.execute("SELECT COUNT(*) FROM user_views").fetchone()[0] == 1
    assert conn.execute("SELECT COUNT(*) FROM work_contexts").fetchone()[0] == 1
    assert conn.execute("SELECT COUNT(*) FROM frame_placements").fetchone()[0] == 1


def test_threads_starting_one_frame_start_one_runtime(
        two_engines: tuple[Engine, Engine]) -> None:
    first, second = two_engines
    route = first.project_enter("10000000-0000-4000-8000-000000000001", "alpha")
    outcomes = _race([
        lambda: first.frame_start("10000000-0000-4000-8000-000000000002", route.frame_id),
        lambda: second.frame_start("10000000-0000-4000-8000-000000000003", route.frame_id)])
    winners = [o for o in outcomes if not isinstance(o, Exception)]
    losers = [o for o in outcomes if isinstance(o, Exception)]
    assert len(winners) == 1 and len(losers) == 1, outcomes
    assert isinstance(losers[0], Conflict)
    conn = first.conn
    for table in ("provider_sessions", "frame_sessions", "launch_intents", "surfaces"):
        assert conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0] == 1, table
    context = conn.execute("SELECT claim_state, claim_generation FROM work_contexts").fetchone()
    assert tuple(context) == ("held", 1)


def test_threads_pushing_from_one_view_make_one_transition(
        two_engines: tuple[Engine, Engine]) -> None:
    first, second = two_engines
    route = first.project_enter("10000000-0000-4000-8000-000000000001", "alpha")
    outcomes = _race([
        lambda: first.frame_push("10000000-0000-4000-8000-000000000002", route.frame_id,
                                 "first", "brief one"),
        lambda: second.frame_push("10000000-0000-4000-8000-000000000003", route.frame_id,
                                  "second", "brief two")])
    losers = [o for o in outcomes if isinstance(o, Exception)]
    assert len(losers) == 1, outcomes
    assert isinstance(losers[0], InvariantViolation)
    assert losers[0].code == "one_nonterminal_transition_per_view"
    conn = first.conn
    # the loser's child frame, placement and brief were rolled back with it
    assert conn.execute("SELECT COUNT(*) FROM frames WHERE role = 'task'").fetchone()[0] == 1
    assert conn.execute("SELECT COUNT(*) FROM view_transitions").fetchone()[0] == 1
    assert conn.execute("SELECT COUNT(*) FROM transition_briefs").fetchone()[0] == 1
    assert conn.execute("SELECT COUNT(*) FROM request_records").fetchone()[0] == 2


# --------------------------------------------------------------------------- processes


def _enter_in_process(root: str, request_id: str, barrier, results) -> None:
    """Runs in a separate process: open the registry like a front end and enter."""
    from core.engine.open import open_engine

    try:
        engine = open_engine(_home(Path(root)))
        barrier.wait(timeout=30)
        route = engine.project_enter(request_id, "alpha")
        results.put(("ok", route.view_id, route.frame_id))
    except Exception as exc:  # reported to the parent, which fails the test
        results.put(("error", type(exc).__name__, str(exc)))


def _assert_one_route(conn: sqlite3.Connection) -> None:
    assert conn.execute("SELECT COUNT(*) FROM frames WHERE role = 'workspace'").fetchone()[0] == 1
    assert conn.execute("SELECT COUNT(*) FROM user_views").fetchone()[0] == 1
    assert conn.execute("SELECT COUNT(*) FROM frame_placements").fetchone()[0] == 1
    assert conn.execute("SELECT COUNT(*) FROM request_records").fetchone()[0] == 2


def test_two_processes_entering_one_project_converge(tmp_path: Path) -> None:
    make_engine(tmp_path).conn.close()
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(2)
    results = context.Queue()
    processes = [
        context.Process(target=_enter_in_process,
                        args=(str(tmp_path), f"20000000-0000-4000-8000-00000000000{i}",
                              barrier, results))
        for i in (1, 2)]
    for process in processes:
        process.start()
    outcomes = [results.get(timeout=60) for _ in processes]
    for process in processes:
        process.join(timeout=30)
        assert process.exitcode == 0
    assert all(o[0] == "ok" for o in outcomes), outcomes
    assert outcomes[0][1:] == outcomes[1][1:]
    opened = open_current(_home(tmp_path), readonly=True)
    _assert_one_route(opened.conn)
    opened.conn.close()


def _short_home(*, start_server: bool) -> Path:
    """A home with a short path (the CLI's tmux socket lives under it), initialized."""
    if shutil.which("tmux") is None:
        pytest.fail("tmux is not installed; `make test` installs it")
    root = Path(tempfile.mkdtemp(prefix="sbrace-", dir="/tmp"))
    if start_server:
        env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}
        socket = str(root / "tmux.sock")
        subprocess.run(["tmux", "-S", socket, "-f", "/dev/null", "new-session", "-d", "-s",
                        "switchboard", "-x", "200", "-y", "50"], check=True, env=env)
        subprocess.run(["tmux", "-S", socket, "new-session", "-d", "-s", "_sb_holding"],
                       check=True, env=env)
    make_engine(root).conn.close()
    return root


def _drop_short_home(root: Path) -> None:
    subprocess.run(["tmux", "-S", str(root / "tmux.sock"), "kill-server"],
                   capture_output=True)
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def short_home() -> Iterator[Path]:
    """A short home whose private tmux server already runs (the stage's cold-start race
    is covered by test_two_cli_processes_entering_one_project_show_one_window)."""
    root = _short_home(start_server=True)
    yield root
    _drop_short_home(root)


def _cli_enter_race(home: Path) -> list[tuple[int, str, str]]:
    """`switchboard project enter alpha` twice at once, different request ids."""
    env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}
    env.update(SWITCHBOARD_HOME=str(home), SWITCHBOARD_CONFIG=str(home / "config.toml"))
    command = [sys.executable, "-m", "navigator.cli", "project", "enter", "alpha", "--json",
               "--request-id"]
    procs = [subprocess.Popen([*command, f"30000000-0000-4000-8000-00000000000{i}"], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              cwd=Path(__file__).resolve().parents[2])
             for i in (1, 2)]
    outputs = [p.communicate(timeout=60) for p in procs]
    return [(p.returncode, out, err) for p, (out, err) in zip(procs, outputs, strict=True)]


@pytest.mark.tmux
def test_two_cli_processes_entering_one_project_converge(short_home: Path) -> None:
    """The registry converges on one workspace, one view, one placement; a loser may
    only fail in the tmux stage after the registry commit (see the next test)."""
    outcomes = _cli_enter_race(short_home)
    routes = [json.loads(out) for code, out, _err in outcomes if code == 0]
    assert routes, outcomes
    for code, _out, err in outcomes:
        assert code == 0 or "switchboard: tmux_" in err, err
    assert len({(r["view_id"], r["frame_id"]) for r in routes}) == 1
    opened = open_current(_home(short_home), readonly=True)
    _assert_one_route(opened.conn)
    opened.conn.close()


@pytest.mark.tmux
def test_two_cli_processes_entering_one_project_show_one_window() -> None:
    for _attempt in range(3):
        root = _short_home(start_server=False)
        try:
            outcomes = _cli_enter_race(root)
            for code, _out, err in outcomes:
                assert code == 0, err
            view_id = json.loads(outcomes[0][1])["view_id"]
            tags = subprocess.run(["tmux", "-S", str(root / "tmux.sock"), "list-windows",
                                   "-a", "-F", "#{@sb_view}"], capture_output=True,
                                  text=True).stdout.split()
            assert tags.count(view_id) == 1, tags
        finally:
            _drop_short_home(root)
