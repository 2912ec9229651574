"""Turn-end work handed to the home's server (issue 38): the hook's spool, the drain.

In-process: the test holds the server's lock and runs the drain's looks itself
(``TurnEndDrain.tick`` without a pool runs each item at once), so every step is
deterministic. ``tests/integration/test_server_turn_end.py`` runs the real server.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import core.model.spawn
from core.config.home import Home
from core.hooks import stop_worker
from core.hooks.usage_handoff import WORKER_MODULE, after_turn
from core.model import turn_end
from core.providers.agent_http import server_dir
from core.server.main import _take_lock
from core.server.turn_end import ATTENTION_STALE_S, TurnEndDrain
from storage import session_db
from storage.session_usage import turn_usage
from tests.core.test_usage import claude_line


@pytest.fixture
def home(tmp_path: Path) -> Home:
    return Home(tmp_path, tmp_path / "config.toml")


@pytest.fixture
def spawned(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """Every process the hook side starts (none is started for real)."""
    started: list[list[str]] = []
    monkeypatch.setattr(core.model.spawn, "spawn_detached",
                        lambda argv, env=None, log_path=None: started.append(list(argv)) or 1)
    monkeypatch.delenv(turn_end.ENV_MODE, raising=False)
    return started


@pytest.fixture
def server(home: Home) -> Iterator[TurnEndDrain]:
    """A stand-in for the running server: its lock held, its drain looked once."""
    lock = _take_lock(server_dir(home.run_dir))
    assert lock is not None
    lines: list[str] = []
    drain = TurnEndDrain(home, lines.append)
    drain.tick()
    try:
        yield drain
    finally:
        os.close(lock)


def _transcript(tmp_path: Path) -> Path:
    path = tmp_path / "t.jsonl"
    path.write_text(claude_line("m1", "claude-sonnet-4-5", 100, 20)
                    + claude_line("m2", "claude-sonnet-4-5", 10, 5))
    return path


def _usage(home: Home, key: str) -> list[tuple[str | None, int, int]]:
    conn = session_db.open_session_db(session_db.session_db_path(home.root, key))
    try:
        return [(row.turn_id, row.input_tokens, row.output_tokens)
                for row in turn_usage(conn, key)]
    finally:
        conn.close()


def _usage_item(source: Path | str) -> str:
    return turn_end.item_name(turn_end.USAGE, turn_end.path_key("k", str(source)))


def _spool(home: Home) -> list[str]:
    return sorted(n for n in os.listdir(turn_end.spool_dir(home.run_dir))
                  if not n.startswith("."))


def test_without_a_server_the_hook_starts_the_worker(home: Home, tmp_path: Path,
                                                     spawned: list[list[str]]) -> None:
    source = {"transcript_path": str(_transcript(tmp_path))}
    assert after_turn(home, "claude", "Stop", source, "k", "p1")
    assert spawned and spawned[0][:3] == [sys.executable, "-m", WORKER_MODULE]
    assert stop_worker.hand_over(home, "gen", "frame-1") == "a worker"
    assert spawned[-1][:3] == [sys.executable, "-m", "core.hooks.stop_worker"]
    assert not turn_end.spool_dir(home.run_dir).exists()


def test_a_server_whose_drain_stopped_beating_gets_no_work(home: Home, tmp_path: Path,
                                                           server: TurnEndDrain,
                                                           spawned: list[list[str]]) -> None:
    """A wedged server (its lock held, its drain silent) is not trusted with work."""
    beat = turn_end.spool_dir(home.run_dir) / turn_end.BEAT_NAME
    old = time.time() - turn_end.ALIVE_S - 5
    os.utime(beat, (old, old))
    assert after_turn(home, "claude", "Stop", {"transcript_path": str(_transcript(tmp_path))},
                      "k", "p1")
    assert len(spawned) == 1 and _spool(home) == []


def test_stops_of_one_session_are_one_read_done_by_the_server(
        home: Home, tmp_path: Path, server: TurnEndDrain, spawned: list[list[str]]) -> None:
    source = {"transcript_path": str(_transcript(tmp_path))}
    assert after_turn(home, "claude", "Stop", source, "k", "p1")
    assert after_turn(home, "claude", "Stop", source, "k", "p1")  # a burst: coalesced
    assert spawned == []  # no process at all
    name = _usage_item(source["transcript_path"])
    assert _spool(home) == [name]
    folder = turn_end.spool_dir(home.run_dir)
    assert os.stat(folder / name).st_mode & 0o777 == 0o600
    assert server.tick() == 1
    server.tick()  # reaps it: done, removed
    assert _spool(home) == [] and server.done == 1
    assert _usage(home, "k") == [("p1", 110, 25)]
    # the same turn end again (Codex ends a turn twice): nothing counted twice
    assert after_turn(home, "claude", "Stop", source, "k", "p1")
    server.tick()
    server.tick()
    assert _spool(home) == [] and _usage(home, "k") == [("p1", 110, 25)]


def test_a_claimed_item_left_by_a_killed_server_is_done_first(
        home: Home, tmp_path: Path, server: TurnEndDrain, spawned: list[list[str]]) -> None:
    source = {"transcript_path": str(_transcript(tmp_path))}
    assert after_turn(home, "claude", "Stop", source, "k", "p1")
    folder = turn_end.spool_dir(home.run_dir)
    name = _usage_item(source["transcript_path"])
    os.replace(folder / name, folder / f"{name}.taken")  # claimed, then killed
    fresh = TurnEndDrain(home, lambda line: None)
    assert fresh.tick() == 1
    fresh.tick()
    assert _spool(home) == [] and _usage(home, "k") == [("p1", 110, 25)]


def test_an_item_not_private_or_not_an_item_is_removed_unrun(
        home: Home, server: TurnEndDrain, monkeypatch: pytest.MonkeyPatch) -> None:
    lines: list[str] = []
    monkeypatch.setattr(server, "log", lines.append)
    folder = turn_end.spool_dir(home.run_dir)
    item = json.dumps({"kind": "kick", "args": ["f"], "at": time.time()})
    (folder / "kick.f").write_text(item)
    os.chmod(folder / "kick.f", 0o644)
    (folder / "stop.x").write_text(item)  # named for another kind
    os.chmod(folder / "stop.x", 0o600)
    (folder / "usage.y").write_text("not json")
    os.chmod(folder / "usage.y", 0o600)
    ran: list[str] = []
    monkeypatch.setattr(server, "_kick", ran.append)
    assert server.tick() == 0
    assert _spool(home) == [] and ran == []
    assert sorted(line.split(":")[0] for line in lines) == [
        "turn-end item kick.f removed", "turn-end item stop.x removed",
        "turn-end item usage.y removed"]
    assert "not a private file" in " ".join(lines)


def test_a_nudge_is_sent_at_most_once_and_never_late(
        home: Home, server: TurnEndDrain, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = turn_end.spool_dir(home.run_dir)
    sent: list[tuple[str, str]] = []

    def publish(frame_id: str, event: str) -> None:
        # removed before it runs: a server killed now would not send it again
        assert not (folder / "attention.f1.taken").exists()
        sent.append((frame_id, event))

    monkeypatch.setattr(server, "_attention", publish)
    assert turn_end.hand_off(home.run_dir, turn_end.ATTENTION, "f1", ["f1", "turn_finished"])
    server.tick()
    assert sent == [("f1", "turn_finished")]
    assert turn_end.hand_off(home.run_dir, turn_end.ATTENTION, "f1", ["f1", "needs_input"])
    old = time.time() - ATTENTION_STALE_S - 1
    data = json.loads((folder / "attention.f1").read_text())
    (folder / "attention.f1").write_text(json.dumps({**data, "at": old}))
    server.tick()
    server.tick()
    assert sent == [("f1", "turn_finished")] and _spool(home) == []


def test_a_settling_read_waits_for_its_turns_lines(
        home: Home, tmp_path: Path, server: TurnEndDrain, spawned: list[list[str]]) -> None:
    """The CLI may append the turn's lines just after its Stop: the server looks again
    (no thread held while waiting) until they are read."""
    path = tmp_path / "t.jsonl"
    path.write_text("")
    assert after_turn(home, "claude", "Stop", {"transcript_path": str(path)}, "k", "p1")
    server.tick()
    server.tick()
    assert _spool(home) == [f"{_usage_item(path)}.taken"]  # still settling, still on disk
    path.write_text(claude_line("m1", "claude-sonnet-4-5", 7, 3))
    time.sleep(0.3)
    server.tick()
    server.tick()
    assert _spool(home) == [] and _usage(home, "k") == [("p1", 7, 3)]


def test_the_worker_mode_knob_keeps_the_workers(home: Home, tmp_path: Path,
                                                server: TurnEndDrain, spawned: list[list[str]],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(turn_end.ENV_MODE, turn_end.WORKER_MODE)
    assert after_turn(home, "claude", "Stop", {"transcript_path": str(_transcript(tmp_path))},
                      "k", "p1")
    assert len(spawned) == 1 and _spool(home) == []


def test_reads_of_one_session_from_two_files_are_two_items(
        home: Home, tmp_path: Path, server: TurnEndDrain, spawned: list[list[str]]) -> None:
    """Coalescing merges the same work only: a second file of the session (Codex's first
    prompt names its rollout, a Stop another) is read too."""
    first = _transcript(tmp_path)
    second = tmp_path / "other.jsonl"
    second.write_text(claude_line("m9", "claude-sonnet-4-5", 1, 1))
    assert after_turn(home, "claude", "Stop", {"transcript_path": str(first)}, "k", "p1")
    assert after_turn(home, "claude", "Stop", {"transcript_path": str(second)}, "k", "p1")
    assert _spool(home) == sorted([_usage_item(first), _usage_item(second)])
    assert server.tick() == 2
    server.tick()
    assert _spool(home) == [] and sorted(_usage(home, "k")) == [("p1", 1, 1), ("p1", 110, 25)]


def test_a_limit_whose_registry_write_failed_is_written_at_the_next_look(
        home: Home, tmp_path: Path, server: TurnEndDrain, spawned: list[list[str]],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Codex states a usage limit only in its rollout: the read stores the rows, then
    marks the session limited; a busy registry there must not lose the limit (the rows
    are already read, so reading again finds nothing)."""
    import sqlite3

    from tests.core.test_usage import codex_context, codex_count

    rollout = tmp_path / "rollout.jsonl"
    rollout.write_text(codex_context("gpt-5") + codex_count(100, 0, 5) + json.dumps(
        {"type": "event_msg", "payload": {"type": "task_complete", "error": {
            "message": "You've hit your usage limit. Try again in 3 minutes.",
            "codex_error_info": "usage_limit_exceeded"}}}) + "\n")
    marked: list[str | None] = []

    def mark(_home: Home, _key: str, row, _now: int) -> bool:
        marked.append(row.limit_kind)
        if len(marked) == 1:
            raise sqlite3.OperationalError("database is locked")
        return True

    monkeypatch.setattr("core.usage.worker.mark_limited", mark)
    assert after_turn(home, "codex", "Stop", {"transcript_path": str(rollout)}, "k", "t1")
    server.tick()
    server.tick()
    assert len(marked) == 1 and _spool(home)  # kept, to be marked again
    time.sleep(0.3)
    server.tick()
    server.tick()
    assert len(marked) == 2 and marked[0] == marked[1] is not None and _spool(home) == []
